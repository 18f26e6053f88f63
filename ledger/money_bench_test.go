package ledger

import (
	"testing"

	"github.com/shopspring/decimal"
)

// BenchmarkCommissionAmount is the commission arithmetic of every sale:
// a percent of the sale in its currency, or a fixed amount in the
// program's.
func BenchmarkCommissionAmount(b *testing.B) {
	percent := &Program{CommissionType: Percent, CommissionRate: decimal.RequireFromString("12.5"), Currency: "USD"}
	fixed := &Program{CommissionType: Fixed, CommissionRate: decimal.RequireFromString("7.25"), Currency: "EUR"}
	b.Run("Percent", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if amt, cur := CommissionAmount(percent, 4999, "USD"); amt != 625 || cur != "USD" {
				b.Fatalf("12.5%% of 4999 = %d %s", amt, cur)
			}
		}
	})
	b.Run("Fixed", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if amt, cur := CommissionAmount(fixed, 4999, "USD"); amt != 725 || cur != "EUR" {
				b.Fatalf("fixed 7.25 EUR = %d %s", amt, cur)
			}
		}
	})
}

// BenchmarkHashSecret is the hashing half of a key lookup (the other half
// is one indexed read, BenchmarkAuthenticateProgramKey in ledger/postgres).
func BenchmarkHashSecret(b *testing.B) {
	key, _, _ := NewProgramKey(LiveKey)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if len(HashSecret(key)) != 32 {
			b.Fatal("not a SHA-256")
		}
	}
}
