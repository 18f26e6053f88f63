// Package metrics holds the service's Prometheus metrics: HTTP requests of
// the edge by route pattern and status, queue depth and task outcomes read
// from asynq, circuit breaker states, the outbox lag, and the task and
// webhook outcomes of a worker. The edge serves them at /metrics; a worker
// started with --metrics-addr serves its own. Package service wires them:
// the edge only calls an ingest.RequestObserver, notify an OnAttempt hook.
// Each process also says whether Postgres and Redis answer it, and the
// edge how many click batches it diverted to Postgres. The alert rules
// and the Grafana dashboard over these series are in docs/monitoring.
package metrics

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sony/gobreaker/v2"

	"github.com/partnertrack/partnertrack/ingest/traffic"
	"github.com/partnertrack/partnertrack/notify"
)

const namespace = "partnertrack"

// NewRegistry returns a registry with the Go runtime and process metrics.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Handler serves reg in the Prometheus text format. A collector that fails
// (Redis away) leaves its series out; the rest are served.
func Handler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// HTTP counts the edge's requests by method, route pattern and status, with
// latency histograms. Routes are the registered patterns
// ("/api/v1/programs/:id/webhooks"), never raw paths, so the series stay
// few.
type HTTP struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewHTTP registers the request metrics with reg.
func NewHTTP(reg prometheus.Registerer) *HTTP {
	h := &HTTP{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "http_requests_total",
			Help: "HTTP requests answered by the edge, by method, route pattern and status.",
		}, []string{"method", "route", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by method and route pattern.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"method", "route"}),
	}
	reg.MustRegister(h.requests, h.duration)
	return h
}

// ObserveRequest records one answered request.
func (h *HTTP) ObserveRequest(method, route string, status int, d time.Duration) {
	h.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	h.duration.WithLabelValues(method, route).Observe(d.Seconds())
}

// queueCollector reads queue depth and task outcomes from asynq at each
// scrape.
type queueCollector struct {
	insp      *asynq.Inspector
	queues    []string
	tasks     *prometheus.Desc
	latency   *prometheus.Desc
	paused    *prometheus.Desc
	processed *prometheus.Desc
	failed    *prometheus.Desc
}

// NewQueueCollector returns a collector of the named queues (full names):
// tasks per state, latency of the oldest pending task, whether paused,
// and the cumulative processed and failed counts asynq keeps.
func NewQueueCollector(insp *asynq.Inspector, queues []string) prometheus.Collector {
	q := []string{"queue"}
	return &queueCollector{
		insp: insp, queues: queues,
		tasks: prometheus.NewDesc(namespace+"_queue_tasks",
			"Tasks in an asynq queue by state (pending, active, scheduled, retry, archived, completed, aggregating).",
			[]string{"queue", "state"}, nil),
		latency: prometheus.NewDesc(namespace+"_queue_latency_seconds",
			"Age of the oldest pending task of the queue.", q, nil),
		paused: prometheus.NewDesc(namespace+"_queue_paused",
			"1 when the queue is paused.", q, nil),
		processed: prometheus.NewDesc(namespace+"_queue_processed_total",
			"Tasks processed from the queue, succeeded or failed (asynq's cumulative count).", q, nil),
		failed: prometheus.NewDesc(namespace+"_queue_failed_total",
			"Task attempts of the queue that failed (asynq's cumulative count).", q, nil),
	}
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.tasks, c.latency, c.paused, c.processed, c.failed} {
		ch <- d
	}
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	for _, q := range c.queues {
		info, err := c.insp.GetQueueInfo(q)
		if err != nil {
			// A queue that never held a task does not exist yet in Redis.
			continue
		}
		for state, n := range map[string]int{
			"pending": info.Pending, "active": info.Active, "scheduled": info.Scheduled, "retry": info.Retry,
			"archived": info.Archived, "completed": info.Completed, "aggregating": info.Aggregating,
		} {
			ch <- prometheus.MustNewConstMetric(c.tasks, prometheus.GaugeValue, float64(n), q, state)
		}
		ch <- prometheus.MustNewConstMetric(c.latency, prometheus.GaugeValue, info.Latency.Seconds(), q)
		paused := 0.0
		if info.Paused {
			paused = 1
		}
		ch <- prometheus.MustNewConstMetric(c.paused, prometheus.GaugeValue, paused, q)
		ch <- prometheus.MustNewConstMetric(c.processed, prometheus.CounterValue, float64(info.ProcessedTotal), q)
		ch <- prometheus.MustNewConstMetric(c.failed, prometheus.CounterValue, float64(info.FailedTotal), q)
	}
}

