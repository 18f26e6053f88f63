// Package traffic carries clicks and visits from the edge to their queues.
//
// Concurrent requests on one edge share one write (package groupcommit,
// paced: a batch of fewer than Config.FlushEnough clicks starts at least
// Config.FlushGap after the one before): a batch of clicks becomes one asynq task on the clicks
// queue, written
// together with a short-lived click:<id> record per click (so that a lead
// or sale naming a click still in the queue can be attributed), and every
// request of the batch is answered only once both are in Redis. The Redis
// writes sit behind a circuit breaker; when they fail, or while the
// breaker is open, the batch is written straight to Postgres instead
// (idempotently: the queued task, if it landed after all, skips the rows).
// Only when both fail does the batch fail, and none of its clicks is
// acknowledged.
//
// An outage must not stall clicks: each batch gives Redis 50 ms, and the
// breaker (NewBreaker) opens on the first failed batch and lets one batch
// probe Redis a second later, so at most one batch a second waits out the
// deadline while Redis is down or hung.
//
// Visits take the same road on the visits queue, without records.
//
// Shards: with Config.Shards = N > 1 (TRAFFIC_SHARDS) the batches go round
// robin to the queues clicks-0 … clicks-N-1 (and visits-0 …), each an
// asynq queue of its own and so a hash slot of its own in a Redis Cluster;
// a batch's records carry its queue's hash tag (tasks.PendingClicksKey),
// so its records and its task live on one node, and Pending looks a click
// up in every shard in one pipelined round.
//
// Replicas: with Config.WaitReplicas = n > 0 (REDIS_WAIT_REPLICAS) a batch
// is acknowledged only once n replicas of its shard's primary hold it. The
// task is queued first, then the records (or, for visits, a marker key)
// and WAIT n go in one pipeline to that same primary: WAIT counts the
// writes of its own connection, and the replication stream is ordered, so
// a replica that acknowledged the later write also holds the task. Fewer
// replicas than n within the batch's deadline fail the batch's Redis write
// and it is written to Postgres, as when Redis is away.
package traffic

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/groupcommit"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

// Defaults of a pipeline.
const (
	DefaultMaxBatch    = 500 // clicks per task: about 200 KB of payload
	DefaultMaxInflight = 4   // batches written at once
	// DefaultFlushGap is how soon after a batch started the next one may
	// start unless it is full: each batch is a task the worker must take
	// and acknowledge, and without a gap a moderate load made tasks of a
	// round trip's worth of clicks (three to thirty), whose per-task cost
	// in the worker and Redis let the backlog grow (docs/decisions.md,
	// "Click intake and sustained clicks on a shared box").
	DefaultFlushGap = 5 * time.Millisecond
	// DefaultFlushEnough is the batch that starts without waiting for
	// the gap: a client with N connections at once would otherwise be
	// held to N clicks per gap.
	DefaultFlushEnough  = 32
	DefaultRedisTimeout = 50 * time.Millisecond // a healthy enqueue of a full batch takes a few ms
	// DefaultWaitTimeout is the Redis deadline of a batch when it waits
	// for replicas: its enqueue and its records+WAIT are two round trips
	// one after the other, the second to a replica and back.
	DefaultWaitTimeout  = 100 * time.Millisecond
	DefaultProbeEvery   = time.Second     // how long an open breaker waits before one batch probes Redis
	DefaultLastTry      = 2 * time.Second // Redis's last try at a batch Postgres refused: failing its clicks is worse than waiting
	DefaultStoreTimeout = 5 * time.Second // with the Redis deadline, within the edge's 10 s request deadline
)

// pendingLookupTimeout bounds a lead's or sale's read of a click still in
// the queue, inside its transaction, while the breaker is closed.
const pendingLookupTimeout = 500 * time.Millisecond

