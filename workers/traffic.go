package workers

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

// ClickBatchHandler writes a batch of clicks from the clicks queue, in
// one insert with the batches of the click tasks running beside it
// (batchWriter). The write is idempotent, so a batch retried after a
// failure, or redone after its worker was killed, stores each click once.
//
// Once the batch is committed its clicks' pending records are deleted
// from Redis: a lead or sale finds them in Postgres from then on, so
// Redis holds records only for the clicks still queued rather than for
// every click of the last day (their lifetime, tasks.PendingClickTTL,
// stays as the backstop for a record the delete missed).
type ClickBatchHandler struct {
	Store ledger.TrafficStore
	// Redis and Namespace locate the pending records; a nil Redis
	// leaves them to expire.
	Redis     redis.UniversalClient
	Namespace tasks.Namespace
	Logger    *slog.Logger

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
	if err := h.writer.Write(ctx, clicks); err != nil {
		return err
	}
	if queue, ok := asynq.GetQueueName(ctx); ok && h.Redis != nil {
		h.forgetPending(ctx, queue, clicks)
	}
	return nil
}

// forgetTimeout bounds the delete of a batch's pending records: it is
// housekeeping, and a record left behind only waits for its expiry.
const forgetTimeout = time.Second

// forgetPending deletes the records of clicks, now in Postgres, from
// their seconds' hashes in queue (one pipelined round: an HDEL per second
// the batch spans). A failure is logged, not returned: the batch is
// stored, and retrying it would not make the delete likelier.
func (h *ClickBatchHandler) forgetPending(ctx context.Context, queue string, clicks []ledger.Click) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), forgetTimeout)
	defer cancel()
	fields := make(map[string][]string, 1)
	for i := range clicks {
		key := h.Namespace.PendingClicksKeyOf(queue, clicks[i].OccurredAt)
		fields[key] = append(fields[key], clicks[i].ID)
	}
	_, err := h.Redis.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for key, ids := range fields {
			pipe.HDel(ctx, key, ids...)
		}
		return nil
	})
	if err != nil {
		h.Logger.Warn("pending click records not deleted; they expire on their own", "queue", queue,
			"clicks", len(clicks), "err", err)
	}
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
