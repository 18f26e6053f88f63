package ingest

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/partnertrack/partnertrack/ledger"
)

// TestAmountsAboveTheCeilingAreRefused: amount_cents and
// refund_amount_cents above ledger.MaxAmountCents are refused with the
// field's 400 invalid_request, and nothing is stored.
func TestAmountsAboveTheCeilingAreRefused(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	mustSale(t, b, w, "txn_ok", 1000)
	for _, amount := range []string{"1000000000001", "9223372036854775807"} {
		r := do(t, b.app, req{"POST", salePath, `{"transaction_id":"txn_big","amount_cents":` + amount +
			`,"click_id":"` + mustClick(t, b, w.programID, w.linkID, w.partnerID) + `"}`, bearer(w.liveKey)})
		assertPlatformError(t, r, 400, "BadRequestError", ledger.MsgSaleAmount, "invalid_request")
		r = do(t, b.app, req{"POST", refundPath, `{"transaction_id":"txn_ok","refund_amount_cents":` + amount + `}`, bearer(w.liveKey)})
		assertPlatformError(t, r, 400, "BadRequestError", ledger.MsgRefundAmount, "invalid_request")
	}
	var sales, refunds int
	b.db.QueryRow(`SELECT count(*) FROM sales WHERE program_id = $1`, w.programID).Scan(&sales)
	b.db.QueryRow(`SELECT count(*) FROM refunds`).Scan(&refunds)
	if sales != 1 || refunds != 0 {
		t.Fatalf("stored %d sales, %d refunds; want 1, 0", sales, refunds)
	}
}

// TestLargestAmountsSumExactly: many sales at the ceiling on a 100 %
// program, approved, read back exactly in the commission, the balance, a
// withdrawal of all of it and the sources report; and rows stored before
// the ceiling existed (2^63-1 each) no longer make those reads fail.
func TestLargestAmountsSumExactly(t *testing.T) {
	b := setupCLI(t)
	w := MustWorld(t, b.app)
	mustOK(t, do(t, b.app, req{"PATCH", settingsPath(w.programID), map[string]any{"commission_rate": 100}, bearer(w.ownerToken)}), 200)
	op := func(method, path string, body any) response {
		return do(t, b.app, req{method, "/api/operator/v1" + path, body, operator()})
	}
	const n = 40
	for i := range n {
		cid := itoa(mustSale(t, b.testBundle, w, "txn_max_"+strconv.Itoa(i), ledger.MaxAmountCents))
		r := op("POST", "/commissions/"+cid+"/approve", nil)
		if d := mustOK(t, r, 200); d["status"] != "approved" || !strings.Contains(string(r.Raw), `"amount":10000000000,`) {
			t.Fatalf("commission %s", r.Raw)
		}
	}
	// 40 × 10^12 cents = 4 × 10^11 dollars.
	partner := "/partners/" + itoa(w.partnerID)
	if r := op("GET", partner+"/balances", nil); r.Status != 200 || !strings.Contains(string(r.Raw), `"data":[{"amount":400000000000,"currency":"USD"}]`) {
		t.Fatalf("balances %d %s", r.Status, r.Raw)
	}
	sources := func() response {
		return do(t, b.app, req{"GET", "/api/v1/programs/me/analytics/sources", nil, bearer(w.liveKey)})
	}
	if r := sources(); r.Status != 200 || strings.Count(string(r.Raw), `"revenue_cents":{"USD":40000000000000}`) != 2 {
		t.Fatalf("sources %d %s", r.Status, r.Raw)
	}
	wr := op("POST", partner+"/withdrawals", map[string]any{"currency": "USD", "amount": 400000000000})
	if d := mustOK(t, wr, 201); d["status"] != "open" || !strings.Contains(string(wr.Raw), `"amount":400000000000,`) {
		t.Fatalf("withdrawal %s", wr.Raw)
	}

	// Rows written before the ceiling: their sums leave int64.
	if _, err := b.db.Exec(`UPDATE sales SET amount_cents = $2 WHERE program_id = $1`, w.programID, int64(math.MaxInt64)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.db.Exec(`UPDATE balance_entries SET amount_minor = $2 WHERE partner_id = $1 AND kind = 'credit'`, w.partnerID, int64(math.MaxInt64)); err != nil {
		t.Fatal(err)
	}
	if r := op("GET", partner+"/balances", nil); r.Status != 200 {
		t.Fatalf("balances of old rows %d %s", r.Status, r.Raw)
	}
	if r := sources(); r.Status != 200 {
		t.Fatalf("sources of old rows %d %s", r.Status, r.Raw)
	}
	mustOK(t, op("POST", partner+"/withdrawals", map[string]any{"currency": "USD", "amount": 1}), 201)
	mustOK(t, op("POST", "/withdrawals/"+itoa(id(mustOK(t, wr, 201)["id"]))+"/mark-paid", nil), 200)
}