// Config assembles a pipeline.
type Config struct {
	Redis     redis.UniversalClient // for the click:<id> records; ContextTimeoutEnabled
	Queue     *asynq.Client
	Namespace tasks.Namespace
	// Shards is how many queues each of clicks and visits is spread over
	// (TRAFFIC_SHARDS; 0 and 1 mean the single queues clicks and visits).
	Shards int
	// WaitReplicas, when above 0, acknowledges a batch only once that many
	// replicas of its queue's primary hold it (REDIS_WAIT_REPLICAS).
	WaitReplicas int
	// Breaker guards the Redis writes; nil means NewBreaker("traffic-queue",
	// OnBreakerChange).
	Breaker         *gobreaker.CircuitBreaker[struct{}]
	OnBreakerChange func(name string, from, to gobreaker.State)
	// Store takes a batch directly when Redis does not.
	Store  ledger.TrafficStore
	Logger *slog.Logger

	MaxBatch     int
	MaxInflight  int
	FlushGap     time.Duration // between batch starts, unless FlushEnough; default DefaultFlushGap
	FlushEnough  int           // a batch that starts at once; default DefaultFlushEnough
	RedisTimeout time.Duration // per batch; default DefaultRedisTimeout, or DefaultWaitTimeout with WaitReplicas
	LastTry      time.Duration // per batch Postgres refused, past the breaker
	StoreTimeout time.Duration // per batch, on the direct path
	PendingTTL   time.Duration // of a pending-click record; default tasks.PendingClickTTL
}

// Pipeline implements ledger.TrafficRecorder.
type Pipeline struct {
	cfg    Config
	clicks *groupcommit.Committer[queued[ledger.Click]]
	visits *groupcommit.Committer[queued[ledger.Visit]]
	stats  Stats
	// turns of the round robin of click and visit batches over the shards
	clickTurn, visitTurn atomic.Uint64
}

// Stats count what the pipeline did since it started.
type Stats struct {
	Batches  atomic.Int64 // written to Redis
	Diverted atomic.Int64 // written straight to Postgres
	Failed   atomic.Int64 // written nowhere: their requests failed
}

// queued is an item with its wire form, encoded by the request's own
// goroutine so that the flush only writes bytes.
type queued[T any] struct {
	item *T
	wire []byte
}

var _ ledger.TrafficRecorder = (*Pipeline)(nil)

// New returns a pipeline.
func New(cfg Config) *Pipeline {
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = DefaultMaxBatch
	}
	if cfg.MaxInflight <= 0 {
		cfg.MaxInflight = DefaultMaxInflight
	}
	if cfg.FlushGap <= 0 {
		cfg.FlushGap = DefaultFlushGap
	}
	if cfg.FlushEnough <= 0 {
		cfg.FlushEnough = DefaultFlushEnough
	}
	if cfg.Shards < 1 {
		cfg.Shards = 1
	}
	if cfg.RedisTimeout <= 0 {
		cfg.RedisTimeout = DefaultRedisTimeout
		if cfg.WaitReplicas > 0 {
			cfg.RedisTimeout = DefaultWaitTimeout
		}
	}
	if cfg.StoreTimeout <= 0 {
		cfg.StoreTimeout = DefaultStoreTimeout
	}
	if cfg.LastTry <= 0 {
		cfg.LastTry = DefaultLastTry
	}
	if cfg.PendingTTL <= 0 {
		cfg.PendingTTL = tasks.PendingClickTTL
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Breaker == nil {
		cfg.Breaker = NewBreaker("traffic-queue", cfg.OnBreakerChange)
	}
	p := &Pipeline{cfg: cfg}
	p.clicks = groupcommit.NewPaced(cfg.MaxBatch, cfg.MaxInflight, cfg.FlushGap, cfg.FlushEnough, p.flushClicks)
	p.visits = groupcommit.NewPaced(cfg.MaxBatch, cfg.MaxInflight, cfg.FlushGap, cfg.FlushEnough, p.flushVisits)
	return p
}

// NewBreaker returns the breaker of the click and visit writes: it opens
// on the first failed batch (a batch that failed has already waited out
// its deadline; the next must not), and after DefaultProbeEvery lets one
// batch probe Redis while the others go to Postgres.
func NewBreaker(name string, onChange func(name string, from, to gobreaker.State)) *gobreaker.CircuitBreaker[struct{}] {
	return gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		Name:          name,
		MaxRequests:   1,
		Timeout:       DefaultProbeEvery,
		ReadyToTrip:   func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= 1 },
		OnStateChange: onChange,
	})
}

// RedisOptions derives, from the options of a process's Redis client,
// those of a client for clicks only: no retries, and dial, read and write
// bounded by each call's context (the batch's 50 ms, or the last try's
// longer deadline), so that a dead or hung Redis fails a batch within its
// deadline instead of after seconds of retries.
func RedisOptions(base *redis.UniversalOptions) *redis.UniversalOptions {
	o := *base
	o.DialTimeout = DefaultLastTry
	o.ReadTimeout = DefaultLastTry
	o.WriteTimeout = DefaultLastTry
	o.MaxRetries = -1
	o.DialerRetries = 1
	o.ContextTimeoutEnabled = true
	return &o
}

