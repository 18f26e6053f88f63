package workers

import (
	"context"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"

	"github.com/partnertrack/partnertrack/ledger"
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
	if p.Outbox > 0 || p.WebhookAttempts > 0 || p.RollupSessions > 0 {
		h.Logger.Info("history pruned", "outbox_messages", p.Outbox, "webhook_attempts", p.WebhookAttempts,
			"rollup_sessions", p.RollupSessions)
	}
	return err
}

// PartitionsHandler prepares future monthly partitions.
type PartitionsHandler struct {
	Housekeeper ledger.Housekeeper
}

// ProcessTask creates the partitions of the coming months.
func (h *PartitionsHandler) ProcessTask(ctx context.Context, _ *asynq.Task) error {
	return h.Housekeeper.EnsurePartitions(ctx, partitionMonthsAhead)
}
