package workers

import (
	"context"
	"log/slog"

	"github.com/hibiken/asynq"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

// ClickBatchHandler writes a batch of clicks from the clicks queue. The
// write is idempotent, so a batch retried after a failure, or redone
// after its worker was killed, stores each click once.
type ClickBatchHandler struct {
	Store  ledger.TrafficStore
	Logger *slog.Logger
}

// ProcessTask writes the batch.
func (h *ClickBatchHandler) ProcessTask(ctx context.Context, t *asynq.Task) error {
	clicks, err := tasks.DecodeClickBatch(t)
	if err != nil {
		return err
	}
	n, err := h.Store.WriteClicks(ctx, clicks)
	if err != nil {
		return err
	}
	h.Logger.Debug("click batch written", "clicks", len(clicks), "new", n)
	return nil
}

// VisitBatchHandler writes a batch of visits from the visits queue,
// idempotently like ClickBatchHandler.
type VisitBatchHandler struct {
	Store  ledger.TrafficStore
	Logger *slog.Logger
}

// ProcessTask writes the batch.
func (h *VisitBatchHandler) ProcessTask(ctx context.Context, t *asynq.Task) error {
	visits, err := tasks.DecodeVisitBatch(t)
	if err != nil {
		return err
	}
	n, err := h.Store.WriteVisits(ctx, visits)
	if err != nil {
		return err
	}
	h.Logger.Debug("visit batch written", "visits", len(visits), "new", n)
	return nil
}
