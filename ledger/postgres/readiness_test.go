package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
)

// mustClickFrom stores a real click of the world's partner at `at`, from
// referrer, and returns its id.
func (b *ledgerBundle) mustClickFrom(tb testing.TB, w saleWorld, partnerID, linkID int64, referrer string, at time.Time, test bool) string {
	tb.Helper()
	id := ledger.NewClickID(at)
	occurred, _ := ledger.ClickTime(id)
	if _, err := b.db.Exec(`INSERT INTO clicks (click_id, occurred_at, program_id, partner_id, link_id, referrer_url, is_test)
		VALUES ($1, $2, $3, $4, $5, NULLIF($6, ''), $7)`, id, occurred, w.program.ID, partnerID, linkID, referrer, test); err != nil {
		tb.Fatal(err)
	}
	return id
}

func TestReadinessFactsFromRealData(t *testing.T) {
	b := setupSynthetic(t)
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "30", "USD", 0, 30))
	leads := postgres.NewLeadService(b.db.DB, nil)
	facts := func() *ledger.ReadinessFacts {
		t.Helper()
		f, err := b.readiness.ReadinessFacts(ctx, w.program.ID, b.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	now := b.clock.Now()

	f := facts()
	if f.Program.ID != w.program.ID || f.ProcessorConnected || f.LastClickAt != nil || f.LastLeadAt != nil || f.LastSaleAt != nil ||
		f.ServerSaleAt != nil || f.KeyUsedAt != nil || f.KeyRotatedAt != nil || f.LastChain != nil || f.RealAttributedSale {
		t.Fatalf("a new program's facts: %+v", f)
	}
	r := ledger.EvaluateReadiness(*f, now)
	if r.State != ledger.StateConfiguring || r.Blocker != ledger.GatePayout {
		t.Fatalf("new program readiness %s/%s", r.State, r.Blocker)
	}

	// The tracker's clicks: one two days old, one an hour old, a test click.
	b.mustClickFrom(t, w, w.partnerID, w.linkID, "", now.Add(-48*time.Hour), false)
	recent := b.mustClickFrom(t, w, w.partnerID, w.linkID, "https://news.example/a", now.Add(-time.Hour), false)
	b.mustClickFrom(t, w, w.partnerID, w.linkID, "", now.Add(-time.Minute), true)
	f = facts()
	recentAt, _ := ledger.ClickTime(recent)
	if f.LastClickAt == nil || !f.LastClickAt.Equal(recentAt) || f.Counts24h.Clicks != 1 || f.KeyUsedAt != nil {
		t.Fatalf("after clicks: last %v, counts %+v", f.LastClickAt, f.Counts24h)
	}
	if r := ledger.EvaluateReadiness(*f, now); r.Gates[ledger.GateTracking].Status != ledger.GatePass {
		t.Fatalf("tracking gate %+v", r.Gates[ledger.GateTracking])
	}

	// A server lead with the key, then a test-mode sale on the sale
	// endpoint: the key is used and server-to-server sales are seen.
	if _, err := leads.TrackLead(ctx, ledger.LeadRequest{Mode: ledger.LeadModeServer, ProgramID: w.program.ID, ClickID: recent, CustomerKey: "u-1"}); err != nil {
		t.Fatal(err)
	}
	testSale := ledger.SaleRequest{ProgramID: w.program.ID, TestKey: true}
	if _, err := b.sales.RecordSale(ctx, testSale); err != nil {
		t.Fatal(err)
	}
	f = facts()
	if f.LastLeadAt == nil || f.LastSaleAt == nil || f.ServerSaleAt == nil || f.KeyUsedAt == nil ||
		f.Counts24h != (ledger.EventCounts{Clicks: 1, Leads: 1, Sales: 1}) || f.RealAttributedSale {
		t.Fatalf("after a lead and a test sale: %+v", f)
	}
	if r := ledger.EvaluateReadiness(*f, now); r.State != ledger.StateReady || r.Gates[ledger.GatePayout].Mode != ledger.PayoutS2S {
		t.Fatalf("readiness %s, payout %+v", r.State, r.Gates[ledger.GatePayout])
	}

	// A real attributed sale, a connected processor and a regenerated key.
	b.MustSale(t, w, sale{txn: "real-1", customerKey: "u-1", amount: 9900})
	if _, err := b.partners.ConnectProcessorAccount(ctx, w.program.ID, "acct_123"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.programs.RegenerateProgramKey(ctx, w.program.ID, ledger.LiveKey); err != nil {
		t.Fatal(err)
	}
	f = facts()
	if !f.RealAttributedSale || !f.ProcessorConnected || f.KeyRotatedAt == nil || f.Counts24h.Sales != 2 {
		t.Fatalf("after a real sale: %+v", f)
	}
	if r := ledger.EvaluateReadiness(*f, now); r.State != ledger.StateLiveVerified || !r.IntegrationVerified || r.Gates[ledger.GatePayout].Mode != ledger.PayoutStripe {
		t.Fatalf("readiness %+v", r)
	}

	// 24 hours later the counts are empty and the last times stay.
	b.clock.Add(25 * time.Hour)
	f = facts()
	if f.Counts24h != (ledger.EventCounts{}) || f.LastClickAt == nil || f.LastSaleAt == nil {
		t.Fatalf("a day later: %+v", f)
	}
	if _, err := b.readiness.ReadinessFacts(ctx, 999999, now); ledger.ErrorCode(err) != ledger.ENotFound {
		t.Fatalf("facts of no program: %v", err)
	}
}

// TestRecentClicksFromHours: the 24-hour click count reads the whole UTC
// hours inside the window from the clicks per hour (migration 00028) and
// the two partial hours at its ends from clicks, and counts exactly what
// counting every click of the window does: the window's start excluded,
// its end included, test and future clicks and hours outside left out.
// The verification holds over the hours; a wrong hour shows as a
// difference, a rebuild mends it, and Prune deletes hours past
// ledger.ClickHoursKept.
func TestRecentClicksFromHours(t *testing.T) {
	b := setupSynthetic(t)
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "30", "USD", 0, 30))
	// Twenty minutes and a half into an hour, so that no two of the
	// instants below fall together.
	now := b.clock.Now()
	b.clock.Add(now.Truncate(time.Hour).Add(time.Hour + 20*time.Minute + 30*time.Second).Sub(now))
	now = b.clock.Now()
	start := now.Add(-24 * time.Hour)
	firstWhole, lastPartial := start.Truncate(time.Hour).Add(time.Hour), now.Truncate(time.Hour)
	in := []time.Time{start.Add(time.Second), firstWhole.Add(-time.Second), firstWhole, firstWhole.Add(30 * time.Minute),
		lastPartial.Add(-time.Second), lastPartial, now}
	out := []time.Time{start, start.Add(-time.Hour), now.Add(time.Minute), now.Add(-50 * time.Hour)}
	for _, at := range in {
		b.mustClickFrom(t, w, w.partnerID, w.linkID, "", at, false)
	}
	for _, at := range out {
		b.mustClickFrom(t, w, w.partnerID, w.linkID, "", at, false)
	}
	b.mustClickFrom(t, w, w.partnerID, w.linkID, "", now.Add(-time.Hour), true)
	var raw int64
	if err := b.db.QueryRow(`SELECT count(*) FROM clicks WHERE program_id = $1 AND NOT is_test
		AND occurred_at > $2 AND occurred_at <= $3`, w.program.ID, start, now).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	f, err := b.readiness.ReadinessFacts(ctx, w.program.ID, now)
	if err != nil {
		t.Fatal(err)
	}
	if f.Counts24h.Clicks != int64(len(in)) || raw != int64(len(in)) {
		t.Fatalf("24-hour clicks %d, counted one by one %d, want %d", f.Counts24h.Clicks, raw, len(in))
	}

	rollups := postgres.NewRollupService(b.db.DB)
	verify := func(want string) {
		t.Helper()
		diffs, err := rollups.VerifyRollups(ctx, w.program.ID, time.Time{}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, d := range diffs {
			got += d.String() + "\n"
		}
		if got != want {
			t.Fatalf("differences:\n%swant:\n%s", got, want)
		}
	}
	verify("")
	if _, err := b.db.Exec(`UPDATE rollup_clicks_hourly SET clicks = clicks + 5 WHERE program_id = $1 AND hour = $2`,
		w.program.ID, firstWhole); err != nil {
		t.Fatal(err)
	}
	verify("rollup_clicks_hourly hour=" + firstWhole.UTC().Format("2006-01-02T15:04Z") + " clicks: stored 7, recomputed 2\n")
	if _, err := rollups.RebuildRollups(ctx, w.program.ID); err != nil {
		t.Fatal(err)
	}
	verify("")

	// An hour 50 hours back (a late click's, or one Prune has not reached
	// yet; the rebuild wrote only the hours kept) is past what is kept:
	// Prune deletes it, and only it.
	var hours, old int
	count := func() {
		t.Helper()
		if err := b.db.QueryRow(`SELECT count(*), count(*) FILTER (WHERE hour < $2) FROM rollup_clicks_hourly
			WHERE program_id = $1`, w.program.ID, now.Add(-ledger.ClickHoursKept)).Scan(&hours, &old); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.db.Exec(`INSERT INTO rollup_clicks_hourly (program_id, hour, clicks) VALUES ($1, $2, 1)`,
		w.program.ID, now.Add(-50*time.Hour).Truncate(time.Hour)); err != nil {
		t.Fatal(err)
	}
	count()
	if old != 1 {
		t.Fatalf("%d hours past the kept ones before Prune, want 1", old)
	}
	before := hours
	p, err := postgres.NewHousekeeper(b.db.DB).Prune(ctx, ledger.Retention{})
	if err != nil {
		t.Fatal(err)
	}
	count()
	if p.ClickHours != 1 || old != 0 || hours != before-1 {
		t.Fatalf("pruned %d hours, %d old and %d in all left, want 1, 0, %d", p.ClickHours, old, hours, before-1)
	}
	verify("")
}
