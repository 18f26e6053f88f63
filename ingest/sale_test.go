package ingest

import (
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
)

const (
	salePath   = "/api/v1/track/sale"
	refundPath = "/api/v1/track/refund"
)

// mustClick stores a click on the world's link, as the clicks worker
// writes it, and returns its id; partnerID 0 is a click whose partner is
// gone.
func mustClick(t *testing.T, b *testBundle, programID, linkID, partnerID int64) string {
	t.Helper()
	id := ledger.NewClickID(b.clock.Now())
	at, _ := ledger.ClickTime(id)
	var partner *int64
	if partnerID != 0 {
		partner = &partnerID
	}
	if _, err := b.db.Exec(`INSERT INTO clicks (click_id, occurred_at, program_id, partner_id, link_id) VALUES ($1, $2, $3, $4, $5)`,
		id, at, programID, partner, linkID); err != nil {
		t.Fatal(err)
	}
	return id
}

// mustTestKey generates the program's test key as its owner.
func mustTestKey(t *testing.T, b *testBundle, w world) string {
	t.Helper()
	d := mustOK(t, do(t, b.app, req{"POST", "/api/v1/programs/" + itoa(w.programID) + "/api-key",
		map[string]any{"mode": "test"}, bearer(w.ownerToken)}), 200)
	return d["api_key"].(string)
}

