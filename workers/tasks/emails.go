package tasks

import (
	"encoding/json"
	"fmt"

	"github.com/hibiken/asynq"

	"github.com/partnertrack/partnertrack/ledger"
)

// TypeEmailSend is one email to one recipient, relayed from the outbox to
// the emails queue; its payload is an EmailSendPayload.
const TypeEmailSend = ledger.OutboxTaskEmail

// EmailMaxRetry is how many times a failed send is retried after its
// first attempt, with asynq's default backoff (n^4 + 15 seconds and some
// jitter: about 17 hours in all), before the task is archived.
const EmailMaxRetry = 12

// EmailSendPayload is the payload of an email task: the OutboxPayload of
// an outbox message whose data is a ledger.Email (recipient, kind and the
// template's data; never a rendered message).
type EmailSendPayload struct {
	OutboxID int64        `json:"outbox_id"`
	Data     ledger.Email `json:"data"`
}

// NewEmailSendTask builds the task of an email as the outbox enqueuer
// does, for tests and tools; the service enqueues emails only through the
// outbox (ledger.EmailOutboxMessage).
func NewEmailSendTask(outboxID int64, e ledger.Email) (*asynq.Task, error) {
	payload, err := json.Marshal(EmailSendPayload{OutboxID: outboxID, Data: e})
	if err != nil {
		return nil, err
	}
	return asynq.NewTask(TypeEmailSend, payload), nil
}

// DecodeEmailSend decodes an email task; a payload that does not decode
// or lacks its outbox id, recipient or kind is not retried.
func DecodeEmailSend(t *asynq.Task) (EmailSendPayload, error) {
	var p EmailSendPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil {
		return p, fmt.Errorf("decode %s payload: %v: %w", t.Type(), err, asynq.SkipRetry)
	}
	if p.OutboxID == 0 || p.Data.To == "" || p.Data.Kind == "" {
		return p, fmt.Errorf("decode %s payload: no outbox id, recipient or kind: %w", t.Type(), asynq.SkipRetry)
	}
	return p, nil
}
