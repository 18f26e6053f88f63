package notify

import (
	"context"
	"errors"
	"fmt"

	"github.com/partnertrack/partnertrack/ledger"
)

// ErrInvalid marks a notification that can never be delivered (no single
// recipient, no text); retrying it is pointless.
var ErrInvalid = errors.New("notify: invalid notification")

// Inbox delivers in-app notifications by storing them.
type Inbox struct {
	Store ledger.NotificationStore
}

// Deliver stores n for its recipient once per outbox id; a redelivery of
// the same message stores nothing. Errors wrapping ErrInvalid are final.
func (in *Inbox) Deliver(ctx context.Context, outboxID int64, n ledger.Notification) error {
	if err := Validate(n); err != nil {
		return err
	}
	_, err := in.Store.SaveNotification(ctx, outboxID, n)
	return err
}

// Validate checks that n has exactly one recipient and says something.
func Validate(n ledger.Notification) error {
	switch {
	case (n.PartnerID == nil) == (n.WorkspaceID == nil):
		return fmt.Errorf("%w: exactly one of partner_id and workspace_id must be set", ErrInvalid)
	case n.Kind == "" || n.Title == "" || n.Body == "":
		return fmt.Errorf("%w: kind, title and body are required", ErrInvalid)
	}
	return nil
}
