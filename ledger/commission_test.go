package ledger

import (
	"math"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

func program(t CommissionType, rate string, cur Currency, months int) *Program {
	return &Program{CommissionType: t, CommissionRate: decimal.RequireFromString(rate), Currency: cur, DurationMonths: months, HoldDays: 30}
}

func TestCommissionAmount(t *testing.T) {
	for _, tc := range []struct {
		desc    string
		p       *Program
		amount  int64
		saleCur Currency
		want    int64
		wantCur Currency
	}{
		{"USD percent whole", program(Percent, "30", USD, 0), 10000, USD, 3000, USD},
		{"USD percent odd cents rounds up", program(Percent, "30", USD, 0), 1999, USD, 600, USD},       // 599.7
		{"USD percent half cent rounds up", program(Percent, "10", USD, 0), 105, USD, 11, USD},         // 10.5
		{"USD percent below half rounds down", program(Percent, "10", USD, 0), 104, USD, 10, USD},      // 10.4
		{"EUR percent fractional rate", program(Percent, "12.5", EUR, 0), 333, EUR, 42, EUR},           // 41.625
		{"EUR recurring percent odd cents", program(RecurringPercent, "7.5", EUR, 12), 1, EUR, 0, EUR}, // 0.075
		{"VND percent", program(Percent, "15", VND, 0), 199999, VND, 30000, VND},                       // 29999.85
		{"VND percent half dong", program(RecurringPercent, "50", VND, 0), 5, VND, 3, VND},             // 2.5
		{"percent pays in the sale's currency", program(Percent, "20", USD, 0), 1001, EUR, 200, EUR},   // 200.2
		{"USD fixed", program(Fixed, "12.5", USD, 0), 999999, USD, 1250, USD},
		{"USD fixed sub-cent rate rounds half-up", program(Fixed, "9.995", USD, 0), 1, USD, 1000, USD},
		{"EUR recurring fixed", program(RecurringFixed, "4.99", EUR, 6), 100, EUR, 499, EUR},
		{"VND fixed", program(Fixed, "25000", VND, 0), 1, VND, 25000, VND},
		{"VND fixed half dong", program(Fixed, "10.5", VND, 0), 1, VND, 11, VND},
		{"fixed pays in the program's currency", program(Fixed, "5", EUR, 0), 100000, VND, 500, EUR},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got, cur := CommissionAmount(tc.p, tc.amount, tc.saleCur)
			if got != tc.want || cur != tc.wantCur {
				t.Fatalf("CommissionAmount = %d %s, want %d %s", got, cur, tc.want, tc.wantCur)
			}
		})
	}
}

func TestCommissionDue(t *testing.T) {
	first := time.Date(2026, 1, 31, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		desc   string
		p      *Program
		saleAt time.Time
		had    bool
		due    bool
		why    string
	}{
		{"one-time first sale", program(Percent, "10", USD, 0), first, false, true, ""},
		{"one-time second sale", program(Fixed, "10", USD, 0), first.Add(time.Hour), true, false, NotDueNotFirst},
		{"one-time ignores duration", program(Percent, "10", USD, 3), first.AddDate(1, 0, 0), false, true, ""},
		{"recurring first sale", program(RecurringPercent, "10", USD, 3), first, false, true, ""},
		{"recurring renewal within window", program(RecurringPercent, "10", USD, 3), first.AddDate(0, 2, 27), true, true, ""},
		{"recurring last instant of window", program(RecurringFixed, "10", USD, 3), first.AddDate(0, 3, 0).Add(-time.Microsecond), true, true, ""},
		{"recurring window ends", program(RecurringFixed, "10", USD, 3), first.AddDate(0, 3, 0), true, false, NotDueDurationOver},
		{"recurring lifetime", program(RecurringPercent, "10", USD, 0), first.AddDate(10, 0, 0), true, true, ""},
		{"recurring for the longest duration", program(RecurringPercent, "10", USD, math.MaxInt32), first.AddDate(1000, 0, 0), true, true, ""},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			due, why := CommissionDue(tc.p, first, tc.saleAt, tc.had)
			if due != tc.due || why != tc.why {
				t.Fatalf("CommissionDue = %v %q, want %v %q", due, why, tc.due, tc.why)
			}
		})
	}
	if got := ApproveAfter(program(Percent, "1", USD, 0), first); !got.Equal(first.AddDate(0, 0, 30)) {
		t.Fatalf("ApproveAfter = %v", got)
	}
}
