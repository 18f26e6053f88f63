package ingest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger/postgres"
)

// TestPerformanceThroughRealWrites: the performance endpoint reads what
// the real write paths put in the rollups (clicks stored, sales through
// the API, a partial refund cancelling a pending commission), its numbers match
// the raw rows, groupBy=partner gives the same numbers for the one
// partner, and the rollup verification finds no difference.
func TestPerformanceThroughRealWrites(t *testing.T) {
	b := setup(t)
	b.clock.Set(time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC))
	w := MustWorld(t, b.app) // 30 % of each sale
	for range 3 {
		mustClick(t, b, w.programID, w.linkID, w.partnerID)
	}
	mustSale(t, b, w, "txn_perf_1", 10000) // a click of its own, 30.00
	mustSale(t, b, w, "txn_perf_2", 5000)  // 15.00
	if r := do(t, b.app, req{"POST", refundPath, map[string]any{"transaction_id": "txn_perf_1", "refund_amount_cents": 2500, "refund_id": "r1"}, bearer(w.liveKey)}); r.Status != 200 {
		t.Fatalf("refund: %d %s", r.Status, r.Raw)
	}

	var commission string
	if err := b.db.QueryRow(`SELECT (sum(amount_minor) / 100.0)::numeric(20,2)::text FROM commissions WHERE program_id = $1`, w.programID).Scan(&commission); err != nil {
		t.Fatal(err)
	}
	if commission != "15.00" { // a pending commission partly refunded is cancelled whole: 0, and 15.00
		t.Fatalf("commissions %s", commission)
	}
	read := func(query string) map[string]any {
		t.Helper()
		r := do(t, b.app, req{"GET", "/api/tracking/performance/" + itoa(w.programID) + query, nil, bearer(w.ownerToken)})
		var body map[string]any
		if r.Status != 200 || json.Unmarshal(r.Raw, &body) != nil {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
		return body
	}
	m := read("?period=7d")["metrics"].(map[string]any)
	if m["clicks"] != 5.0 || m["conversions"] != 2.0 || m["revenue"] != 150.0 || m["commission"] != 15.0 || m["partners"] != 1.0 {
		t.Fatalf("metrics %v", m)
	}
	groups := read("?period=7d&groupBy=partner")["data"].([]any)
	if len(groups) != 1 {
		t.Fatalf("groups %v", groups)
	}
	g := groups[0].(map[string]any)
	if g["clicks"] != 5.0 || g["conversions"] != 2.0 || g["revenue"] != 150.0 || g["commission"] != 15.0 {
		t.Fatalf("partner group %v", g)
	}
	diffs, err := postgres.NewRollupService(b.db.DB).VerifyRollups(context.Background(), w.programID, time.Time{}, time.Time{})
	if err != nil || len(diffs) != 0 {
		t.Fatalf("verify: %v %v", diffs, err)
	}
}
