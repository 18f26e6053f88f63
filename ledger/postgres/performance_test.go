package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
)

// perfToday is the clock of the performance tests: 2026-03-31 in UTC.
var perfToday = time.Date(2026, 3, 31, 12, 0, 0, 0, time.UTC)

// mustPerfRollups fills a program's rollups over the days before today
// (today included) for partners partners with two links each: every
// link has clicks every day, one in five partners sells every day in the
// program's currency and one in ten also in EUR. Partner and link ids
// are synthetic (the rollups carry no foreign keys to them).
func mustPerfRollups(tb testing.TB, db *pgtest.DB, programID int64, days, partners int) {
	tb.Helper()
	_, err := db.Exec(`
		INSERT INTO rollup_traffic_daily (program_id, day, partner_id, link_id, clicks, visitors, leads)
		SELECT $1, $2::date - d, p, p * 10 + l, 20 + (p + d) % 7, 15 + (p + d) % 5, (p + d) % 3
		FROM generate_series(0, $3 - 1) d, generate_series(1, $4) p, generate_series(0, 1) l`,
		programID, perfToday, days, partners)
	if err == nil {
		_, err = db.Exec(`
			INSERT INTO rollup_sales_daily (program_id, day, partner_id, link_id, currency, conversions, revenue_minor, commission_minor)
			SELECT $1, $2::date - d, p, p * 10, c, 1 + (p + d) % 3, 1999 * (1 + (p + d) % 3), 600 * (1 + (p + d) % 3)
			FROM generate_series(0, $3 - 1) d, generate_series(1, $4) p, unnest(ARRAY['USD', 'EUR']) c
			WHERE p % 5 = 0 AND (c = 'USD' OR p % 10 = 0)`,
			programID, perfToday, days, partners)
	}
	if err == nil {
		_, err = db.Exec(`
			INSERT INTO rollup_visitors_daily (program_id, day, visitors)
			SELECT $1, $2::date - d, $4 * 20 FROM generate_series(0, $3 - 1) d`, programID, perfToday, days, partners)
	}
	// The program-wide rows (migration 00023): the sums of the per-link rows.
	if err == nil {
		_, err = db.Exec(`
			UPDATE rollup_visitors_daily v SET clicks = t.clicks, leads = t.leads
			FROM (SELECT day, sum(clicks) AS clicks, sum(leads) AS leads FROM rollup_traffic_daily WHERE program_id = $1 GROUP BY day) t
			WHERE v.program_id = $1 AND v.day = t.day`, programID)
	}
	if err == nil {
		_, err = db.Exec(`
			INSERT INTO rollup_program_sales_daily (program_id, day, currency, conversions, revenue_minor, commission_minor)
			SELECT program_id, day, currency, sum(conversions), sum(revenue_minor), sum(commission_minor)
			FROM rollup_sales_daily WHERE program_id = $1 GROUP BY 1, 2, 3`, programID)
	}
	// The active partners (migration 00024): every partner every day.
	if err == nil {
		_, err = db.Exec(`
			INSERT INTO rollup_partners_daily (program_id, day, partner_id)
			SELECT DISTINCT program_id, day, partner_id FROM rollup_traffic_daily WHERE program_id = $1`, programID)
	}
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := db.Exec(`ANALYZE rollup_traffic_daily; ANALYZE rollup_sales_daily; ANALYZE rollup_visitors_daily;
		ANALYZE rollup_program_sales_daily; ANALYZE rollup_partners_daily`); err != nil {
		tb.Fatal(err)
	}
}

// TestPerformanceTwoQueries: a performance request is two round trips
// (the program's facts, then the window) whatever the period or
// grouping, and the days of a window add up to its totals.
func TestPerformanceTwoQueries(t *testing.T) {
	t.Parallel()
	db, trips := pgtest.NewCounting(t)
	f := db.MustFixture(t, "perf-trips")
	mustPerfRollups(t, db, f.ProgramID, 40, 20)
	svc := postgres.NewPerformanceService(db.DB, func() time.Time { return perfToday })
	for _, q := range []ledger.PerformanceQuery{
		{Period: ledger.Period7d}, {Period: ledger.Period30d}, {Period: ledger.PeriodAll},
		{Period: ledger.Period30d, GroupBy: ledger.GroupByPartner, Limit: 5},
		{Period: ledger.PeriodAll, GroupBy: ledger.GroupByLink, Limit: 100},
	} {
		q.ProgramID = f.ProgramID
		trips.Reset()
		r, err := svc.Performance(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if n := trips.Count(); n != 2 {
			t.Errorf("%+v: %d round trips, want 2: %v", q, n, trips.Statements())
		}
		if q.GroupBy != "" {
			all := 20 // partners
			if q.GroupBy == ledger.GroupByLink {
				all = 40
			}
			if len(r.Groups) != min(q.Limit, all) {
				t.Errorf("%+v: %d groups", q, len(r.Groups))
			}
			continue
		}
		var sum ledger.PerformanceNumbers
		for _, d := range r.Days {
			sum.Clicks += d.Clicks
			sum.Visitors += d.Visitors
			for c, s := range d.Sales {
				sum.AddSales(c, s)
			}
		}
		if sum.Clicks != r.Total.Clicks || sum.Visitors != r.Total.Visitors || sum.Conversions() != r.Total.Conversions() ||
			sum.Sales[ledger.USD] != r.Total.Sales[ledger.USD] || sum.Sales[ledger.EUR] != r.Total.Sales[ledger.EUR] {
			t.Errorf("%+v: days add up to %+v, totals %+v", q, sum, r.Total)
		}
		if q.Period == ledger.PeriodAll && (len(r.Days) != 40 || r.Window.HasPrevious) {
			t.Errorf("all: %d days, previous %v", len(r.Days), r.Window.HasPrevious)
		}
		if r.Total.Partners != 20 {
			t.Errorf("%+v: %d partners", q, r.Total.Partners)
		}
	}
	if _, err := svc.Performance(context.Background(), ledger.PerformanceQuery{ProgramID: f.ProgramID + 1000, Period: ledger.Period7d}); ledger.ErrorCode(err) != ledger.ENotFound {
		t.Fatalf("no program: %v", err)
	}
}

// BenchmarkPerformance reads a program with 180 days × 500 partners × 2
// links of rollups (180,000 traffic rows, 27,000 sales rows): 90 days
// (with the previous 90), all, and the top 10 partners and links over 90
// days.
func BenchmarkPerformance(b *testing.B) {
	db := pgtest.New(b)
	f := db.MustFixture(b, "perf-bench")
	mustPerfRollups(b, db, f.ProgramID, 180, 500)
	svc := postgres.NewPerformanceService(db.DB, func() time.Time { return perfToday })
	for _, bc := range []struct {
		name string
		q    ledger.PerformanceQuery
	}{
		{"90d", ledger.PerformanceQuery{Period: ledger.Period90d}},
		{"7d", ledger.PerformanceQuery{Period: ledger.Period7d}},
		{"all", ledger.PerformanceQuery{Period: ledger.PeriodAll}},
		{"groupBy=partner", ledger.PerformanceQuery{Period: ledger.Period90d, GroupBy: ledger.GroupByPartner, Limit: 10}},
		{"groupBy=link", ledger.PerformanceQuery{Period: ledger.Period90d, GroupBy: ledger.GroupByLink, Limit: 10}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			q := bc.q
			q.ProgramID = f.ProgramID
			for i := 0; i < b.N; i++ {
				if _, err := svc.Performance(context.Background(), q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
