package workers

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/hibiken/asynq"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

// Outbox sweep settings: a message is swept once it has waited longer than
// the grace (the relay right after commit normally sends it first).
const (
	OutboxGrace      = 5 * time.Second
	outboxSweepBatch = 500
)

// OutboxSweepHandler enqueues outbox messages that the relay after commit
// did not send (Redis was down, the process died).
type OutboxSweepHandler struct {
	Outbox ledger.OutboxRelay
	Logger *slog.Logger
}

// ProcessTask sweeps batches until the backlog is gone or ctx ends.
func (h *OutboxSweepHandler) ProcessTask(ctx context.Context, _ *asynq.Task) error {
	total := 0
	for ctx.Err() == nil {
		n, err := h.Outbox.Sweep(ctx, OutboxGrace, outboxSweepBatch)
		total += n
		if err != nil {
			return err
		}
		if n < outboxSweepBatch {
			break
		}
	}
	if total > 0 {
		h.Logger.Info("outbox sweep sent messages", "count", total)
	}
	return nil
}

// partitionMonthsAhead is how far ahead the click and visit partitions are
// prepared.
const partitionMonthsAhead = 3

// PruneHandler deletes delivered history past its retention.
type PruneHandler struct {
	Housekeeper ledger.Housekeeper
	Retention   ledger.Retention
	Logger      *slog.Logger
}

// ProcessTask prunes; a run cut short by its deadline or an error is
// picked up by the next one, an hour later.
func (h *PruneHandler) ProcessTask(ctx context.Context, _ *asynq.Task) error {
	p, err := h.Housekeeper.Prune(ctx, h.Retention)
	if p.Outbox > 0 || p.WebhookAttempts > 0 || p.RollupSessions > 0 || p.ClickHours > 0 {
		h.Logger.Info("history pruned", "outbox_messages", p.Outbox, "webhook_attempts", p.WebhookAttempts,
			"rollup_sessions", p.RollupSessions, "rollup_click_hours", p.ClickHours)
	}
	return err
}

// Session tally settings: how many pending sessions one tally
// transaction takes (its rollup rows stay locked, and click batches of
// the same days wait on them, for about a tenth of a second at most); the
// click batches waiting in the queues above which a run yields to them;
// and how long the tally may yield since it last ran (the visitors lag by
// at most that while a backlog drains).
const (
	sessionsTallyBatch = 5000
	tallyYieldBacklog  = 10
	tallyMaxYield      = 30 * time.Second
)

// SessionsTallyHandler counts the sessions click batches left pending into
// the rollups' unique visitors (migration 00025), every two seconds.
// While click batches wait in the queues it yields to them: storing the
// clicks comes first, and the sessions' set costs Postgres about as much
// as the clicks themselves (docs/decisions.md, "Unique visitors by a
// tally").
type SessionsTallyHandler struct {
	Housekeeper ledger.Housekeeper
	// Backlog counts the click batches waiting in the queues; nil never
	// yields.
	Backlog func(context.Context) (int, error)
	Logger  *slog.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu      sync.Mutex
	lastRan time.Time // when a run last tallied (or first yielded)
}

// ProcessTask tallies batches until none is left or ctx ends; a run cut
// short leaves the rest to the next one.
func (h *SessionsTallyHandler) ProcessTask(ctx context.Context, _ *asynq.Task) error {
	if h.yield(ctx) {
		return nil
	}
	var total int64
	for ctx.Err() == nil {
		n, err := h.Housekeeper.TallySessions(ctx, sessionsTallyBatch)
		total += n
		if err != nil {
			return err
		}
		if n < sessionsTallyBatch {
			break
		}
	}
	if total > 0 {
		h.Logger.Debug("sessions tallied", "count", total)
	}
	return nil
}

// yield tells whether this run leaves the tally to a later one: more than
// tallyYieldBacklog click batches are waiting, and the tally last ran less
// than tallyMaxYield ago. The bound is in time, not in runs: runs queued
// while the worker was busy or stopped come in a burst when it starts.
func (h *SessionsTallyHandler) yield(ctx context.Context) bool {
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	t := now()
	if h.lastRan.IsZero() {
		h.lastRan = t
	}
	if h.Backlog != nil && t.Sub(h.lastRan) < tallyMaxYield {
		if waiting, err := h.Backlog(ctx); err == nil && waiting > tallyYieldBacklog {
			return true
		}
	}
	h.lastRan = t
	return false
}

// ClickBacklog counts the click batch tasks pending in the namespace's
// click queues (every shard), for SessionsTallyHandler.Backlog.
func ClickBacklog(insp *asynq.Inspector, ns tasks.Namespace, shards int) func(context.Context) (int, error) {
	clicks := map[string]bool{}
	for _, q := range tasks.TrafficQueues(tasks.QueueClicks, shards) {
		clicks[ns.Queue(q)] = true
	}
	return func(context.Context) (int, error) {
		queues, err := insp.Queues() // a queue is listed once a task was enqueued to it
		if err != nil {
			return 0, err
		}
		n := 0
		for _, q := range queues {
			if !clicks[q] {
				continue
			}
			info, err := insp.GetQueueInfo(q)
			if err != nil {
				return 0, err
			}
			n += info.Pending
		}
		return n, nil
	}
}

// PartitionsHandler prepares future monthly partitions.
type PartitionsHandler struct {
	Housekeeper ledger.Housekeeper
}

// ProcessTask creates the partitions of the coming months.
func (h *PartitionsHandler) ProcessTask(ctx context.Context, _ *asynq.Task) error {
	return h.Housekeeper.EnsurePartitions(ctx, partitionMonthsAhead)
}
