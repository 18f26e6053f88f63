package ledger

// RefundSnapshot is what a refund decides on: the sale and its commission
// as their locks returned them, and what the store found of earlier
// refunds of the sale.
type RefundSnapshot struct {
	SaleID         int64
	ProgramID      int64
	WorkspaceID    int64 // the program's, for the advertiser's manual-review warning
	SaleAmount     int64 // the sale's amount_cents
	RefundedBefore int64 // the sale's refunded_cents before this refund
	Commission     *Commission
	// Retry tells that an earlier refund of the sale has this refund's
	// refund_id or, without one, its amount (only checked for a refund
	// that names an amount).
	Retry bool
	// The program's webhook endpoints wanting commission.reversed and
	// commission.refunded.
	ReversedEndpoints, RefundedEndpoints []int64
}

// RefundPlan is a refund's answer and, unless it changes nothing, what
// to write for it.
type RefundPlan struct {
	Result RefundResult
	Write  *RefundWrite // nil: a skip, nothing is written
}

// RefundWrite is everything one refund stores, in one transaction.
type RefundWrite struct {
	// Refund is the refund row; AmountCents is also added to the sale's
	// refunded_cents. Its tracking log row is written with it.
	Refund RefundRow
	// Commission is the commission's change; nil without a commission.
	Commission *CommissionChange
	// Deduction comes off the partner's balance; nil when the commission
	// was not credited or the share is 0.
	Deduction *BalanceDeduction
	// FitWithdrawals tells that the partner's open withdrawals must be
	// lowered to fit the balance after the deduction.
	FitWithdrawals bool
	// Notifications go to the outbox before the webhook's deliveries.
	Notifications []Notification
	// Webhook is the brand's commission.reversed or commission.refunded;
	// nil when no endpoint wants it.
	Webhook *RefundWebhook
}

// RefundRow is a row of refunds, and the tracking log's reference.
type RefundRow struct {
	SaleID         int64
	ProgramID      int64
	CommissionID   *int64
	RefundID       string // "" stores NULL
	AmountCents    int64  // applied: capped at what was left of the sale
	DeductionMinor int64
	Reason         string // "" stores NULL
	Source         string
	TransactionID  string
}

// CommissionChange is the commission's next state after a refund.
type CommissionChange struct {
	ID          int64
	Status      string // reversed (reversed_at is set) or refunded
	AmountMinor int64
	Reason      string
}

// BalanceDeduction is a deduction entry of a partner's balance, linked to
// the commission and the refund row.
type BalanceDeduction struct {
	PartnerID    int64
	Currency     Currency
	CommissionID int64
	AmountMinor  int64 // positive: the entry stores its negation
}

// RefundWebhook is one brand event and the endpoints that want it.
type RefundWebhook struct {
	EventType string
	Data      CommissionEventData
	Endpoints []int64
}

// PlanRefund decides a refund from its snapshot, in the spec's order: a
// retry is skipped, then a refund of a reversed commission, then one that
// finds nothing left of the sale; otherwise the applied amount (the
// refund's, capped at what is left; all that is left when it names none)
// is recorded on the sale and its share taken from the commission
// (RefundShareOf). A sale without commission records the refund and
// answers no_commission, as do its skips.
func PlanRefund(in RefundInput, s RefundSnapshot) RefundPlan {
	c := s.Commission
	skip := func(reason string) RefundPlan {
		if c == nil {
			return RefundPlan{Result: noCommission()}
		}
		return RefundPlan{Result: RefundResult{Status: RefundSkipped, CommissionID: c.ID, SkipReason: reason}}
	}
	if s.Retry && in.AmountCents > 0 {
		if in.RefundID != "" {
			return skip(SkipRefundID)
		}
		return skip(SkipSameAmount)
	}
	applied := s.SaleAmount - s.RefundedBefore
	if in.AmountCents > 0 {
		applied = min(in.AmountCents, applied)
	}
	reversed := c != nil && (c.Status == CommissionReversed || c.Status == CommissionRejected)
	if reversed && applied > 0 {
		// The brand rejected the commission (rejected, or reversed if it was
		// credited) before the sale was refunded in full: nothing is left to
		// take back from it, but the refund is still recorded on the sale,
		// as for a sale without commission, so that its revenue stays true.
		return RefundPlan{Result: skip(SkipAlreadyReverse).Result, Write: refundRow(in, s, applied)}
	}
	if reversed || applied <= 0 {
		return skip(SkipAlreadyReverse)
	}

	w := refundRow(in, s, applied)
	if c == nil {
		return RefundPlan{Result: noCommission(), Write: w}
	}

	share := RefundShareOf(CommissionState{Status: c.Status, OriginalMinor: c.OriginalMinor,
		AmountMinor: c.AmountMinor, Credited: c.Credited}, s.SaleAmount, s.RefundedBefore, applied)
	reason := c.Reason
	if in.Reason != "" {
		reason = in.Reason
	}
	commissionID := c.ID
	w.Refund.CommissionID, w.Refund.DeductionMinor = &commissionID, share.DeductionMinor
	w.Commission = &CommissionChange{ID: c.ID, Status: share.Status, AmountMinor: share.AmountMinor, Reason: reason}
	if share.Debit && share.DeductionMinor > 0 {
		w.Deduction = &BalanceDeduction{PartnerID: c.PartnerID, Currency: c.Currency, CommissionID: c.ID,
			AmountMinor: share.DeductionMinor}
		w.FitWithdrawals = true
	}
	notice := RefundNotice{
		CommissionID: c.ID, PartnerID: c.PartnerID, WorkspaceID: s.WorkspaceID, ProgramID: s.ProgramID,
		TransactionID: in.TransactionID, Status: share.Status, DeductionMinor: share.DeductionMinor,
		AmountMinor: share.AmountMinor, Currency: c.Currency, Reason: reason, PaidOut: c.PaidAt != nil,
	}
	w.Notifications = RefundNotifications(notice)
	eventType, endpoints := RefundEventType(share.Status), s.RefundedEndpoints
	if eventType == EventCommissionReversed {
		endpoints = s.ReversedEndpoints
	}
	if len(endpoints) > 0 {
		w.Webhook = &RefundWebhook{EventType: eventType, Data: RefundEventData(notice, s.SaleID, applied), Endpoints: endpoints}
	}
	return RefundPlan{
		Result: RefundResult{Status: share.Status, CommissionID: c.ID, DeductionMinor: share.DeductionMinor, Currency: c.Currency},
		Write:  w,
	}
}

// refundRow is the write of a refund of applied cents recorded on the
// sale, before any change of its commission.
func refundRow(in RefundInput, s RefundSnapshot, applied int64) *RefundWrite {
	source := in.Source
	if source == "" {
		source = SourceAPI
	}
	return &RefundWrite{Refund: RefundRow{SaleID: s.SaleID, ProgramID: s.ProgramID, RefundID: in.RefundID,
		AmountCents: applied, Reason: in.Reason, Source: source, TransactionID: in.TransactionID}}
}

func noCommission() RefundResult {
	return RefundResult{Status: RefundNoCommission, Message: MsgRefundNoCommission}
}
