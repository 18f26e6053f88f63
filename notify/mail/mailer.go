package mail

import (
	"context"
	"log/slog"
)

// Message is one rendered email to one recipient.
type Message struct {
	To      string
	Subject string
	Text    string
	HTML    string
	// MessageID is the Message-ID header without its angle brackets
	// ("outbox-42@partnertrack"); the same message sent twice carries the
	// same id.
	MessageID string
}

// Mailer sends one message. An error means the message may not have been
// sent; the caller retries.
type Mailer interface {
	Send(ctx context.Context, m Message) error
}

// LogMailer logs each message (recipient, subject, Message-ID; not the
// body, which may hold an invite's link) and sends nothing: the mailer of
// a deployment without SMTP_URL, so that development needs no mail server.
type LogMailer struct {
	Logger *slog.Logger
}

// Send implements Mailer.
func (l LogMailer) Send(ctx context.Context, m Message) error {
	l.Logger.InfoContext(ctx, "email not sent: SMTP_URL is not set",
		"to", m.To, "subject", m.Subject, "message_id", m.MessageID)
	return nil
}
