package ledger

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

func TestDigestDay(t *testing.T) {
	day := func(s string) time.Time { d, _ := time.Parse(time.DateOnly, s); return d }
	for _, tc := range []struct {
		desc string
		now  time.Time
		want time.Time
	}{
		{"OK after the grace", time.Date(2026, 3, 2, 0, 15, 0, 0, time.UTC), day("2026-03-01")},
		{"OK late in the day", time.Date(2026, 3, 2, 23, 59, 0, 0, time.UTC), day("2026-03-01")},
		{"OK within the grace is the day before", time.Date(2026, 3, 2, 0, 14, 59, 0, time.UTC), day("2026-02-28")},
		{"OK another zone is read in UTC", time.Date(2026, 3, 2, 1, 0, 0, 0, time.FixedZone("X", 2*3600)), day("2026-02-28")},
	} {
		if got := DigestDay(tc.now); !got.Equal(tc.want) {
			t.Errorf("%s: DigestDay(%v) = %v, want %v", tc.desc, tc.now, got, tc.want)
		}
	}
}

func TestPlanCommissionDigest(t *testing.T) {
	d := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	rows := []DigestRow{
		{ProgramID: 9, ProgramName: "Zeta", Currency: USD, Count: 1, SumMinor: decimal.NewFromInt(500)},
		{ProgramID: 4, ProgramName: "Acme", Currency: USD, Count: 2, SumMinor: decimal.NewFromInt(123450)},
		{ProgramID: 4, ProgramName: "Acme", Currency: EUR, Count: 1, SumMinor: decimal.NewFromInt(99)},
		{ProgramID: 5, ProgramName: "Acme", Currency: VND, Count: 3, SumMinor: decimal.NewFromInt(150000)},
	}
	got, ok := PlanCommissionDigest("Ana", d, rows, "https://track.example/partner/")
	want := CommissionDigestEmail{PartnerName: "Ana", Day: "2026-03-01", DashboardURL: "https://track.example/partner/",
		Programs: []DigestProgram{
			{ProgramName: "Acme", Count: 3, Totals: []DigestAmount{{"EUR", "0.99", "€0.99"}, {"USD", "1234.50", "$1,234.50"}}},
			{ProgramName: "Acme", Count: 3, Totals: []DigestAmount{{"VND", "150000", "150,000₫"}}},
			{ProgramName: "Zeta", Count: 1, Totals: []DigestAmount{{"USD", "5.00", "$5.00"}}},
		}}
	if !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, %v\nwant %+v", got, ok, want)
	}
	if err := got.Validate(); err != nil {
		t.Fatalf("the plan does not validate: %v", err)
	}
	if _, ok := PlanCommissionDigest("Ana", d, nil, "https://track.example/partner/"); ok {
		t.Error("an empty day plans an email")
	}
	if _, ok := PlanCommissionDigest("Ana", d, []DigestRow{{ProgramID: 1, ProgramName: "A", Currency: USD}}, "https://x.example/"); ok {
		t.Error("a row of no commission plans an email")
	}
}

func TestCommissionDigestEmailValidate(t *testing.T) {
	ok := CommissionDigestEmail{PartnerName: "Ana", Day: "2026-03-01", DashboardURL: "https://x.example/partner/",
		Programs: []DigestProgram{{ProgramName: "Acme", Count: 1, Totals: []DigestAmount{{"USD", "1.00", "$1.00"}}}}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for desc, change := range map[string]func(*CommissionDigestEmail){
		"ErrNoName":     func(e *CommissionDigestEmail) { e.PartnerName = "" },
		"ErrDay":        func(e *CommissionDigestEmail) { e.Day = "yesterday" },
		"ErrNoPrograms": func(e *CommissionDigestEmail) { e.Programs = nil },
		"ErrURL":        func(e *CommissionDigestEmail) { e.DashboardURL = "javascript:alert(1)" },
		"ErrCurrency": func(e *CommissionDigestEmail) {
			e.Programs = []DigestProgram{{ProgramName: "A", Count: 1, Totals: []DigestAmount{{"GBP", "1", "1"}}}}
		},
		"ErrCount": func(e *CommissionDigestEmail) {
			e.Programs = []DigestProgram{{ProgramName: "A", Totals: []DigestAmount{{"USD", "1", "1"}}}}
		},
	} {
		e := ok
		change(&e)
		if e.Validate() == nil {
			t.Errorf("%s: validates", desc)
		}
	}
}

func TestDigestDays(t *testing.T) {
	now := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	var got []string
	for _, d := range DigestDays(now) {
		got = append(got, d.Format(time.DateOnly))
	}
	if want := "2026-11-23 2026-11-24 2026-11-25"; strings.Join(got, " ") != want {
		t.Fatalf("DigestDays = %v, want %s", got, want)
	}
}
