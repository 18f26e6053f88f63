package workers

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/hibiken/asynq"

	"github.com/partnertrack/partnertrack/notify/mail"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

// EmailHandler renders and sends one email relayed from the outbox.
type EmailHandler struct {
	Mailer mail.Mailer
	Logger *slog.Logger
}

// EmailMessageID is the Message-ID (without angle brackets) of the email
// of an outbox message: every attempt of one email carries the same id,
// so a retry after a send whose answer was lost is recognisable.
func EmailMessageID(outboxID int64) string {
	return fmt.Sprintf("outbox-%d@partnertrack", outboxID)
}

// ProcessTask renders the email's kind over its data and sends it. A
// payload that does not decode or render is archived at once (a retry
// would fail the same way); a failed send returns its error, and asynq
// retries it with backoff.
func (h *EmailHandler) ProcessTask(ctx context.Context, t *asynq.Task) error {
	p, err := tasks.DecodeEmailSend(t)
	if err != nil {
		return err
	}
	m, err := mail.Render(p.Data)
	if err != nil {
		return fmt.Errorf("outbox %d: %v: %w", p.OutboxID, err, asynq.SkipRetry)
	}
	m.MessageID = EmailMessageID(p.OutboxID)
	if err := h.Mailer.Send(ctx, m); err != nil {
		return fmt.Errorf("outbox %d: %w", p.OutboxID, err)
	}
	h.Logger.DebugContext(ctx, "email sent", "kind", p.Data.Kind, "message_id", m.MessageID)
	return nil
}