// Stats returns the pipeline's counters.
func (p *Pipeline) Stats() *Stats { return &p.stats }

// Breaker is the breaker of the pipeline's Redis writes.
func (p *Pipeline) Breaker() *gobreaker.CircuitBreaker[struct{}] { return p.cfg.Breaker }

// RecordClick returns once c is durable: queued in Redis with its
// click:<id> record, or written to Postgres.
func (p *Pipeline) RecordClick(ctx context.Context, c *ledger.Click) error {
	wire, err := tasks.EncodeClick(c)
	if err != nil {
		return err
	}
	return p.clicks.Add(ctx, queued[ledger.Click]{item: c, wire: wire})
}

// RecordVisit returns once v is durable.
func (p *Pipeline) RecordVisit(ctx context.Context, v *ledger.Visit) error {
	wire, err := tasks.EncodeVisit(v)
	if err != nil {
		return err
	}
	return p.visits.Add(ctx, queued[ledger.Visit]{item: v, wire: wire})
}

// shard picks the queue of the next batch of a traffic queue: round
// robin over its shards. Every attempt at one batch uses the same queue,
// so that its TaskID dedupes a second enqueue.
func (p *Pipeline) shard(turn *atomic.Uint64, queue string) string {
	i := (turn.Add(1) - 1) % uint64(p.cfg.Shards)
	return tasks.TrafficQueue(queue, int(i), p.cfg.Shards)
}

func (p *Pipeline) flushClicks(batch []queued[ledger.Click]) error {
	queue := p.shard(&p.clickTurn, tasks.QueueClicks)
	return p.flush(queue, len(batch),
		func(ctx context.Context) error { return p.enqueueClicks(ctx, queue, batch) },
		func(ctx context.Context) error {
			_, err := p.cfg.Store.WriteClicks(ctx, items(batch))
			return err
		})
}

func (p *Pipeline) flushVisits(batch []queued[ledger.Visit]) error {
	queue := p.shard(&p.visitTurn, tasks.QueueVisits)
	return p.flush(queue, len(batch),
		func(ctx context.Context) error { return p.enqueueVisits(ctx, queue, batch) },
		func(ctx context.Context) error {
			_, err := p.cfg.Store.WriteVisits(ctx, items(batch))
			return err
		})
}

// flush writes one batch to Redis (to the queue what) through the
// breaker, else to Postgres, else, as a last resort past the breaker, to
// Redis once more.
func (p *Pipeline) flush(what string, n int, toRedis, toStore func(context.Context) error) error {
	rctx, cancel := context.WithTimeout(context.Background(), p.cfg.RedisTimeout)
	err := p.throughBreaker(func() error { return toRedis(rctx) })
	cancel()
	if err == nil {
		p.stats.Batches.Add(1)
		return nil
	}
	if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
		p.cfg.Logger.Debug("queue breaker open: batch written to Postgres", "queue", what, "count", n)
	} else {
		p.cfg.Logger.Warn("queue write failed: batch written to Postgres", "queue", what, "count", n, "err", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), p.cfg.StoreTimeout)
	defer cancel()
	if serr := toStore(sctx); serr != nil {
		// The breaker may have opened on one slow batch while Redis is
		// fine: before failing the requests, Redis gets one more, longer
		// try.
		rctx, rcancel := context.WithTimeout(context.Background(), p.cfg.LastTry)
		rerr := toRedis(rctx)
		rcancel()
		if rerr == nil {
			p.stats.Batches.Add(1)
			return nil
		}
		p.stats.Failed.Add(1)
		p.cfg.Logger.Error("batch lost: neither Redis nor Postgres took it; its requests fail",
			"queue", what, "count", n, "redis_err", err, "postgres_err", serr)
		return fmt.Errorf("%s batch of %d: redis: %w; postgres: %w", what, n, err, serr)
	}
	p.stats.Diverted.Add(1)
	return nil
}

func (p *Pipeline) throughBreaker(fn func() error) error {
	_, err := p.cfg.Breaker.Execute(func() (struct{}, error) { return struct{}{}, fn() })
	return err
}