func TestSaleEndpointErrors(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	other := MustWorld(t, b.app)
	click := func() string { return mustClick(t, b, w.programID, w.linkID, w.partnerID) }
	old := b.clock.Now().Add(-31 * 24 * time.Hour).Format(time.RFC3339)
	ahead := b.clock.Now().Add(6 * time.Minute).Format(time.RFC3339)

	// Set the scene for the errors that need state: a stored sale, a
	// partner removed from the program, a click without a partner.
	r := do(t, b.app, req{"POST", salePath, map[string]any{"transaction_id": "txn_taken", "amount_cents": 100, "click_id": click()}, bearer(w.liveKey)})
	first := mustSuccess(t, r)
	unenrolled := mustClick(t, b, w.programID, w.linkID, other.partnerID)

	for _, tc := range []struct {
		desc   string
		body   any
		status int
		name   string
		code   string
		msg    string
	}{
		{"not JSON", "transaction_id=1", 400, "BadRequestError", "invalid_request", msgNotJSON},
		{"transaction_id missing", map[string]any{"amount_cents": 100}, 400, "BadRequestError", "invalid_request", "transaction_id is required and must be a string"},
		{"transaction_id number", map[string]any{"transaction_id": 12, "amount_cents": 100}, 400, "BadRequestError", "invalid_request", "transaction_id is required and must be a string"},
		{"amount_cents string", map[string]any{"transaction_id": "t", "amount_cents": "5000"}, 400, "BadRequestError", "invalid_request", "amount_cents is required and must be a positive integer"},
		{"amount_cents fraction", `{"transaction_id": "t", "amount_cents": 12.5}`, 400, "BadRequestError", "invalid_request", "amount_cents is required and must be a positive integer"},
		{"amount_cents zero", map[string]any{"transaction_id": "t", "amount_cents": 0}, 400, "BadRequestError", "invalid_request", "amount_cents is required and must be a positive integer"},
		{"amount_cents overflow", `{"transaction_id": "t", "amount_cents": 99999999999999999999}`, 400, "BadRequestError", "invalid_request", "amount_cents is required and must be a positive integer"},
		{"currency unsupported", map[string]any{"transaction_id": "t", "amount_cents": 100, "currency": "GBP", "click_id": click()}, 422, "UnprocessableEntityError", "unsupported_currency", "currency GBP is not supported"},
		{"occurred_at without offset", map[string]any{"transaction_id": "t", "amount_cents": 100, "occurred_at": "2026-01-01T00:00:00"}, 400, "BadRequestError", "invalid_request", "occurred_at must be an ISO 8601 time within the last 30 days"},
		{"occurred_at too old", map[string]any{"transaction_id": "t", "amount_cents": 100, "occurred_at": old}, 400, "BadRequestError", "invalid_request", "occurred_at must be an ISO 8601 time within the last 30 days"},
		{"occurred_at ahead", map[string]any{"transaction_id": "t", "amount_cents": 100, "occurred_at": ahead}, 400, "BadRequestError", "invalid_request", "occurred_at must be an ISO 8601 time within the last 30 days"},
		{"provider", map[string]any{"transaction_id": "t", "amount_cents": 100, "provider": "venmo"}, 400, "BadRequestError", "invalid_request", "provider must be one of: stripe, paddle, lemonsqueezy, paypal, chargebee, polar, manual"},
		{"provider_payment_id empty", map[string]any{"transaction_id": "t", "amount_cents": 100, "provider_payment_id": ""}, 400, "BadRequestError", "invalid_request", "provider_payment_id must be a string of 1 to 255 characters"},
		{"provider_payment_id long", map[string]any{"transaction_id": "t", "amount_cents": 100, "provider_payment_id": strings.Repeat("p", 256)}, 400, "BadRequestError", "invalid_request", "provider_payment_id must be a string of 1 to 255 characters"},
		{"livemode", map[string]any{"transaction_id": "t", "amount_cents": 100, "livemode": "yes"}, 400, "BadRequestError", "invalid_request", "livemode must be a boolean"},
		{"no customer given", map[string]any{"transaction_id": "t", "amount_cents": 100}, 400, "BadRequestError", "invalid_request", "Customer not found. Provide customer_key or click_id."},
		{"unknown customer_key", map[string]any{"transaction_id": "t", "amount_cents": 100, "customer_key": "ghost"}, 400, "BadRequestError", "no_attribution", "Customer not found. Provide customer_key or click_id."},
		{"unknown click_id", map[string]any{"transaction_id": "t", "amount_cents": 100, "click_id": ledger.NewClickID(b.clock.Now())}, 400, "BadRequestError", "no_attribution", "Customer not found. Provide customer_key or click_id."},
		{"click of another program", map[string]any{"transaction_id": "t", "amount_cents": 100, "click_id": mustClick(t, b, other.programID, other.linkID, other.partnerID)}, 400, "BadRequestError", "no_attribution", "No affiliate attribution found for this customer in this program"},
		{"partner not in program", map[string]any{"transaction_id": "t", "amount_cents": 100, "click_id": unenrolled}, 400, "BadRequestError", "no_attribution", "No partner-program relationship found for this customer"},
		{"duplicate", map[string]any{"transaction_id": "txn_taken", "amount_cents": 100, "click_id": click()}, 409, "ConflictError", "duplicate_transaction", "Duplicate transaction_id. This sale has already been recorded."},
		{"program_id of another program", map[string]any{"additional_data": map[string]any{"test_mode": true, "program_id": other.programID}}, 403, "ForbiddenError", "forbidden", "program_id does not match the API key"},
		{"additional_data not an object", map[string]any{"transaction_id": "t", "amount_cents": 100, "additional_data": "test"}, 400, "BadRequestError", "invalid_request", "additional_data must be an object"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			r := do(t, b.app, req{"POST", salePath, tc.body, bearer(w.liveKey)})
			assertPlatformError(t, r, tc.status, tc.name, tc.msg, tc.code)
			if r.Header.Get("X-Request-ID") == "" || r.Header.Get("X-RateLimit-Limit") != "120" {
				t.Fatalf("headers %v", r.Header)
			}
		})
	}

	t.Run("duplicate names the stored sale", func(t *testing.T) {
		r := do(t, b.app, req{"POST", salePath, map[string]any{"transaction_id": "txn_taken", "amount_cents": 1, "click_id": click()}, bearer(other.liveKey)})
		details := r.Body["error"].(map[string]any)["details"].(map[string]any)
		if r.Status != 409 || id(details["sale_id"]) != id(first["sale_id"]) {
			t.Fatalf("409 across programs: %s", r.Raw)
		}
	})

	t.Run("partnerId required stores the sale", func(t *testing.T) {
		body := map[string]any{"transaction_id": "txn_orphan", "amount_cents": 100, "click_id": mustClick(t, b, w.programID, w.linkID, 0)}
		r := do(t, b.app, req{"POST", salePath, body, bearer(w.liveKey)})
		assertPlatformError(t, r, 400, "BadRequestError", "partnerId required to create commission", "no_attribution")
		r = do(t, b.app, req{"POST", salePath, body, bearer(w.liveKey)})
		assertPlatformError(t, r, 409, "ConflictError", "Duplicate transaction_id. This sale has already been recorded.", "duplicate_transaction")
	})

	t.Run("Failed to create commission", func(t *testing.T) {
		if _, err := b.db.Exec(`
			CREATE FUNCTION refuse_commission() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN RAISE EXCEPTION 'commission store unavailable'; END $$;
			CREATE TRIGGER refuse_commission BEFORE INSERT ON commissions FOR EACH ROW EXECUTE FUNCTION refuse_commission();`); err != nil {
			t.Fatal(err)
		}
		defer b.db.Exec(`DROP TRIGGER refuse_commission ON commissions`)
		body := map[string]any{"transaction_id": "txn_nocomm", "amount_cents": 100, "click_id": click()}
		r := do(t, b.app, req{"POST", salePath, body, bearer(w.liveKey)})
		assertPlatformError(t, r, 500, "InternalServerError", "Failed to create commission", "internal_error")
		r = do(t, b.app, req{"POST", salePath, body, bearer(w.liveKey)})
		assertPlatformError(t, r, 409, "ConflictError", "Duplicate transaction_id. This sale has already been recorded.", "duplicate_transaction")
	})

	// Nothing the refused calls sent was stored.
	var n int
	b.db.QueryRow(`SELECT count(*) FROM sales WHERE processor_event_id = 't'`).Scan(&n)
	if n != 0 {
		t.Fatal("a refused sale was stored")
	}
}