// OutboxBacklog reports the unsent outbox rows: their count and the time
// of the oldest (zero when none).
type OutboxBacklog func(ctx context.Context) (unsent int64, oldest time.Time, err error)

type outboxCollector struct {
	backlog OutboxBacklog
	now     func() time.Time
	logger  *slog.Logger
	unsent  *prometheus.Desc
	age     *prometheus.Desc
}

// NewOutboxCollector returns a collector of the outbox lag: how many rows
// wait to be handed to Redis and how old the oldest is (0 when none).
func NewOutboxCollector(backlog OutboxBacklog, now func() time.Time, logger *slog.Logger) prometheus.Collector {
	if now == nil {
		now = time.Now
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &outboxCollector{
		backlog: backlog, now: now, logger: logger,
		unsent: prometheus.NewDesc(namespace+"_outbox_unsent_messages",
			"Outbox rows (notifications, webhooks) committed but not yet handed to Redis.", nil, nil),
		age: prometheus.NewDesc(namespace+"_outbox_oldest_unsent_age_seconds",
			"Age of the oldest outbox row not yet handed to Redis (0 when none): the outbox lag.", nil, nil),
	}
}

func (c *outboxCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.unsent; ch <- c.age }

// scrapeTimeout bounds a collector's call to Postgres.
const scrapeTimeout = 2 * time.Second

func (c *outboxCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	n, oldest, err := c.backlog(ctx)
	if err != nil {
		c.logger.Warn("outbox metrics not collected", "err", err)
		return
	}
	age := 0.0
	if !oldest.IsZero() {
		age = max(c.now().Sub(oldest).Seconds(), 0)
	}
	ch <- prometheus.MustNewConstMetric(c.unsent, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(c.age, prometheus.GaugeValue, age)
}

// BreakerStates returns named breakers' states.
type BreakerStates func() map[string]gobreaker.State

type breakerCollector struct {
	sources []BreakerStates
	state   *prometheus.Desc
}

// NewBreakerCollector returns a collector of circuit breaker states:
// 0 closed, 1 half-open, 2 open.
func NewBreakerCollector(sources ...BreakerStates) prometheus.Collector {
	return &breakerCollector{sources: sources, state: prometheus.NewDesc(namespace+"_breaker_state",
		"State of a circuit breaker: 0 closed, 1 half-open, 2 open.", []string{"breaker"}, nil)}
}

func (c *breakerCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.state }

func (c *breakerCollector) Collect(ch chan<- prometheus.Metric) {
	for _, src := range c.sources {
		for name, st := range src() {
			ch <- prometheus.MustNewConstMetric(c.state, prometheus.GaugeValue, float64(st), name)
		}
	}
}

// Tasks counts a worker's task outcomes by task type, with durations.
type Tasks struct {
	outcomes *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// Deferred tells an error that spends no retry (a delivery behind an
	// open breaker) from a failure.
	Deferred func(error) bool
}

// NewTasks registers the task metrics with reg.
func NewTasks(reg prometheus.Registerer, deferred func(error) bool) *Tasks {
	t := &Tasks{
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "tasks_processed_total",
			Help: "Tasks run by this worker, by task type and outcome (succeeded, failed, deferred).",
		}, []string{"type", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "task_duration_seconds",
			Help:    "Time to run a task, by task type.",
			Buckets: []float64{.001, .005, .01, .05, .1, .5, 1, 5, 10, 30},
		}, []string{"type"}),
		Deferred: deferred,
	}
	reg.MustRegister(t.outcomes, t.duration)
	return t
}

