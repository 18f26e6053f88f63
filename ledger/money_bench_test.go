package ledger

import (
	"testing"

	"github.com/shopspring/decimal"
)

// Commission arithmetic of every sale and refund: exact decimals, one
// half-up rounding to the minor unit.

func BenchmarkCommissionAmountPercent(b *testing.B) {
	p := &Program{CommissionType: Percent, CommissionRate: decimal.RequireFromString("12.5"), Currency: "EUR"}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if amount, _ := CommissionAmount(p, 333, "EUR"); amount != 42 {
			b.Fatalf("amount %d", amount)
		}
	}
}

func BenchmarkCommissionAmountFixed(b *testing.B) {
	p := &Program{CommissionType: Fixed, CommissionRate: decimal.RequireFromString("9.995"), Currency: "EUR"}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if amount, _ := CommissionAmount(p, 333, "EUR"); amount != 1000 {
			b.Fatalf("amount %d", amount)
		}
	}
}

func BenchmarkRefundShareOf(b *testing.B) {
	c := CommissionState{Status: CommissionApproved, OriginalMinor: 1001, AmountMinor: 667, Credited: true} // after the first third
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if p := RefundShareOf(c, 3000, 1000, 1000); p.DeductionMinor != 333 {
			b.Fatalf("deduction %d", p.DeductionMinor)
		}
	}
}

// BenchmarkHashSecret is the hashing half of a key lookup (the other half
// is one indexed read, BenchmarkAuthenticateProgramKey in ledger/postgres/hotpath_test.go).
func BenchmarkHashSecret(b *testing.B) {
	key, _, _ := NewProgramKey(LiveKey)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if len(HashSecret(key)) != 32 {
			b.Fatal("not a SHA-256")
		}
	}
}