// mustSuccess checks a sale's success body: the fields at the top level
// and again in data.
func mustSuccess(t *testing.T, r response) map[string]any {
	t.Helper()
	if r.Status != 200 || r.Body["success"] != true {
		t.Fatalf("sale: %d %s", r.Status, r.Raw)
	}
	data, _ := r.Body["data"].(map[string]any)
	for _, k := range []string{"success", "sale_id", "commission_id", "message"} {
		if _, ok := r.Body[k]; !ok || data == nil || data[k] != r.Body[k] {
			t.Fatalf("%s missing or different in data: %s", k, r.Raw)
		}
	}
	return r.Body
}

func TestSaleEndpoint(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)

	t.Run("OK", func(t *testing.T) {
		r := do(t, b.app, req{"POST", salePath, map[string]any{
			"transaction_id": "txn_ok", "amount_cents": 4999, "currency": "USD",
			"click_id":    mustClick(t, b, w.programID, w.linkID, w.partnerID),
			"occurred_at": b.clock.Now().Add(-time.Hour).Format(time.RFC3339), "provider": "stripe",
			"provider_payment_id": "pi_1", "livemode": true, "sale_type": "subscription", "is_recurring": true,
			"subscription_id": "sub_1", "subscription_interval": "monthly", "product_id": "pro",
			"line_items": []any{map[string]any{"sku": "pro", "qty": 1}}, "event_name": "purchase",
			"additional_data": map[string]any{"program_id": w.programID},
		}, bearer(w.liveKey)})
		body := mustSuccess(t, r)
		if body["commission_id"] == nil || body["message"] != ledger.MsgSaleRecorded {
			t.Fatalf("body %s", r.Raw)
		}
		cr := do(t, b.app, req{"GET", "/api/operator/v1/commissions/" + itoa(id(body["commission_id"])), nil, operator()})
		d := mustOK(t, cr, 200)
		// 30% of 49.99 is 14.997: 15.00, rendered as a number in major units.
		if !strings.Contains(string(cr.Raw), `"amount":15,`) || d["status"] != "pending" || d["currency"] != "USD" ||
			d["transaction_id"] != "txn_ok" || id(d["partner_id"]) != w.partnerID || d["reason"] != nil {
			t.Fatalf("commission %s", cr.Raw)
		}
		var saleType, provider, meta string
		var recurring, livemode bool
		b.db.QueryRow(`SELECT sale_type, is_recurring, provider, livemode, metadata::text FROM sales WHERE processor_event_id = 'txn_ok'`).
			Scan(&saleType, &recurring, &provider, &livemode, &meta)
		if saleType != "subscription" || !recurring || provider != "stripe" || !livemode ||
			meta != `{"event_name": "purchase", "line_items": [{"qty": 1, "sku": "pro"}], "subscription_interval": "monthly"}` {
			t.Fatalf("stored %s %v %s %v %s", saleType, recurring, provider, livemode, meta)
		}
	})

	t.Run("OKNoCommissionForARepeatSale", func(t *testing.T) {
		click := mustClick(t, b, w.programID, w.linkID, w.partnerID)
		mustSuccess(t, do(t, b.app, req{"POST", salePath, map[string]any{"transaction_id": "txn_a", "amount_cents": 100, "click_id": click}, bearer(w.liveKey)}))
		body := mustSuccess(t, do(t, b.app, req{"POST", salePath, map[string]any{"transaction_id": "txn_b", "amount_cents": 100, "click_id": click}, bearer(w.liveKey)}))
		if body["commission_id"] != nil || body["message"] != ledger.MsgSaleNotFirst {
			t.Fatalf("repeat sale %v", body)
		}
	})

	testMode := func(t *testing.T, r response) {
		t.Helper()
		data, _ := r.Body["data"].(map[string]any)
		if r.Status != 200 || r.Body["success"] != true || data == nil || data["test_mode"] != true ||
			id(data["programId"]) != w.programID || data["eventId"] == nil || r.Body["message"] == nil {
			t.Fatalf("test-mode sale: %d %s", r.Status, r.Raw)
		}
		var isTest bool
		b.db.QueryRow(`SELECT is_test FROM sales WHERE id = $1`, id(data["eventId"])).Scan(&isTest)
		if !isTest {
			t.Fatal("the test sale is not flagged")
		}
	}
	t.Run("OKTestMode", func(t *testing.T) {
		testMode(t, do(t, b.app, req{"POST", salePath, map[string]any{"additional_data": map[string]any{"test_mode": true}}, bearer(w.liveKey)}))
	})
	t.Run("OKTestKey", func(t *testing.T) {
		testMode(t, do(t, b.app, req{"POST", salePath, map[string]any{"transaction_id": "txn_test_key", "amount_cents": 100}, bearer(mustTestKey(t, b, w))}))
	})
	var commissions int
	b.db.QueryRow(`SELECT count(*) FROM commissions c JOIN sales s ON s.id = c.sale_id WHERE s.is_test`).Scan(&commissions)
	if commissions != 0 {
		t.Fatal("a test sale earned a commission")
	}
}
