package ledger

import (
	"math"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// TestAmountCeiling: a sale or refund amount above MaxAmountCents is
// refused with the field's message; the ceiling itself is accepted.
func TestAmountCeiling(t *testing.T) {
	now := time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC)
	if MaxAmountCents != 1_000_000_000_000 {
		t.Fatalf("MaxAmountCents = %d", MaxAmountCents)
	}
	for _, tc := range []struct {
		amount int64
		ok     bool
	}{{MaxAmountCents, true}, {MaxAmountCents + 1, false}, {math.MaxInt64, false}} {
		sale := validSale()
		sale.AmountCents = Some(tc.amount)
		s, err := sale.Validate(now)
		if tc.ok && (err != nil || s.AmountCents != tc.amount) {
			t.Fatalf("sale %d: %+v, %v", tc.amount, s, err)
		}
		if !tc.ok && (ErrorCode(err) != EInvalid || ErrorMessage(err) != MsgSaleAmount) {
			t.Fatalf("sale %d: err = %v, want %q", tc.amount, err, MsgSaleAmount)
		}

		refund := RefundRequest{ProgramID: 3, TransactionID: Some("txn_1"), RefundAmountCents: Some(tc.amount)}
		in, err := refund.Validate()
		if tc.ok && (err != nil || in.AmountCents != tc.amount) {
			t.Fatalf("refund %d: %+v, %v", tc.amount, in, err)
		}
		if !tc.ok && (ErrorCode(err) != EInvalid || ErrorMessage(err) != MsgRefundAmount) {
			t.Fatalf("refund %d: err = %v, want %q", tc.amount, err, MsgRefundAmount)
		}
	}
}

// TestCommissionRateDecimalPlaces: commission_rate keeps at most four
// decimal places; more is refused, not rounded (trailing zeros are not
// places and are dropped).
func TestCommissionRateDecimalPlaces(t *testing.T) {
	for _, tc := range []struct {
		rate, typ, stored string
	}{
		{"12.3456", "percent", "12.3456"},
		{"0.0001", "percent", "0.0001"},
		{"12.500000", "percent", "12.5"},
		{"99.99990", "fixed", "99.9999"},
	} {
		in := validInput()
		in.CommissionType = Some(tc.typ)
		in.CommissionRate = Some(decimal.RequireFromString(tc.rate))
		p, err := in.ValidateCreate()
		if err != nil || p.CommissionRate.String() != tc.stored {
			t.Fatalf("%s: %v, %v; want %s", tc.rate, p.CommissionRate, err, tc.stored)
		}
		if exp := p.CommissionRate.Exponent(); exp < -4 {
			t.Fatalf("%s kept exponent %d", tc.rate, exp)
		}
	}
	for _, rate := range []string{"12.34567", "0.00001", "1e-400", "100.00001"} {
		in := validInput()
		in.CommissionRate = Some(decimal.RequireFromString(rate))
		if _, err := in.ValidateCreate(); ErrorCode(err) != EInvalid || ErrorMessage(err) != MsgCommissionRatePlaces {
			t.Fatalf("create %s: err = %v, want %q", rate, err, MsgCommissionRatePlaces)
		}
		p := Program{CommissionType: Percent, CommissionRate: decimal.NewFromInt(10)}
		upd := ProgramInput{CommissionRate: Some(decimal.RequireFromString(rate))}
		if err := upd.ApplyUpdate(&p); ErrorMessage(err) != MsgCommissionRatePlaces || !p.CommissionRate.Equal(decimal.NewFromInt(10)) {
			t.Fatalf("update %s: err = %v, rate %v", rate, err, p.CommissionRate)
		}
	}
}

// TestClampMinor: an exact sum of minor units reads into int64, saturated
// at its bounds rather than failing.
func TestClampMinor(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"0", 0}, {"-1500", -1500}, {"9223372036854775807", math.MaxInt64},
		{"18446744073709551614", math.MaxInt64}, {"-99999999999999999999", math.MinInt64},
	} {
		if got := ClampMinor(decimal.RequireFromString(tc.in)); got != tc.want {
			t.Fatalf("ClampMinor(%s) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// TestAddMinor: a report's totals saturate instead of wrapping around.
func TestAddMinor(t *testing.T) {
	for _, tc := range []struct{ a, b, want int64 }{
		{1, 2, 3}, {-5, 3, -2}, {math.MaxInt64, 1, math.MaxInt64}, {math.MinInt64, -1, math.MinInt64},
		{math.MaxInt64, math.MinInt64, -1},
	} {
		if got := AddMinor(tc.a, tc.b); got != tc.want {
			t.Fatalf("AddMinor(%d, %d) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
