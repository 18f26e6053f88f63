package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/partnertrack/partnertrack/ledger"
)

// Task types of payment-processor events.
const (
	// TypeProcessorEvent is one stored processor event on the processor
	// queue; its task id is the event id.
	TypeProcessorEvent = "processor:event"
	// TypeProcessorSweep is the periodic queueing of stored processor
	// events whose enqueue failed, on the maintenance queue.
	TypeProcessorSweep = "processor:sweep"
)

// ProcessorRetention keeps a finished processor task (and so its task id,
// the event id) for as long as Stripe redelivers an event (three days), so
// that a redelivery queued again runs nothing; the processor_events
// primary key covers what comes later.
const ProcessorRetention = 3 * 24 * time.Hour

// ProcessorMaxRetry is how often a failing processor event is retried with
// asynq's backoff (about a day in all) before it is archived.
const ProcessorMaxRetry = 12

// ProcessorEventPayload is the payload of a processor event task: the id of
// the stored event (the worker reads the event from Postgres).
type ProcessorEventPayload struct {
	EventID string `json:"event_id"`
}

// NewProcessorEventTask builds the task of a stored processor event.
func NewProcessorEventTask(eventID string) (*asynq.Task, error) {
	payload, err := json.Marshal(ProcessorEventPayload{EventID: eventID})
	if err != nil {
		return nil, err
	}
	return asynq.NewTask(TypeProcessorEvent, payload), nil
}

// DecodeProcessorEvent returns the event id of a processor event task; a
// payload that does not decode is not retried.
func DecodeProcessorEvent(t *asynq.Task) (string, error) {
	var p ProcessorEventPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.EventID == "" {
		return "", fmt.Errorf("decode %s payload %q: %w", t.Type(), t.Payload(), asynq.SkipRetry)
	}
	return p.EventID, nil
}

// NewProcessorSweepTask builds the periodic sweep of unqueued processor
// events.
func NewProcessorSweepTask() *asynq.Task { return asynq.NewTask(TypeProcessorSweep, nil) }

var _ ledger.ProcessorEnqueuer = (*Enqueuer)(nil)

// EnqueueProcessorEvents puts stored processor events on the processor
// queue with the event id as task id, stopping at the first failure; a
// task id conflict means the event is queued (or was processed) already.
func (e *Enqueuer) EnqueueProcessorEvents(ctx context.Context, eventIDs []string) ([]string, error) {
	sent := make([]string, 0, len(eventIDs))
	for _, id := range eventIDs {
		task, err := NewProcessorEventTask(id)
		if err != nil {
			return sent, err
		}
		opts := []asynq.Option{
			asynq.Queue(e.Namespace.Queue(QueueProcessor)),
			asynq.TaskID(id),
			asynq.Retention(ProcessorRetention),
			asynq.MaxRetry(ProcessorMaxRetry),
		}
		if err := e.enqueue(ctx, task, opts); err != nil {
			return sent, fmt.Errorf("enqueue processor event %s: %w", id, err)
		}
		sent = append(sent, id)
	}
	return sent, nil
}
