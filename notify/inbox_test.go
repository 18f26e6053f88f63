package notify

import (
	"context"
	"errors"
	"testing"

	"github.com/partnertrack/partnertrack/ledger"
)

// storeFunc is a function-field fake of ledger.NotificationStore.
type storeFunc func(outboxID int64, n ledger.Notification) (bool, error)

func (f storeFunc) SaveNotification(_ context.Context, outboxID int64, n ledger.Notification) (bool, error) {
	return f(outboxID, n)
}

func (storeFunc) PartnerNotifications(context.Context, int64, int) ([]ledger.StoredNotification, error) {
	return nil, nil
}

func (storeFunc) ProgramNotifications(context.Context, int64, int) ([]ledger.StoredNotification, error) {
	return nil, nil
}

func TestInboxDeliver(t *testing.T) {
	partner, workspace := int64(4), int64(2)
	ok := ledger.Notification{PartnerID: &partner, Kind: "k", Title: "t", Body: "b"}
	for _, tc := range []struct {
		desc    string
		n       ledger.Notification
		invalid bool
	}{
		{"OKPartner", ok, false},
		{"OKWorkspace", ledger.Notification{WorkspaceID: &workspace, Kind: "k", Title: "t", Body: "b"}, false},
		{"ErrNoRecipient", ledger.Notification{Kind: "k", Title: "t", Body: "b"}, true},
		{"ErrTwoRecipients", ledger.Notification{PartnerID: &partner, WorkspaceID: &workspace, Kind: "k", Title: "t", Body: "b"}, true},
		{"ErrNoText", ledger.Notification{PartnerID: &partner, Kind: "k"}, true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			stored := 0
			in := &Inbox{Store: storeFunc(func(outboxID int64, n ledger.Notification) (bool, error) {
				if outboxID != 77 {
					t.Fatalf("outbox id %d", outboxID)
				}
				stored++
				return true, nil
			})}
			err := in.Deliver(context.Background(), 77, tc.n)
			if errors.Is(err, ErrInvalid) != tc.invalid || (stored == 1) == tc.invalid {
				t.Fatalf("err = %v, stored %d times", err, stored)
			}
		})
	}
}
