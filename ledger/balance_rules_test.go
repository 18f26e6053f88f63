package ledger

import (
	"math"
	"testing"
)

func TestCheckWithdrawal(t *testing.T) {
	for _, tc := range []struct {
		amount, open, balance int64
		want                  string
	}{
		{1000, 0, 1000, ""},
		{600, 400, 1000, ""},
		{601, 400, 1000, MsgWithdrawalExceeds},
		{1, 0, 0, MsgWithdrawalExceeds},
		{1, 0, -50, MsgWithdrawalExceeds},
		{0, 0, 1000, MsgWithdrawalAmount},
		{-5, 0, 1000, MsgWithdrawalAmount},
		{math.MaxInt64, math.MaxInt64, math.MaxInt64, MsgWithdrawalExceeds}, // the sum overflows int64
	} {
		err := CheckWithdrawal(tc.amount, tc.open, tc.balance)
		if ErrorMessage(err) != tc.want || (err != nil && ErrorCode(err) != EInvalid) {
			t.Errorf("CheckWithdrawal(%d, %d, %d) = %v, want %q", tc.amount, tc.open, tc.balance, err, tc.want)
		}
	}
}

func TestCommissionPayout(t *testing.T) {
	for _, tc := range []struct{ amount, balance, want int64 }{
		{500, 1000, 500},
		{500, 300, 300}, // a withdrawal paid part of it
		{500, 0, 0},     // paid already
		{500, -200, 0},  // a refund left the partner owing
		{0, 1000, 0},    // cancelled to zero
	} {
		if got := CommissionPayout(tc.amount, tc.balance); got != tc.want {
			t.Errorf("CommissionPayout(%d, %d) = %d, want %d", tc.amount, tc.balance, got, tc.want)
		}
	}
}

func TestCoveredCommissions(t *testing.T) {
	for _, tc := range []struct {
		amount      int64
		commissions []int64
		want        int
	}{
		{1000, []int64{400, 600, 100}, 2},
		{999, []int64{400, 600}, 1},
		{100, []int64{400, 50}, 0}, // whole commissions in order: a later smaller one waits
		{5000, []int64{400, 600}, 2},
		{0, []int64{1}, 0},
		{100, nil, 0},
	} {
		if got := CoveredCommissions(tc.amount, tc.commissions); got != tc.want {
			t.Errorf("CoveredCommissions(%d, %v) = %d, want %d", tc.amount, tc.commissions, got, tc.want)
		}
	}
}
