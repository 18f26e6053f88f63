package ledger

import "github.com/shopspring/decimal"

// CheckWithdrawal admits a withdrawal of amount minor units when it is
// positive and, with the open withdrawals, does not exceed the balance.
// The sum is compared in decimal: either side may be near the bounds of
// int64. Errors: EInvalid.
func CheckWithdrawal(amount, open, balance int64) error {
	if amount <= 0 {
		return NewError(EInvalid, MsgWithdrawalAmount)
	}
	if decimal.NewFromInt(amount).Add(decimal.NewFromInt(open)).GreaterThan(decimal.NewFromInt(balance)) {
		return NewError(EInvalid, MsgWithdrawalExceeds)
	}
	return nil
}

// CommissionPayout is what paying out a commission of amount takes from a
// balance: never more than the balance holds (a paid withdrawal may have
// paid part of it already, a refund may have left the partner owing), so
// that what a partner is paid never exceeds what it had earned.
func CommissionPayout(amount, balance int64) int64 {
	return min(amount, max(balance, 0))
}

// CoveredCommissions is how many of a partner's credited, unpaid
// commissions (their amounts, oldest approval first) a paid withdrawal of
// amount covers: whole commissions, in order, while the amount lasts.
func CoveredCommissions(amount int64, commissions []int64) int {
	left := amount
	for i, c := range commissions {
		if c > left {
			return i
		}
		left -= c
	}
	return len(commissions)
}
