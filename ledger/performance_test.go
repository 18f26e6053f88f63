package ledger

import (
	"testing"
	"time"
)

func date(s string) time.Time {
	d, err := time.Parse(dateLayout, s)
	if err != nil {
		panic(err)
	}
	return d
}

func TestPerformanceQueryValidate(t *testing.T) {
	tests := []struct {
		desc    string
		in      PerformanceQueryInput
		want    PerformanceQuery
		wantMsg string
	}{
		{desc: "Defaults", want: PerformanceQuery{ProgramID: 7, Period: Period7d, Limit: 10}},
		{desc: "Period", in: PerformanceQueryInput{Period: Some("90d")}, want: PerformanceQuery{ProgramID: 7, Period: Period90d, Limit: 10}},
		{desc: "All", in: PerformanceQueryInput{Period: Some("all")}, want: PerformanceQuery{ProgramID: 7, Period: PeriodAll, Limit: 10}},
		{desc: "Custom", in: PerformanceQueryInput{DateFrom: Some("2026-02-27"), DateTo: Some("2026-03-02")},
			want: PerformanceQuery{ProgramID: 7, Period: PeriodCustom, From: date("2026-02-27"), To: date("2026-03-02"), Limit: 10}},
		{desc: "CustomOneDay", in: PerformanceQueryInput{DateFrom: Some("2026-03-02"), DateTo: Some("2026-03-02")},
			want: PerformanceQuery{ProgramID: 7, Period: PeriodCustom, From: date("2026-03-02"), To: date("2026-03-02"), Limit: 10}},
		{desc: "Custom366Days", in: PerformanceQueryInput{DateFrom: Some("2024-01-01"), DateTo: Some("2024-12-31")},
			want: PerformanceQuery{ProgramID: 7, Period: PeriodCustom, From: date("2024-01-01"), To: date("2024-12-31"), Limit: 10}},
		{desc: "GroupByLimit", in: PerformanceQueryInput{GroupBy: Some("link"), Limit: Some[int64](100)},
			want: PerformanceQuery{ProgramID: 7, Period: Period7d, GroupBy: GroupByLink, Limit: 100}},
		{desc: "ErrPeriod", in: PerformanceQueryInput{Period: Some("7")}, wantMsg: MsgPerfPeriod},
		{desc: "ErrPeriodCustom", in: PerformanceQueryInput{Period: Some("custom")}, wantMsg: MsgPerfPeriod},
		{desc: "ErrDateFrom", in: PerformanceQueryInput{DateFrom: Some("2026-03-01T00:00:00Z"), DateTo: Some("2026-03-02")}, wantMsg: MsgPerfDateFrom},
		{desc: "ErrDateTo", in: PerformanceQueryInput{DateFrom: Some("2026-03-01"), DateTo: Some("2026-02-30")}, wantMsg: MsgPerfDateTo},
		{desc: "ErrDatePair", in: PerformanceQueryInput{DateFrom: Some("2026-03-01")}, wantMsg: MsgPerfDatePair},
		{desc: "ErrDatePairTo", in: PerformanceQueryInput{DateTo: Some("2026-03-01")}, wantMsg: MsgPerfDatePair},
		{desc: "ErrDateOrder", in: PerformanceQueryInput{DateFrom: Some("2026-03-02"), DateTo: Some("2026-03-01")}, wantMsg: MsgPerfDateOrder},
		{desc: "ErrRange367", in: PerformanceQueryInput{DateFrom: Some("2025-01-01"), DateTo: Some("2026-01-02")}, wantMsg: MsgPerfRange},
		{desc: "ErrGroupBy", in: PerformanceQueryInput{GroupBy: Some("day")}, wantMsg: MsgPerfGroupBy},
		{desc: "ErrLimit0", in: PerformanceQueryInput{Limit: Some[int64](0)}, wantMsg: MsgPerfLimit},
		{desc: "ErrLimit101", in: PerformanceQueryInput{Limit: Some[int64](101)}, wantMsg: MsgPerfLimit},
		{desc: "ErrLimitBad", in: PerformanceQueryInput{Limit: BadInput[int64]()}, wantMsg: MsgPerfLimit},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			got, err := tt.in.Validate(7)
			if tt.wantMsg != "" {
				if ErrorCode(err) != EInvalid || ErrorMessage(err) != tt.wantMsg {
					t.Fatalf("err = %v, want %q", err, tt.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPerformanceWindow(t *testing.T) {
	today, first := date("2026-03-10"), date("2026-01-05")
	tests := []struct {
		desc                       string
		q                          PerformanceQuery
		first                      time.Time
		from, to, prevFrom, prevTo string
		hasPrevious                bool
	}{
		{desc: "7d", q: PerformanceQuery{Period: Period7d}, from: "2026-03-04", to: "2026-03-10", prevFrom: "2026-02-25", prevTo: "2026-03-03", hasPrevious: true},
		{desc: "30d", q: PerformanceQuery{Period: Period30d}, from: "2026-02-09", to: "2026-03-10", prevFrom: "2026-01-10", prevTo: "2026-02-08", hasPrevious: true},
		{desc: "90d", q: PerformanceQuery{Period: Period90d}, from: "2025-12-11", to: "2026-03-10", prevFrom: "2025-09-12", prevTo: "2025-12-10", hasPrevious: true},
		{desc: "All", q: PerformanceQuery{Period: PeriodAll}, from: "2026-01-05", to: "2026-03-10"},
		{desc: "AllFirstDayLater", q: PerformanceQuery{Period: PeriodAll}, first: date("2026-04-01"), from: "2026-03-10", to: "2026-03-10"},
		{desc: "Custom", q: PerformanceQuery{Period: PeriodCustom, From: date("2026-02-27"), To: date("2026-03-02")},
			from: "2026-02-27", to: "2026-03-02", prevFrom: "2026-02-23", prevTo: "2026-02-26", hasPrevious: true},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			f := first
			if !tt.first.IsZero() {
				f = tt.first
			}
			w := tt.q.Window(today, f)
			got := []string{FormatDate(w.From), FormatDate(w.To)}
			want := []string{tt.from, tt.to}
			if w.HasPrevious != tt.hasPrevious {
				t.Fatalf("HasPrevious = %v", w.HasPrevious)
			}
			if w.HasPrevious {
				got = append(got, FormatDate(w.PrevFrom), FormatDate(w.PrevTo))
				want = append(want, tt.prevFrom, tt.prevTo)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("window %v, want %v", got, want)
				}
			}
		})
	}
}

func TestNewTrend(t *testing.T) {
	tests := []struct {
		desc      string
		cur, prev int64
		has       bool
		pct       string // "null" for none
		dir       string
	}{
		{desc: "Up", cur: 12, prev: 10, has: true, pct: "20", dir: TrendUp},
		{desc: "Down", cur: 8, prev: 9, has: true, pct: "-11.1", dir: TrendDown},
		{desc: "HalfAwayUp", cur: 2001, prev: 2000, has: true, pct: "0.1", dir: TrendUp},      // 0.05 → 0.1
		{desc: "HalfAwayDown", cur: 1999, prev: 2000, has: true, pct: "-0.1", dir: TrendDown}, // -0.05 → -0.1
		{desc: "TinyUp", cur: 100001, prev: 100000, has: true, pct: "0", dir: TrendUp},        // 0.001 → 0.0, still up
		{desc: "Same", cur: 5, prev: 5, has: true, pct: "0", dir: TrendNeutral},
		{desc: "ToZero", cur: 0, prev: 5, has: true, pct: "-100", dir: TrendDown},
		{desc: "FromZero", cur: 5, prev: 0, has: true, pct: "null", dir: TrendUp},
		{desc: "BothZero", cur: 0, prev: 0, has: true, pct: "0", dir: TrendNeutral},
		{desc: "NoPrevious", cur: 5, prev: 0, has: false, pct: "null", dir: TrendNeutral},
		{desc: "Third", cur: 4, prev: 3, has: true, pct: "33.3", dir: TrendUp},
		{desc: "TwoThirds", cur: 5, prev: 3, has: true, pct: "66.7", dir: TrendUp},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			tr := NewTrend(tt.cur, tt.prev, tt.has)
			pct := "null"
			if tr.Percent != nil {
				pct = tr.Percent.String()
			}
			if pct != tt.pct || tr.Direction != tt.dir {
				t.Fatalf("got %s %s, want %s %s", pct, tr.Direction, tt.pct, tt.dir)
			}
		})
	}
}