// enqueueClicks writes a batch's pending-click records (one pipelined
// round trip: an HSET and an EXPIRE per second the batch spans, usually
// one) and its task (one asynq enqueue) to queue. Without WaitReplicas
// both go at the same time and the batch is durable once both succeeded;
// with it the task goes first, then the records with the WAIT
// (replicated).
func (p *Pipeline) enqueueClicks(ctx context.Context, queue string, batch []queued[ledger.Click]) error {
	records := p.pendingRecords(queue, batch)
	write := func(pipe redis.Pipeliner) {
		for key, fields := range records {
			pipe.HSet(ctx, key, fields...)
			pipe.Expire(ctx, key, p.cfg.PendingTTL)
		}
	}
	task := tasks.NewClickBatchTask(wires(batch))
	if p.cfg.WaitReplicas > 0 {
		if err := p.enqueue(ctx, task, queue, batch[0].item.ID); err != nil {
			return err
		}
		if err := p.replicated(ctx, queue, write); err != nil {
			return fmt.Errorf("write click records: %w", err)
		}
		return nil
	}
	recorded := make(chan error, 1)
	go func() {
		_, err := p.cfg.Redis.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			write(pipe)
			return nil
		})
		recorded <- err
	}()
	err := p.enqueue(ctx, task, queue, batch[0].item.ID)
	if rerr := <-recorded; rerr != nil {
		err = errors.Join(err, fmt.Errorf("write click records: %w", rerr))
	}
	return err
}

// enqueueVisits queues a batch of visits on queue; with WaitReplicas, a
// marker write in the queue's slot carries the WAIT (replicated).
func (p *Pipeline) enqueueVisits(ctx context.Context, queue string, batch []queued[ledger.Visit]) error {
	first := batch[0].item.ID
	if err := p.enqueue(ctx, tasks.NewVisitBatchTask(wires(batch)), queue, first); err != nil {
		return err
	}
	if p.cfg.WaitReplicas == 0 {
		return nil
	}
	return p.replicated(ctx, queue, func(pipe redis.Pipeliner) {
		pipe.Set(ctx, p.cfg.Namespace.ReplicatedKey(queue), first, replicatedMarkerTTL)
	})
}

// replicatedMarkerTTL keeps a shard's marker (tasks.ReplicatedKey) only
// while its shard is busy: it matters only until its WAIT answered.
const replicatedMarkerTTL = time.Minute

// replicated runs write and then WAIT WaitReplicas in one pipeline on the
// primary that holds queue's hash slot, which is where the batch's task
// went: a pipeline is one connection, so the WAIT counts write, and a
// replica that holds write holds the task queued before it. On a cluster
// client a keyless WAIT may go to any node, so the pipeline runs on the
// slot's node client (MasterForKey); a single-server or Sentinel client
// runs every pipeline on one connection to its primary. The WAIT gets
// three quarters of what is left of the batch's deadline, so that its
// answer, not the deadline, ends the attempt.
func (p *Pipeline) replicated(ctx context.Context, queue string, write func(redis.Pipeliner)) error {
	var node redis.Cmdable = p.cfg.Redis
	if cc, ok := p.cfg.Redis.(*redis.ClusterClient); ok {
		n, err := cc.MasterForKey(ctx, p.cfg.Namespace.ReplicatedKey(queue))
		if err != nil {
			return fmt.Errorf("find the primary of queue %s: %w", queue, err)
		}
		node = n
	}
	timeout := p.cfg.RedisTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	timeout = timeout * 3 / 4
	if timeout < time.Millisecond { // WAIT n 0 would block for ever
		return fmt.Errorf("no time left to wait for %d replicas", p.cfg.WaitReplicas)
	}
	acked := redis.NewIntCmd(ctx, "wait", p.cfg.WaitReplicas, timeout.Milliseconds())
	if _, err := node.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		write(pipe)
		return pipe.Process(ctx, acked)
	}); err != nil {
		return err
	}
	if n := acked.Val(); n < int64(p.cfg.WaitReplicas) {
		return fmt.Errorf("%d of %d replicas acknowledged the batch within %v", n, p.cfg.WaitReplicas, timeout)
	}
	return nil
}

// pendingRecords groups a batch's records by the hash of their second in
// queue (tasks.PendingClicksKey): field, value, field, value…
func (p *Pipeline) pendingRecords(queue string, batch []queued[ledger.Click]) map[string][]any {
	byKey := make(map[string][]any, 1)
	for i := range batch {
		at, ok := ledger.ClickTime(batch[i].item.ID) // what PendingClick reads by
		if !ok {
			at = batch[i].item.OccurredAt
		}
		key := p.cfg.Namespace.PendingClicksKey(queue, at)
		if byKey[key] == nil {
			byKey[key] = make([]any, 0, 2*len(batch))
		}
		byKey[key] = append(byKey[key], batch[i].item.ID, batch[i].wire)
	}
	return byKey
}

