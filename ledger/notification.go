package ledger

import (
	"context"
	"fmt"
	"time"
)

// Where the ledger's notifications go in the outbox: the task type and the
// queue (before any namespace) that package workers/tasks routes.
const (
	OutboxTaskNotification   = "notification:deliver"
	OutboxQueueNotifications = "notifications"
)

// Notification kinds.
const (
	NoticeCommissionReversed = "commission.reversed"
	NoticeCommissionRefunded = "commission.refunded"
	NoticeManualReview       = "commission.manual_review"
)

// Notification is an in-app notification to a partner or to a workspace
// (the advertiser): exactly one of PartnerID and WorkspaceID is set. It is
// written to the outbox with the change that caused it and stored by the
// notifications worker after commit.
type Notification struct {
	PartnerID   *int64         `json:"partner_id,omitempty"`
	WorkspaceID *int64         `json:"workspace_id,omitempty"`
	Kind        string         `json:"kind"`
	Title       string         `json:"title"`
	Body        string         `json:"body"`
	Data        map[string]any `json:"data,omitempty"`
}

// StoredNotification is a delivered in-app notification.
type StoredNotification struct {
	Notification
	ID        int64
	OutboxID  int64
	CreatedAt time.Time
	ReadAt    *time.Time
}

// NotificationStore keeps in-app notifications.
type NotificationStore interface {
	// SaveNotification stores n once per outbox id: a redelivered task
	// stores nothing and reports false.
	SaveNotification(ctx context.Context, outboxID int64, n Notification) (bool, error)
	// PartnerNotifications returns a partner's notifications, newest first,
	// at most limit of them. Errors: ENotFound (partner).
	PartnerNotifications(ctx context.Context, partnerID int64, limit int) ([]StoredNotification, error)
	// ProgramNotifications returns the advertiser's notifications (those
	// to the program's workspace) about one program, newest first, at most
	// limit of them. Errors: ENotFound (program).
	ProgramNotifications(ctx context.Context, programID int64, limit int) ([]StoredNotification, error)
}

// RefundNotice describes a refund applied to a commission, for the
// notifications it causes.
type RefundNotice struct {
	CommissionID   int64
	PartnerID      int64
	WorkspaceID    int64
	ProgramID      int64
	TransactionID  string
	Status         string // reversed or refunded
	DeductionMinor int64
	AmountMinor    int64 // the commission's amount after the refund
	Currency       Currency
	Reason         string
	PaidOut        bool // the commission was already paid out
}

// FormatMoney renders minor units as "12.50 USD" (VND without decimals).
func FormatMoney(minor int64, c Currency) string {
	return MinorToMajor(minor, c).StringFixed(c.Exponent()) + " " + string(c)
}

// RefundNotifications returns the in-app notification to the partner and,
// when the commission was already paid out, the manual-review warning to
// the advertiser.
func RefundNotifications(r RefundNotice) []Notification {
	kind, title := NoticeCommissionRefunded, "Commission reduced by a refund"
	verb := "was reduced by " + FormatMoney(r.DeductionMinor, r.Currency) + " to " + FormatMoney(r.AmountMinor, r.Currency)
	if r.Status == CommissionReversed {
		kind, title = NoticeCommissionReversed, "Commission reversed"
		verb = "was reversed"
	}
	reason := r.Reason
	if reason == "" {
		reason = "no reason given"
	}
	// The partner's copy names the commission, never the brand's
	// transaction id: an order number can name the customer, and the
	// partner portal shows partners nothing of their customers.
	data := map[string]any{
		"commission_id": r.CommissionID,
		"program_id":    r.ProgramID,
		"status":        r.Status,
		"deduction":     MinorToMajor(r.DeductionMinor, r.Currency).String(),
		"amount":        MinorToMajor(r.AmountMinor, r.Currency).String(),
		"currency":      string(r.Currency),
		"reason":        r.Reason,
	}
	partnerID, workspaceID := r.PartnerID, r.WorkspaceID
	out := []Notification{{
		PartnerID: &partnerID,
		Kind:      kind,
		Title:     title,
		Body:      fmt.Sprintf("Your commission #%d %s after a refund (reason: %s).", r.CommissionID, verb, reason),
		Data:      data,
	}}
	if r.PaidOut {
		brandData := map[string]any{"transaction_id": r.TransactionID}
		for k, v := range data {
			brandData[k] = v
		}
		data = brandData
		out = append(out, Notification{
			WorkspaceID: &workspaceID,
			Kind:        NoticeManualReview,
			Title:       "Refund on a commission already paid out",
			Body: fmt.Sprintf("Sale %s was refunded after its commission #%d had been paid out to partner #%d. "+
				"%s was deducted from the partner's balance, which may now be negative. Review it manually (reason: %s).",
				r.TransactionID, r.CommissionID, r.PartnerID, FormatMoney(r.DeductionMinor, r.Currency), reason),
			Data: data,
		})
	}
	return out
}
