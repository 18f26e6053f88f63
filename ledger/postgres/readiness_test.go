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