func TestConversionRateAndAverageOrderValue(t *testing.T) {
	rates := []struct {
		conv, clicks int64
		want         string
	}{{0, 0, "0"}, {3, 0, "0"}, {1, 3, "33.33"}, {2, 3, "66.67"}, {1, 8, "12.5"}, {1, 800, "0.13"}, {5, 4, "125"}}
	for _, r := range rates {
		if got := ConversionRate(r.conv, r.clicks).String(); got != r.want {
			t.Errorf("ConversionRate(%d, %d) = %s, want %s", r.conv, r.clicks, got, r.want)
		}
	}
	aovs := []struct {
		s    SalesNumbers
		c    Currency
		want string
	}{
		{SalesNumbers{}, USD, "0"},
		{SalesNumbers{Conversions: 3, Revenue: 10000}, USD, "33.33"},
		{SalesNumbers{Conversions: 3, Revenue: 20000}, EUR, "66.67"},
		{SalesNumbers{Conversions: 2, Revenue: 1001}, USD, "5.01"}, // 500.5 cents → 501
		{SalesNumbers{Conversions: 3, Revenue: 100000}, VND, "33333"},
		{SalesNumbers{Conversions: 2, Revenue: 3}, VND, "2"}, // 1.5 dong → 2
	}
	for _, a := range aovs {
		if got := AverageOrderValue(a.s, a.c).String(); got != a.want {
			t.Errorf("AverageOrderValue(%+v, %s) = %s, want %s", a.s, a.c, got, a.want)
		}
	}
}
