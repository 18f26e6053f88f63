package ledger

import (
	"context"
	"time"
)

// Commission statuses. pending, approved, reversed and refunded are the
// spec's names; paid is "paid out". approved means past pending and
// credited to the partner's balance.
const (
	CommissionPending  = "pending"
	CommissionApproved = "approved"
	CommissionPaid     = "paid"
	CommissionReversed = "reversed"
	CommissionRefunded = "refunded"
)

// Commission is what a partner earns on an attributed sale. AmountMinor is
// the current amount in minor units of Currency (reduced by partial
// refunds); OriginalMinor is what the sale earned.
type Commission struct {
	ID            int64
	ProgramID     int64
	PartnerID     int64
	SaleID        int64
	CustomerID    *int64
	TransactionID string
	Currency      Currency
	OriginalMinor int64
	AmountMinor   int64
	Status        string
	Credited      bool // the amount is in the partner's balance
	Reason        string
	ApproveAfter  time.Time
	ApprovedAt    *time.Time
	PaidAt        *time.Time // paid out, by a withdrawal or by the operator
	ReversedAt    *time.Time
	WithdrawalID  *int64
	CreatedAt     time.Time
}

// CommissionAmount is what a sale of amount minor units of cur earns in
// program p: commission_rate% of the sale in the sale's currency for the
// percent types; commission_rate major units of the program's currency for
// the fixed types. Both round half-up to the minor unit.
func CommissionAmount(p *Program, amount int64, cur Currency) (int64, Currency) {
	if p.CommissionType.IsPercent() {
		return PercentOf(amount, p.CommissionRate), cur
	}
	return MajorToMinor(p.CommissionRate, p.Currency), p.Currency
}

// Why a sale earned no commission.
const (
	NotDueNotFirst     = "not_first_sale"
	NotDueDurationOver = "duration_over"
)

// CommissionDue reports whether a sale at saleAt pays a commission, and
// why not when it does not. Non-recurring types pay the customer's first
// commissionable sale only (hadCommission: the customer already earned
// one); recurring types pay every sale within duration_months of the
// customer's first paid sale firstPaid (0 months: lifetime).
func CommissionDue(p *Program, firstPaid, saleAt time.Time, hadCommission bool) (bool, string) {
	if !p.CommissionType.IsRecurring() {
		if hadCommission {
			return false, NotDueNotFirst
		}
		return true, ""
	}
	if p.DurationMonths > 0 && !saleAt.Before(firstPaid.AddDate(0, p.DurationMonths, 0)) {
		return false, NotDueDurationOver
	}
	return true, ""
}

// ApproveAfter is when a commission created at now leaves its hold.
func ApproveAfter(p *Program, now time.Time) time.Time {
	return now.AddDate(0, 0, p.HoldDays)
}

// Messages of the commission lifecycle.
const (
	MsgCommissionReversed  = "commission is reversed and cannot be approved or paid"
	MsgCommissionCancelled = "commission was cancelled by a refund and cannot be approved or paid"
)

// CommissionService reads commissions and moves them through their
// lifecycle: pending, approved (past pending, credited), paid (paid out).
type CommissionService interface {
	// Commission returns one commission. Errors: ENotFound.
	Commission(ctx context.Context, id int64) (*Commission, error)
	// ApproveCommission approves a pending commission now, whatever its
	// hold, crediting the partner's balance; an approved or paid one is
	// returned unchanged. Errors: ENotFound, EConflict (reversed or
	// cancelled by a refund, or rejected by the brand).
	ApproveCommission(ctx context.Context, id int64) (*Commission, error)
	// MarkCommissionPaid pays a commission out (approving it first when
	// pending), recording the payout in the balance; a paid one is returned
	// unchanged. Errors: ENotFound, EConflict.
	MarkCommissionPaid(ctx context.Context, id int64) (*Commission, error)
	// ApproveDue approves up to limit pending commissions whose hold has
	// ended and reports how many it approved. Running it twice, or in two
	// processes at once, approves each commission once.
	ApproveDue(ctx context.Context, limit int) (int, error)
}
