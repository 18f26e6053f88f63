package workers

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hibiken/asynq"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/notify"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

// WebhookHandler delivers one brand webhook message to one endpoint.
type WebhookHandler struct {
	Sender *notify.Sender
}

// ProcessTask sends the message. A payload that does not decode, a refused
// address and a message past its age are archived at once; a destination
// whose breaker is open returns a *notify.BreakerOpenError, which the
// server retries later without spending a retry.
func (h *WebhookHandler) ProcessTask(ctx context.Context, t *asynq.Task) error {
	var m ledger.WebhookMessage
	outboxID, err := tasks.DecodeOutbox(t, &m)
	if err != nil {
		return err
	}
	if m.EndpointID == 0 || m.MessageID == "" || m.Body == "" {
		return fmt.Errorf("outbox %d: webhook message without endpoint, id or body: %w", outboxID, asynq.SkipRetry)
	}
	retried, _ := asynq.GetRetryCount(ctx)
	err = h.Sender.Deliver(ctx, m, retried+1)
	if errors.Is(err, notify.ErrFinal) {
		return fmt.Errorf("outbox %d: %v: %w", outboxID, err, asynq.SkipRetry)
	}
	return err
}

// RetryPolicy is how the server retries failed tasks.
type RetryPolicy struct {
	// Webhooks is the schedule of webhook deliveries (default
	// notify.DefaultBackoff); tests shorten it.
	Webhooks notify.Backoff
}

// isFailure tells asynq whether an error spends one of the task's
// retries: a delivery deferred by an open breaker does not.
func isFailure(err error) bool { return !notify.IsBreakerOpen(err) }

// retryDelay is the wait before a failed task runs again: what an open
// breaker asks for, the webhook schedule for webhook deliveries, a short
// first retry for traffic batches (trafficRetryDelay), asynq's default
// for the rest.
func (p RetryPolicy) retryDelay(n int, err error, t *asynq.Task) time.Duration {
	var open *notify.BreakerOpenError
	if errors.As(err, &open) {
		return open.RetryAfter
	}
	switch t.Type() {
	case tasks.TypeWebhookDeliver:
		return p.Webhooks.Delay(n)
	case tasks.TypeClickBatch, tasks.TypeVisitBatch:
		return trafficRetryDelay(n, err, t)
	}
	return asynq.DefaultRetryDelayFunc(n, err, t)
}

// trafficRetryDelay retries a click or visit batch the first time after
// 1 to 3 s instead of asynq's 15 to 45 s: its write is idempotent, and
// its first failure is usually a worker killed mid-batch (the lease
// expired) or one lost statement, so its clicks reach Postgres and the
// rollups a minute sooner. Later retries keep asynq's growing schedule,
// so a long Postgres outage does not spend the retries in minutes.
func trafficRetryDelay(n int, err error, t *asynq.Task) time.Duration {
	if n > 0 {
		return asynq.DefaultRetryDelayFunc(n, err, t)
	}
	return time.Second + rand.N(2*time.Second)
}
