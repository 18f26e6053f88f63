package workers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

// ProcessorHandler processes one stored payment-processor event. A failure
// worth retrying returns its error (asynq retries with backoff and, after
// the last retry, archives the task); an event that can never be processed
// (undecodable, or missing) is archived at once. Either way the failure is
// logged with the event id and noted on the stored event, and the queue
// goes on with the next events.
type ProcessorHandler struct {
	Events ledger.PaymentEventService
	Logger *slog.Logger
}

// ProcessTask processes the event the task names.
func (h *ProcessorHandler) ProcessTask(ctx context.Context, t *asynq.Task) error {
	eventID, err := tasks.DecodeProcessorEvent(t)
	if err != nil {
		h.Logger.Error("processor task archived: undecodable payload", "err", err)
		return err
	}
	res, err := h.Events.ProcessEvent(ctx, eventID)
	if err == nil {
		h.Logger.Info("processor event processed", "event_id", eventID, "type", res.Type,
			"status", res.Status, "outcome", res.Outcome)
		return nil
	}
	// An expected failure (a ledger error other than internal_error) will
	// fail the same way every time; anything else is worth a retry.
	var le *ledger.Error
	permanent := errors.As(err, &le) && le.Code != ledger.EInternal
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, known := asynq.GetMaxRetry(ctx)
	final := permanent || (known && retried >= maxRetry)
	// The note must outlive a cancelled task context.
	nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if ferr := h.Events.RecordFailure(nctx, eventID, err.Error(), final); ferr != nil {
		h.Logger.Warn("processor failure not noted on the event", "event_id", eventID, "err", ferr)
	}
	if permanent {
		h.Logger.Error("processor event failed permanently; task archived", "event_id", eventID, "err", err)
		return fmt.Errorf("processor event %s: %v: %w", eventID, err, asynq.SkipRetry)
	}
	if final {
		h.Logger.Error("processor event failed after its last retry; task archived", "event_id", eventID,
			"retried", retried, "err", err)
	}
	return fmt.Errorf("processor event %s: %w", eventID, err)
}

// Processor sweep settings: an event is queued by the edge right after it
// is stored; one still unqueued after the grace was missed (Redis was
// down, the edge died).
const (
	ProcessorSweepGrace = 10 * time.Second
	processorSweepBatch = 500
)

// ProcessorSweepHandler queues stored processor events whose enqueue
// failed.
type ProcessorSweepHandler struct {
	Inbox  ledger.ProcessorInbox
	Logger *slog.Logger
}

// ProcessTask sweeps batches until the backlog is gone or ctx ends.
func (h *ProcessorSweepHandler) ProcessTask(ctx context.Context, _ *asynq.Task) error {
	total := 0
	for ctx.Err() == nil {
		n, err := h.Inbox.SweepEvents(ctx, ProcessorSweepGrace, processorSweepBatch)
		total += n
		if err != nil {
			return err
		}
		if n < processorSweepBatch {
			break
		}
	}
	if total > 0 {
		h.Logger.Info("processor sweep queued events", "count", total)
	}
	return nil
}
