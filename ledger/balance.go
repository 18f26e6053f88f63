package ledger

import (
	"context"
	"time"

	"github.com/shopspring/decimal"
)

// Kinds of balance entries. A partner's balance in a currency is the sum of
// its entries, which are only ever appended: credits (positive) when a
// commission is approved, deductions (negative) when a credited commission
// is refunded, payouts (negative) when money is paid out.
const (
	EntryCredit    = "credit"
	EntryDeduction = "deduction"
	EntryPayout    = "payout"
)

// Withdrawal statuses.
const (
	WithdrawalOpen      = "open"
	WithdrawalPaid      = "paid"
	WithdrawalCancelled = "cancelled"
)

// Balance is a partner's balance in one currency, in minor units; it may
// be negative after refunds of commissions already paid out.
type Balance struct {
	PartnerID   int64
	Currency    Currency
	AmountMinor int64
}

// Withdrawal is a partner's request to be paid out of the balance.
// RequestedMinor is what was asked; AmountMinor is what is still to be paid,
// lowered when refunds leave the balance short of the open withdrawals.
type Withdrawal struct {
	ID             int64
	PartnerID      int64
	Currency       Currency
	RequestedMinor int64
	AmountMinor    int64
	Status         string
	CreatedAt      time.Time
	PaidAt         *time.Time
}

// Messages of the balance services.
const (
	MsgWithdrawalCurrency  = "currency must be one of: USD, EUR, VND"
	MsgWithdrawalAmount    = "amount must be a positive number in major units of the currency"
	MsgWithdrawalExceeds   = "amount exceeds the available balance"
	MsgWithdrawalCancelled = "withdrawal is cancelled and cannot be paid"
)

// WithdrawalAmount converts a requested amount in major units of c into
// minor units; it must be positive and exact to the minor unit.
// Errors: EInvalid.
func WithdrawalAmount(major decimal.Decimal, c Currency) (int64, error) {
	minor, exact := ExactMajorToMinor(major, c)
	if !exact || minor <= 0 {
		return 0, NewError(EInvalid, MsgWithdrawalAmount)
	}
	return minor, nil
}

// FitWithdrawals returns the new amounts of a partner's open withdrawals
// (newest first) so that together they do not exceed the balance (or 0
// when it is negative): the newest are lowered first.
func FitWithdrawals(balance int64, open []int64) []int64 {
	total := int64(0)
	for _, a := range open {
		total += a
	}
	excess := total - max(balance, 0)
	out := make([]int64, len(open))
	for i, a := range open {
		cut := min(a, max(excess, 0))
		out[i] = a - cut
		excess -= cut
	}
	return out
}

// BalanceService reads balances and manages withdrawals.
type BalanceService interface {
	// Balances returns a partner's balance in every currency it has an
	// account in. Errors: ENotFound (partner).
	Balances(ctx context.Context, partnerID int64) ([]Balance, error)
	// CreateWithdrawal opens a withdrawal of amountMinor, which must not
	// exceed the balance less the open withdrawals. Errors: ENotFound,
	// EInvalid.
	CreateWithdrawal(ctx context.Context, partnerID int64, c Currency, amountMinor int64) (*Withdrawal, error)
	// Withdrawal returns one withdrawal. Errors: ENotFound.
	Withdrawal(ctx context.Context, id int64) (*Withdrawal, error)
	// MarkWithdrawalPaid pays an open withdrawal out of the balance; the
	// credited commissions it covers, oldest first, become paid out. A
	// paid one is returned unchanged. Errors: ENotFound, EConflict
	// (cancelled).
	MarkWithdrawalPaid(ctx context.Context, id int64) (*Withdrawal, error)
}
