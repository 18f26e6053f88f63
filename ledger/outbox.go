package ledger

import (
	"context"
	"encoding/json"
	"time"
)

// OutboxMessage is a side effect recorded in the same transaction as the
// change that caused it (a notification, a brand webhook), to be handed to
// a queue after commit. Its ID is the task's idempotency key.
type OutboxMessage struct {
	ID        int64
	TaskType  string
	Queue     string
	Payload   json.RawMessage
	CreatedAt time.Time
}

// Enqueuer hands committed outbox messages to the queue. Enqueueing a
// message twice must be harmless (the asynq implementation uses the
// message id as TaskID). It returns the ids it enqueued; the rest stay
// unsent for the sweep.
type Enqueuer interface {
	Enqueue(ctx context.Context, msgs []OutboxMessage) (sent []int64, err error)
}

// OutboxRelay moves committed outbox messages to the queue: right after the
// commit that wrote them, and again from the periodic sweep for any message
// a failed enqueue or a crash left behind.
type OutboxRelay interface {
	// Relay enqueues msgs and marks the enqueued ones sent.
	Relay(ctx context.Context, msgs []OutboxMessage) error
	// Sweep enqueues messages left unsent for longer than grace, at most
	// limit of them, and reports how many it sent.
	Sweep(ctx context.Context, grace time.Duration, limit int) (int, error)
}
