// Package traffic carries clicks and visits from the edge to their queues.
//
// Concurrent requests on one edge share one write (package groupcommit):
// a batch of clicks becomes one asynq task on the clicks queue, written
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
package traffic

import (
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
	DefaultMaxBatch     = 500                   // clicks per task: about 200 KB of payload
	DefaultMaxInflight  = 4                     // batches written at once
	DefaultRedisTimeout = 50 * time.Millisecond // a healthy enqueue of a full batch takes a few ms
	DefaultProbeEvery   = time.Second           // how long an open breaker waits before one batch probes Redis
	DefaultLastTry      = 2 * time.Second       // Redis's last try at a batch Postgres refused: failing its clicks is worse than waiting
	DefaultStoreTimeout = 5 * time.Second       // with the Redis deadline, within the edge's 10 s request deadline
)

// pendingLookupTimeout bounds a lead's or sale's read of a click still in
// the queue, inside its transaction, while the breaker is closed.
const pendingLookupTimeout = 500 * time.Millisecond

// Config assembles a pipeline.
type Config struct {
	Redis     redis.UniversalClient // for the click:<id> records; ContextTimeoutEnabled
	Queue     *asynq.Client
	Namespace tasks.Namespace
	// Breaker guards the Redis writes; nil means NewBreaker("traffic-queue",
	// OnBreakerChange).
	Breaker         *gobreaker.CircuitBreaker[struct{}]
	OnBreakerChange func(name string, from, to gobreaker.State)
	// Store takes a batch directly when Redis does not.
	Store  ledger.TrafficStore
	Logger *slog.Logger

	MaxBatch     int
	MaxInflight  int
	RedisTimeout time.Duration // per batch
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
	if cfg.RedisTimeout <= 0 {
		cfg.RedisTimeout = DefaultRedisTimeout
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
	p.clicks = groupcommit.New(cfg.MaxBatch, cfg.MaxInflight, p.flushClicks)
	p.visits = groupcommit.New(cfg.MaxBatch, cfg.MaxInflight, p.flushVisits)
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

func (p *Pipeline) flushClicks(batch []queued[ledger.Click]) error {
	return p.flush("clicks", len(batch),
		func(ctx context.Context) error { return p.enqueueClicks(ctx, batch) },
		func(ctx context.Context) error {
			_, err := p.cfg.Store.WriteClicks(ctx, items(batch))
			return err
		})
}

func (p *Pipeline) flushVisits(batch []queued[ledger.Visit]) error {
	return p.flush("visits", len(batch),
		func(ctx context.Context) error {
			return p.enqueue(ctx, tasks.NewVisitBatchTask(wires(batch)), tasks.QueueVisits, batch[0].item.ID)
		},
		func(ctx context.Context) error {
			_, err := p.cfg.Store.WriteVisits(ctx, items(batch))
			return err
		})
}

// flush writes one batch to Redis through the breaker, else to Postgres,
// else, as a last resort past the breaker, to Redis once more.
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
// one) and its task (one asynq enqueue) at the same time; the batch is
// durable once both succeeded.
func (p *Pipeline) enqueueClicks(ctx context.Context, batch []queued[ledger.Click]) error {
	recorded := make(chan error, 1)
	go func() {
		_, err := p.cfg.Redis.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for key, fields := range p.pendingRecords(batch) {
				pipe.HSet(ctx, key, fields...)
				pipe.Expire(ctx, key, p.cfg.PendingTTL)
			}
			return nil
		})
		recorded <- err
	}()
	err := p.enqueue(ctx, tasks.NewClickBatchTask(wires(batch)), tasks.QueueClicks, batch[0].item.ID)
	if rerr := <-recorded; rerr != nil {
		err = errors.Join(err, fmt.Errorf("write click records: %w", rerr))
	}
	return err
}

// pendingRecords groups a batch's records by the hash of their second
// (tasks.PendingClicksKey): field, value, field, value…
func (p *Pipeline) pendingRecords(batch []queued[ledger.Click]) map[string][]any {
	byKey := make(map[string][]any, 1)
	for i := range batch {
		at, ok := ledger.ClickTime(batch[i].item.ID) // what PendingClick reads by
		if !ok {
			at = batch[i].item.OccurredAt
		}
		key := p.cfg.Namespace.PendingClicksKey(at)
		if byKey[key] == nil {
			byKey[key] = make([]any, 0, 2*len(batch))
		}
		byKey[key] = append(byKey[key], batch[i].item.ID, batch[i].wire)
	}
	return byKey
}

// enqueue adds a batch task to a queue. Its TaskID is the id of its first
// item, which no other batch holds: a conflict means an earlier attempt
// whose answer timed out queued this very batch, which is success.
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
// has not expired. Errors: ENotFound; a Redis failure (or ErrRedisAway)
// is returned as it is (the caller answers 500 and its client retries,
// rather than losing the attribution).
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
	b, err := p.Redis.HGet(ctx, p.Namespace.PendingClicksKey(at), clickID).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, ledger.NewError(ledger.ENotFound, "click not found")
	} else if err != nil {
		return nil, fmt.Errorf("traffic: read pending click %s: %w", clickID, err)
	}
	c, err := tasks.DecodeClick(b)
	if err != nil {
		return nil, fmt.Errorf("traffic: decode pending click %s: %w", clickID, err)
	}
	return c, nil
}
