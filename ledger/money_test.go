package ledger

import (
	"testing"

	"github.com/shopspring/decimal"
)

func TestPercentOf(t *testing.T) {
	for _, tc := range []struct {
		desc   string
		amount int64
		rate   string
		want   int64
	}{
		{"whole", 10000, "30", 3000},
		{"half cent rounds up", 4999, "10", 500},  // 499.9
		{"exactly half rounds up", 105, "10", 11}, // 10.5
		{"below half rounds down", 104, "10", 10}, // 10.4
		{"odd cents", 333, "33.333", 111},         // 110.998
		{"fractional rate", 1999, "12.5", 250},    // 249.875
		{"VND whole dong", 199999, "15", 30000},   // 29999.85
		{"VND half", 5, "50", 3},                  // 2.5
		{"hundred percent", 1, "100", 1},
		{"tiny rate", 1, "0.0001", 0},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got := PercentOf(tc.amount, decimal.RequireFromString(tc.rate))
			if got != tc.want {
				t.Fatalf("PercentOf(%d, %s) = %d, want %d", tc.amount, tc.rate, got, tc.want)
			}
		})
	}
}

func TestFractionOf(t *testing.T) {
	for _, tc := range []struct {
		desc             string
		amount, num, den int64
		want             int64
	}{
		{"half", 3000, 5000, 10000, 1500},
		{"third rounds down", 1000, 1, 3, 333},
		{"two thirds rounds up", 1000, 2, 3, 667},
		{"exact half up", 1, 1, 2, 1},
		{"all", 777, 9, 9, 777},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := FractionOf(tc.amount, tc.num, tc.den); got != tc.want {
				t.Fatalf("FractionOf(%d, %d, %d) = %d, want %d", tc.amount, tc.num, tc.den, got, tc.want)
			}
		})
	}
}

func TestMajorMinor(t *testing.T) {
	for _, tc := range []struct {
		desc  string
		major string
		cur   Currency
		minor int64
		exact bool
	}{
		{"USD cents", "12.5", USD, 1250, true},
		{"EUR whole", "7", EUR, 700, true},
		{"USD sub-cent", "9.999", USD, 1000, false},
		{"VND whole", "25000", VND, 25000, true},
		{"VND fraction", "0.5", VND, 1, false},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			d := decimal.RequireFromString(tc.major)
			if got := MajorToMinor(d, tc.cur); got != tc.minor {
				t.Fatalf("MajorToMinor(%s %s) = %d, want %d", tc.major, tc.cur, got, tc.minor)
			}
			if _, exact := ExactMajorToMinor(d, tc.cur); exact != tc.exact {
				t.Fatalf("ExactMajorToMinor(%s %s) exact = %v, want %v", tc.major, tc.cur, exact, tc.exact)
			}
		})
	}
	if got := MinorToMajor(1250, USD).String(); got != "12.5" {
		t.Fatalf("MinorToMajor(1250 USD) = %s, want 12.5", got)
	}
	if got := MinorToMajor(-550, EUR).String(); got != "-5.5" {
		t.Fatalf("MinorToMajor(-550 EUR) = %s, want -5.5", got)
	}
	if got := MinorToMajor(25000, VND).String(); got != "25000" {
		t.Fatalf("MinorToMajor(25000 VND) = %s, want 25000", got)
	}
}
