package workers

import (
	"context"
	"errors"
	"fmt"

	"github.com/hibiken/asynq"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/notify"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

// NotificationHandler stores the in-app notifications relayed from the
// outbox, once per outbox id.
type NotificationHandler struct {
	Inbox *notify.Inbox
}

// ProcessTask delivers one notification.
func (h *NotificationHandler) ProcessTask(ctx context.Context, t *asynq.Task) error {
	var n ledger.Notification
	outboxID, err := tasks.DecodeOutbox(t, &n)
	if err != nil {
		return err
	}
	if err := h.Inbox.Deliver(ctx, outboxID, n); errors.Is(err, notify.ErrInvalid) {
		return fmt.Errorf("outbox %d: %v: %w", outboxID, err, asynq.SkipRetry)
	} else if err != nil {
		return fmt.Errorf("outbox %d: %w", outboxID, err)
	}
	return nil
}
