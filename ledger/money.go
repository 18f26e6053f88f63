package ledger

import (
	"math"

	"github.com/shopspring/decimal"
)

// Currency is an ISO 4217 code the service accepts for sales.
type Currency string

// The sale currencies of the spec.
const (
	USD Currency = "USD"
	EUR Currency = "EUR"
	VND Currency = "VND"
)

// Currencies lists the accepted currencies in the spec's order.
var Currencies = []Currency{USD, EUR, VND}

// ParseCurrency returns the currency named by s (exact, upper case) and
// whether it is supported.
func ParseCurrency(s string) (Currency, bool) {
	switch Currency(s) {
	case USD, EUR, VND:
		return Currency(s), true
	}
	return "", false
}

// Exponent is the number of decimals of the currency's minor unit: 2 for
// USD and EUR (cents), 0 for VND.
func (c Currency) Exponent() int32 {
	if c == VND {
		return 0
	}
	return 2
}

// Rounding rule, the only one in the service: an amount computed in minor
// units (a percentage of a sale, a refunded fraction of a commission, a fee)
// is rounded half-up to a whole minor unit. Amounts are never negative
// where the rule applies, so half-up equals half-away-from-zero.

// RoundMinor rounds an exact amount in minor units half-up to an integer.
func RoundMinor(d decimal.Decimal) int64 {
	return d.Round(0).IntPart()
}

// PercentOf returns rate% of amount (minor units), rounded half-up.
func PercentOf(amount int64, rate decimal.Decimal) int64 {
	return RoundMinor(decimal.NewFromInt(amount).Mul(rate).Div(decimal.NewFromInt(100)))
}

// FractionOf returns amount * num / den (minor units), rounded half-up.
// den must be positive.
func FractionOf(amount, num, den int64) int64 {
	return RoundMinor(decimal.NewFromInt(amount).Mul(decimal.NewFromInt(num)).Div(decimal.NewFromInt(den)))
}

// MajorToMinor converts an amount in major units of c into minor units,
// rounded half-up (a fixed commission of 9.999 USD pays 1000 cents).
func MajorToMinor(major decimal.Decimal, c Currency) int64 {
	return RoundMinor(major.Shift(c.Exponent()))
}

// ExactMajorToMinor converts an amount in major units of c into minor units
// and reports whether it was exact (no digits below the minor unit, and
// within the range of int64).
func ExactMajorToMinor(major decimal.Decimal, c Currency) (int64, bool) {
	shifted := major.Shift(c.Exponent())
	if !shifted.Equal(shifted.Truncate(0)) || shifted.GreaterThan(maxMinor) || shifted.LessThan(minMinor) {
		return 0, false
	}
	return shifted.IntPart(), true
}

// MaxAmountCents is the largest amount_cents of a sale and the largest
// refund_amount_cents a refund may carry: 10^12 minor units (ten billion
// dollars or euros). A larger amount is refused with the field's message.
// With every amount at most this, a sum of amounts stays exact in int64
// for more than nine million rows at the ceiling; Postgres sums bigint
// columns in numeric, and ClampMinor reads such a sum back without error.
const MaxAmountCents int64 = 1_000_000_000_000

// ClampMinor reads an exact sum of minor units (a Postgres numeric) into
// int64, saturated at the bounds of int64 instead of failing: below
// MaxAmountCents per row no real sum reaches them, and a read of a
// balance or a report must never fail on old rows stored before the
// ceiling existed.
func ClampMinor(sum decimal.Decimal) int64 {
	switch {
	case sum.GreaterThan(maxMinor):
		return math.MaxInt64
	case sum.LessThan(minMinor):
		return math.MinInt64
	}
	return sum.IntPart()
}

// AddMinor adds two amounts in minor units, saturated at the bounds of
// int64 like ClampMinor (a report's totals over many sums).
func AddMinor(a, b int64) int64 {
	sum := a + b
	switch {
	case a > 0 && b > 0 && sum < 0:
		return math.MaxInt64
	case a < 0 && b < 0 && sum >= 0:
		return math.MinInt64
	}
	return sum
}

// The range of minor units (int64).
var (
	maxMinor = decimal.NewFromInt(math.MaxInt64)
	minMinor = decimal.NewFromInt(math.MinInt64)
)

// MinorToMajor returns minor units of c as an exact decimal in major units
// (1250 USD cents is 12.5).
func MinorToMajor(minor int64, c Currency) decimal.Decimal {
	return decimal.New(minor, -c.Exponent())
}