// Middleware wraps a worker's handler with the task metrics.
func (t *Tasks) Middleware(next asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, task *asynq.Task) error {
		start := time.Now()
		err := next.ProcessTask(ctx, task)
		outcome := "succeeded"
		switch {
		case err != nil && t.Deferred != nil && t.Deferred(err):
			outcome = "deferred"
		case err != nil:
			outcome = "failed"
		}
		t.outcomes.WithLabelValues(task.Type(), outcome).Inc()
		t.duration.WithLabelValues(task.Type()).Observe(time.Since(start).Seconds())
		return err
	})
}

// Webhooks counts webhook delivery outcomes (notify's Outcome* names).
type Webhooks struct {
	attempts *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// outcomes are the webhook delivery outcomes.
var outcomes = []string{notify.OutcomeDelivered, notify.OutcomeFailed, notify.OutcomeDeferred,
	notify.OutcomeRefused, notify.OutcomeDropped, notify.OutcomeExpired}

// NewWebhooks registers the webhook metrics with reg.
func NewWebhooks(reg prometheus.Registerer) *Webhooks {
	w := &Webhooks{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "webhook_deliveries_total",
			Help: "Brand webhook deliveries by outcome (delivered, failed, deferred, refused, dropped, expired).",
		}, []string{"outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "webhook_delivery_duration_seconds",
			Help:    "Time of a webhook delivery, by outcome.",
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"outcome"}),
	}
	reg.MustRegister(w.attempts, w.duration)
	// Every outcome reads 0 before its first delivery, so that a rate of
	// failed deliveries is 0 rather than missing on a fresh worker.
	for _, o := range outcomes {
		w.attempts.WithLabelValues(o)
	}
	return w
}

// Observe records one delivery (notify.SenderConfig.OnAttempt).
func (w *Webhooks) Observe(outcome string, d time.Duration) {
	w.attempts.WithLabelValues(outcome).Inc()
	w.duration.WithLabelValues(outcome).Observe(d.Seconds())
}

// Ping checks that a dependency answers.
type Ping func(ctx context.Context) error

type upCollector struct {
	pings map[string]Ping
	up    *prometheus.Desc
}

// NewUpCollector returns a collector that pings each named dependency
// ("postgres", "redis") at every scrape, all at once, each within the
// scrape timeout: partnertrack_dependency_up is 1 when it answered, else
// 0. The readiness checks answer the load balancer; this answers the
// alerts, with the process's own connections.
func NewUpCollector(pings map[string]Ping) prometheus.Collector {
	return &upCollector{pings: pings, up: prometheus.NewDesc(namespace+"_dependency_up",
		"1 when the dependency (postgres, redis) answered a ping from this process at the scrape, else 0.",
		[]string{"dependency"}, nil)}
}

func (c *upCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.up }

func (c *upCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for name, ping := range c.pings {
		wg.Add(1)
		go func() {
			defer wg.Done()
			up := 0.0
			if ping(ctx) == nil {
				up = 1
			}
			ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up, name)
		}()
	}
	wg.Wait()
}

type trafficCollector struct {
	stats   *traffic.Stats
	batches *prometheus.Desc
}

// NewTrafficCollector returns a collector of the edge's click and visit
// batches (the pipeline's Stats) by outcome: queued (to Redis), diverted
// (straight to Postgres: the traffic-queue breaker is open or Redis
// refused the batch; clicks still count, at a cost to Postgres), failed
// (written nowhere: their requests failed).
func NewTrafficCollector(stats *traffic.Stats) prometheus.Collector {
	return &trafficCollector{stats: stats, batches: prometheus.NewDesc(namespace+"_traffic_batches_total",
		"Click and visit batches written by the edge, by outcome: queued (to Redis), diverted (straight to Postgres while Redis is away), failed (written nowhere: their requests failed).",
		[]string{"outcome"}, nil)}
}

func (c *trafficCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.batches }

func (c *trafficCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.batches, prometheus.CounterValue, float64(c.stats.Batches.Load()), "queued")
	ch <- prometheus.MustNewConstMetric(c.batches, prometheus.CounterValue, float64(c.stats.Diverted.Load()), "diverted")
	ch <- prometheus.MustNewConstMetric(c.batches, prometheus.CounterValue, float64(c.stats.Failed.Load()), "failed")
}
