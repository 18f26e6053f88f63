package postgres_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
)

// rawPartnerDays counts a partner's events of a program straight from the
// raw tables, per UTC day: real clicks, settled real leads, real sales
// and the commission they earned per currency, as "day clicks=… leads=…
// USD=conv/commission …" lines (days without events left out).
func rawPartnerDays(tb testing.TB, b *ledgerBundle, programID, partnerID int64) string {
	tb.Helper()
	rows, err := b.db.Query(`
		SELECT day::text, kind, cur, n FROM (
			SELECT (occurred_at AT TIME ZONE 'UTC')::date AS day, 'clicks' AS kind, '' AS cur, count(*)::text AS n
				FROM clicks WHERE program_id = $1 AND partner_id = $2 AND NOT is_test GROUP BY 1
			UNION ALL
			SELECT (occurred_at AT TIME ZONE 'UTC')::date, 'leads', '', count(*)::text
				FROM leads WHERE program_id = $1 AND partner_id = $2 AND NOT is_test AND settled_at IS NOT NULL GROUP BY 1
			UNION ALL
			SELECT (s.occurred_at AT TIME ZONE 'UTC')::date, 'sales', s.currency, count(*) || '/' || COALESCE(sum(c.amount_minor), 0)
				FROM sales s LEFT JOIN commissions c ON c.sale_id = s.id
				WHERE s.program_id = $1 AND s.partner_id = $2 AND NOT s.is_test GROUP BY 1, 3
		) x ORDER BY day, kind, cur`, programID, partnerID)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	days := map[string][]string{}
	for rows.Next() {
		var day, kind, cur, n string
		if err := rows.Scan(&day, &kind, &cur, &n); err != nil {
			tb.Fatal(err)
		}
		if kind == "sales" {
			days[day] = append(days[day], cur+"="+n)
		} else {
			days[day] = append(days[day], kind+"="+n)
		}
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return joinDays(days)
}

// statsDays writes a partner's stats in rawPartnerDays's shape.
func statsDays(st *ledger.PartnerStats) string {
	days := map[string][]string{}
	for _, d := range st.Days {
		var cells []string
		if d.Clicks != 0 {
			cells = append(cells, fmt.Sprintf("clicks=%d", d.Clicks))
		}
		if d.Leads != 0 {
			cells = append(cells, fmt.Sprintf("leads=%d", d.Leads))
		}
		var curs []string
		for c, s := range d.Sales {
			if s.Conversions != 0 || s.Commission != 0 {
				curs = append(curs, fmt.Sprintf("%s=%d/%d", c, s.Conversions, s.Commission))
			}
		}
		sort.Strings(curs)
		if cells = append(cells, curs...); len(cells) > 0 {
			days[ledger.FormatDate(d.Date)] = cells
		}
	}
	return joinDays(days)
}

func joinDays(days map[string][]string) string {
	var out []string
	for day, cells := range days {
		out = append(out, day+" "+strings.Join(cells, " "))
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// TestPartnerStatsEqualRawCounts: a partner's stats, read from the
// rollups, are the count of its own raw clicks, settled leads, sales and
// commissions per day; another partner's events of the same program are
// not in them.
func TestPartnerStatsEqualRawCounts(t *testing.T) {
	b := setupLedger(t, "0")
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "10", "USD", 0, 30))
	other, err := b.partners.EnrollPartner(ctx, w.program.ID, "other-stats@partner.example", "Other")
	if err != nil {
		t.Fatal(err)
	}
	otherLink, err := b.partners.CreateLink(ctx, w.program.ID, other.ID, "other-stats", true)
	if err != nil {
		t.Fatal(err)
	}
	ow := saleWorld{program: w.program, partnerID: other.ID, linkID: otherLink.ID}
	lead := func(partnerID int64, at time.Time, settled bool) {
		t.Helper()
		var settledAt *time.Time
		if settled {
			settledAt = &at
		}
		if _, err := b.db.Exec(`INSERT INTO leads (program_id, partner_id, mode, settled_at, settled_by, occurred_at)
			VALUES ($1, $2, 'server', $3, CASE WHEN $3::timestamptz IS NOT NULL THEN 'server_lead' END, $4)`,
			w.program.ID, partnerID, settledAt, at); err != nil {
			t.Fatal(err)
		}
	}
	// Three days of events: 2 days ago, yesterday and today.
	b.clock.Add(-48 * time.Hour)
	for day := range 3 {
		now := b.clock.Now()
		for range day + 1 {
			b.MustClick(t, w, w.partnerID)
		}
		b.MustClick(t, ow, ow.partnerID)
		lead(w.partnerID, now, true)
		lead(w.partnerID, now, day == 1) // one unsettled lead a day, but yesterday's
		lead(ow.partnerID, now, true)
		b.MustSale(t, w, sale{txn: fmt.Sprintf("st-%d-a", day), clickID: b.MustClick(t, w, w.partnerID), amount: 10000 + int64(day)})
		if day == 2 {
			b.MustSale(t, w, sale{txn: "st-2-eur", clickID: b.MustClick(t, w, w.partnerID), amount: 4999, currency: "EUR"})
		}
		b.MustSale(t, ow, sale{txn: fmt.Sprintf("st-%d-o", day), clickID: b.MustClick(t, ow, ow.partnerID), amount: 7000})
		if day < 2 {
			b.clock.Add(24 * time.Hour)
		}
	}

	svc := postgres.NewPortalService(b.db.DB, nil, b.clock.Now)
	for _, c := range []struct {
		desc      string
		partnerID int64
	}{{"Partner", w.partnerID}, {"OtherPartner", other.ID}} {
		t.Run(c.desc, func(t *testing.T) {
			st, err := svc.PartnerStats(ctx, c.partnerID, ledger.PerformanceQuery{ProgramID: w.program.ID, Period: ledger.Period7d})
			if err != nil {
				t.Fatal(err)
			}
			raw := rawPartnerDays(t, b, w.program.ID, c.partnerID)
			if got := statsDays(st); got != raw || raw == "" {
				t.Fatalf("stats from the rollups:\n%s\nraw counts:\n%s", got, raw)
			}
			// The totals are the days' sums.
			var clicks, leads int64
			for _, d := range st.Days {
				clicks, leads = clicks+d.Clicks, leads+d.Leads
			}
			if clicks != st.Total.Clicks || leads != st.Total.Leads {
				t.Fatalf("totals %+v, days sum clicks=%d leads=%d", st.Total, clicks, leads)
			}
			all, err := svc.PartnerStats(ctx, c.partnerID, ledger.PerformanceQuery{ProgramID: w.program.ID, Period: ledger.PeriodAll})
			if err != nil || len(all.Days) != 3 || all.Total.Clicks != st.Total.Clicks {
				t.Fatalf("all: %d days, %+v, %v", len(all.Days), all.Total, err)
			}
		})
	}

	t.Run("ErrNotEnrolled", func(t *testing.T) {
		stranger, err := b.partners.EnrollPartner(ctx, b.MustWorld(t, programInput("percent", "10", "USD", 0, 30)).program.ID,
			"stranger@partner.example", "S")
		if err != nil {
			t.Fatal(err)
		}
		_, err = svc.PartnerStats(ctx, stranger.ID, ledger.PerformanceQuery{ProgramID: w.program.ID, Period: ledger.Period7d})
		if ledger.ErrorCode(err) != ledger.ENotFound {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestPartnerBalancesPerProgram: a partner's balance is the sum of its
// entries of each program and currency; another program's money and the
// pending commissions are kept apart.
func TestPartnerBalancesPerProgram(t *testing.T) {
	b := setupLedger(t, "0")
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "10", "USD", 0, 0))
	res := b.MustSale(t, w, sale{txn: "bal-1", clickID: b.MustClick(t, w, w.partnerID), amount: 12345})
	b.MustSale(t, w, sale{txn: "bal-2", clickID: b.MustClick(t, w, w.partnerID), amount: 1000})
	if _, err := b.balances.ApproveCommission(ctx, *res.CommissionID); err != nil {
		t.Fatal(err)
	}
	svc := postgres.NewPortalService(b.db.DB, nil, b.clock.Now)
	got, err := svc.PartnerBalances(ctx, w.partnerID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ProgramID != w.program.ID || got[0].Currency != ledger.USD || got[0].Balance != 1235 || got[0].Pending != 100 {
		t.Fatalf("balances %+v", got)
	}
}