// enqueue adds a batch task to a queue (a shard). Its TaskID is the id of
// its first item, which no other batch holds: a conflict means an earlier
// attempt whose answer timed out queued this very batch, which is success.
func (p *Pipeline) enqueue(ctx context.Context, t *asynq.Task, queue, firstID string) error {
	_, err := p.cfg.Queue.EnqueueContext(ctx, t,
		asynq.Queue(p.cfg.Namespace.Queue(queue)),
		asynq.TaskID(queue+"-"+firstID),
		asynq.Timeout(time.Minute))
	if errors.Is(err, asynq.ErrTaskIDConflict) {
		return nil
	}
	return err
}

// Ready reports an open breaker: clicks and visits then go straight to
// Postgres (slower, still correct) until Redis answers again.
func (p *Pipeline) Ready(context.Context) error {
	if st := p.cfg.Breaker.State(); st == gobreaker.StateOpen {
		return errors.New("queue breaker open: clicks and visits are written straight to Postgres")
	}
	return nil
}

func items[T any](batch []queued[T]) []T {
	out := make([]T, len(batch))
	for i := range batch {
		out[i] = *batch[i].item
	}
	return out
}

func wires[T any](batch []queued[T]) [][]byte {
	out := make([][]byte, len(batch))
	for i := range batch {
		out[i] = batch[i].wire
	}
	return out
}

// Pending implements ledger.PendingClicks over the pending-click records
// the pipeline writes with each batch.
type Pending struct {
	Redis     redis.UniversalClient
	Namespace tasks.Namespace
	// Shards is the pipeline's (TRAFFIC_SHARDS; 0 and 1 mean the single
	// clicks queue): a click's record is in the hash of its second in one
	// of the shards' queues (tasks.TrafficQueues).
	Shards int
	// Breaker, when set (the pipeline's), skips Redis while it is open:
	// the lookup fails at once instead of waiting out a Redis deadline
	// inside the caller's transaction.
	Breaker *gobreaker.CircuitBreaker[struct{}]
}

// ErrRedisAway is what a pending-click lookup returns while the click
// pipeline's breaker is open.
var ErrRedisAway = errors.New("traffic: Redis is away (queue breaker open): pending click not read")

var _ ledger.PendingClicks = (*Pending)(nil)

// PendingClick returns the click acknowledged under clickID whose record
// has not expired. With shards it reads the second's hash of every shard
// in one pipelined round (a cluster client sends each node its HGETs at
// once). Errors: ENotFound; a Redis failure (or ErrRedisAway) is returned
// as it is, unless another shard holds the click (the caller answers 500
// and its client retries, rather than losing the attribution).
func (p *Pending) PendingClick(ctx context.Context, clickID string) (*ledger.Click, error) {
	at, ok := ledger.ClickTime(clickID)
	if !ok {
		return nil, ledger.NewError(ledger.ENotFound, "click not found")
	}
	if p.Breaker != nil && p.Breaker.State() == gobreaker.StateOpen {
		return nil, ErrRedisAway
	}
	ctx, cancel := context.WithTimeout(ctx, pendingLookupTimeout)
	defer cancel()
	queues := tasks.TrafficQueues(tasks.QueueClicks, p.Shards)
	reads := make([]*redis.StringCmd, len(queues))
	if len(queues) == 1 {
		reads[0] = p.Redis.HGet(ctx, p.Namespace.PendingClicksKey(queues[0], at), clickID)
	} else {
		// The error is each read's, looked at below.
		p.Redis.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for i, q := range queues {
				reads[i] = pipe.HGet(ctx, p.Namespace.PendingClicksKey(q, at), clickID)
			}
			return nil
		})
	}
	var failed error
	for _, r := range reads {
		b, err := r.Bytes()
		if errors.Is(err, redis.Nil) {
			continue
		} else if err != nil {
			failed = cmp.Or(failed, err)
			continue
		}
		c, err := tasks.DecodeClick(b)
		if err != nil {
			return nil, fmt.Errorf("traffic: decode pending click %s: %w", clickID, err)
		}
		return c, nil
	}
	if failed != nil {
		return nil, fmt.Errorf("traffic: read pending click %s: %w", clickID, failed)
	}
	return nil, ledger.NewError(ledger.ENotFound, "click not found")
}
