package workers

import (
	"context"
	"log/slog"
	"sync"

	"github.com/hibiken/asynq"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

// ClickBatchHandler writes a batch of clicks from the clicks queue, in
// one insert with the batches of the click tasks running beside it
// (batchWriter). The write is idempotent, so a batch retried after a
// failure, or redone after its worker was killed, stores each click once.
type ClickBatchHandler struct {
	Store  ledger.TrafficStore
	Logger *slog.Logger

	once   sync.Once
	writer *batchWriter[ledger.Click]
}

// ProcessTask writes the batch.
func (h *ClickBatchHandler) ProcessTask(ctx context.Context, t *asynq.Task) error {
	clicks, err := tasks.DecodeClickBatch(t)
	if err != nil {
		return err
	}
	h.once.Do(func() {
		h.writer = &batchWriter[ledger.Click]{kind: "clicks", write: h.Store.WriteClicks, logger: h.Logger}
	})
	return h.writer.Write(ctx, clicks)
}

// VisitBatchHandler writes a batch of visits from the visits queue, like
// ClickBatchHandler.
type VisitBatchHandler struct {
	Store  ledger.TrafficStore
	Logger *slog.Logger

	once   sync.Once
	writer *batchWriter[ledger.Visit]
}

// ProcessTask writes the batch.
func (h *VisitBatchHandler) ProcessTask(ctx context.Context, t *asynq.Task) error {
	visits, err := tasks.DecodeVisitBatch(t)
	if err != nil {
		return err
	}
	h.once.Do(func() {
		h.writer = &batchWriter[ledger.Visit]{kind: "visits", write: h.Store.WriteVisits, logger: h.Logger}
	})
	return h.writer.Write(ctx, visits)
}
