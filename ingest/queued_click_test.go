package ingest

import (
	"testing"
)

// TestLeadAndSaleRightAfterTheClick sends a lead and a sale naming a click
// the edge acknowledged a moment ago, with no worker running: the click's
// batch is still in the queue, and both are attributed all the same from
// the click's record, writing the click row themselves.
func TestLeadAndSaleRightAfterTheClick(t *testing.T) {
	b := setupClicks(t)
	w := MustWorld(t, b.app)
	code := "pat" + itoa(w.programID)
	ip := map[string]string{"X-Forwarded-For": "198.51.100.20"}

	click := do(t, b.app, req{"POST", "/api/v1/track/click", map[string]any{
		"affiliate_url": "https://acme.example/?aff=" + code}, ip})
	if click.Status != 200 {
		t.Fatalf("click: %d %s", click.Status, click.Raw)
	}
	clickID := click.Body["click_id"].(string)
	if n := b.clickRows(t); n != 0 {
		t.Fatalf("%d click rows before any worker ran, want 0 (the batch is queued)", n)
	}

	// A browser lead a second after landing.
	lead := do(t, b.app, req{"POST", "/api/v1/track/lead", map[string]any{
		"click_id": clickID, "customer_key": "user-1", "email": "buyer@example.com"}, ip})
	if lead.Status != 200 || lead.Body["provisional"] != true {
		t.Fatalf("browser lead: %d %s", lead.Status, lead.Raw)
	}
	// The server confirms it, then the brand reports the sale by click id.
	if r := do(t, b.app, req{"POST", "/api/v1/track/lead", map[string]any{
		"click_id": clickID, "customer_key": "user-1"}, bearer(w.liveKey)}); r.Status != 200 {
		t.Fatalf("server lead: %d %s", r.Status, r.Raw)
	}
	sale := do(t, b.app, req{"POST", "/api/v1/track/sale", map[string]any{
		"transaction_id": "txn-queued-1", "amount_cents": 10000, "click_id": clickID}, bearer(w.liveKey)})
	if sale.Status != 200 || sale.Body["commission_id"] == nil {
		t.Fatalf("sale: %d %s", sale.Status, sale.Raw)
	}

	// One click row, written by the lead from the record, attributed to the
	// link's partner; the commission is that partner's.
	if n := b.clickRows(t); n != 1 {
		t.Fatalf("%d click rows, want 1", n)
	}
	var partnerID int64
	var status string
	if err := b.db.QueryRow(`SELECT c.partner_id, cu.status FROM commissions c JOIN customers cu ON cu.id = c.customer_id
		WHERE c.id = $1`, id(sale.Body["commission_id"])).Scan(&partnerID, &status); err != nil {
		t.Fatal(err)
	}
	if partnerID != w.partnerID || status != "conversion" {
		t.Fatalf("commission partner %d (want %d), customer status %s", partnerID, w.partnerID, status)
	}
	// The sale marks the customer's lead and click converted.
	var leadConverted, clickConverted bool
	b.db.QueryRow(`SELECT converted FROM leads WHERE click_id = $1`, clickID).Scan(&leadConverted)
	b.db.QueryRow(`SELECT converted FROM clicks WHERE click_id = $1`, clickID).Scan(&clickConverted)
	if !leadConverted || !clickConverted {
		t.Fatalf("after the sale: lead converted %v, click converted %v", leadConverted, clickConverted)
	}
}

// TestSaleDoesNotSettleAProvisionalLead: a browser lead on a program that
// requires server-verified leads stays provisional when the brand reports
// a sale through the sale endpoint (the spec: only a server lead or a
// qualifying processor payment settles it), and the customer key it named
// is not saved.
func TestSaleDoesNotSettleAProvisionalLead(t *testing.T) {
	b := setupClicks(t)
	w := MustWorld(t, b.app)
	ip := map[string]string{"X-Forwarded-For": "198.51.100.21"}
	click := do(t, b.app, req{"POST", "/api/v1/track/click", map[string]any{
		"affiliate_url": "https://acme.example/?aff=pat" + itoa(w.programID)}, ip})
	clickID, _ := click.Body["click_id"].(string)
	if click.Status != 200 || clickID == "" {
		t.Fatalf("click: %d %s", click.Status, click.Raw)
	}
	lead := do(t, b.app, req{"POST", "/api/v1/track/lead", map[string]any{
		"click_id": clickID, "customer_key": "user-prov"}, ip})
	if lead.Status != 200 || lead.Body["provisional"] != true {
		t.Fatalf("browser lead: %d %s", lead.Status, lead.Raw)
	}
	sale := do(t, b.app, req{"POST", "/api/v1/track/sale", map[string]any{
		"transaction_id": "txn-prov-1", "amount_cents": 5000, "click_id": clickID}, bearer(w.liveKey)})
	if sale.Status != 200 {
		t.Fatalf("sale: %d %s", sale.Status, sale.Raw)
	}
	var provisional bool
	var settled *string
	if err := b.db.QueryRow(`SELECT provisional, settled_at::text FROM leads WHERE click_id = $1`, clickID).
		Scan(&provisional, &settled); err != nil {
		t.Fatal(err)
	}
	if !provisional || settled != nil {
		t.Fatalf("after the sale the lead is provisional=%v settled_at=%v; a sale must not settle it", provisional, settled)
	}
	var key *string
	b.db.QueryRow(`SELECT customer_key FROM customers WHERE click_id = $1`, clickID).Scan(&key)
	if key != nil {
		t.Fatalf("the provisional lead's key %q was saved by a sale", *key)
	}
	// A sale by the key the provisional lead named finds no customer.
	r := do(t, b.app, req{"POST", "/api/v1/track/sale", map[string]any{
		"transaction_id": "txn-prov-2", "amount_cents": 5000, "customer_key": "user-prov"}, bearer(w.liveKey)})
	if r.Status != 400 || r.Body["error"].(map[string]any)["message"] != "Customer not found. Provide customer_key or click_id." {
		t.Fatalf("sale by the unsaved key: %d %s", r.Status, r.Raw)
	}
}
