package ingest

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/notify"
)

// mustSale records a sale on a fresh click and returns its commission id.
func mustSale(t *testing.T, b *testBundle, w world, txn string, amount int64) int64 {
	t.Helper()
	body := mustSuccess(t, do(t, b.app, req{"POST", salePath, map[string]any{
		"transaction_id": txn, "amount_cents": amount, "click_id": mustClick(t, b, w.programID, w.linkID, w.partnerID)}, bearer(w.liveKey)}))
	return id(body["commission_id"])
}

// assertBody checks a top-level body: exactly these keys, these values
// (numbers compared as JSON text).
func assertBody(t *testing.T, r response, want map[string]string) {
	t.Helper()
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Raw)
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal(r.Raw, &got); err != nil {
		t.Fatal(err)
	}
	keys := func(m map[string]json.RawMessage) string {
		var k []string
		for key := range m {
			k = append(k, key)
		}
		sort.Strings(k)
		return strings.Join(k, ",")
	}
	wantRaw := map[string]json.RawMessage{}
	for k, v := range want {
		wantRaw[k] = json.RawMessage(v)
	}
	if keys(got) != keys(wantRaw) {
		t.Fatalf("keys %s, want %s: %s", keys(got), keys(wantRaw), r.Raw)
	}
	for k, v := range want {
		if string(got[k]) != v {
			t.Fatalf("%s = %s, want %s: %s", k, got[k], v, r.Raw)
		}
	}
}

func TestRefundEndpoint(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app) // 30% of the sale, USD
	other := MustWorld(t, b.app)
	refund := func(body any) response { return do(t, b.app, req{"POST", refundPath, body, bearer(w.liveKey)}) }

	t.Run("TestKeyAnswersBeforeValidation", func(t *testing.T) {
		cid := mustSale(t, b, w, "txn_test_key", 1000)
		testKey := mustTestKey(t, b, w)
		for _, body := range []any{"not json", map[string]any{}, map[string]any{"transaction_id": "txn_test_key", "reason": "nonsense"}} {
			assertBody(t, do(t, b.app, req{"POST", refundPath, body, bearer(testKey)}), map[string]string{"success": "true", "test": "true"})
		}
		var refunded int64
		b.db.QueryRow(`SELECT refunded_cents FROM sales WHERE processor_event_id = 'txn_test_key'`).Scan(&refunded)
		if refunded != 0 || mustStatus(t, b, cid) != "pending" {
			t.Fatal("a test-key refund changed the sale")
		}
	})

	t.Run("Errors", func(t *testing.T) {
		mustSale(t, b, other, "txn_other_program", 1000)
		for _, tc := range []struct {
			desc   string
			body   any
			status int
			name   string
			code   string
			msg    string
		}{
			{"not JSON", "[]", 400, "BadRequestError", "invalid_request", msgNotJSON},
			{"transaction_id missing", map[string]any{"refund_amount_cents": 100}, 400, "BadRequestError", "invalid_request", "transaction_id is required"},
			{"transaction_id number", map[string]any{"transaction_id": 7}, 400, "BadRequestError", "invalid_request", "transaction_id is required"},
			{"refund_amount_cents string", map[string]any{"transaction_id": "x", "refund_amount_cents": "100"}, 400, "BadRequestError", "invalid_request", ledger.MsgRefundAmount},
			{"refund_id empty", map[string]any{"transaction_id": "x", "refund_amount_cents": 100, "refund_id": ""}, 400, "BadRequestError", "invalid_request", ledger.MsgRefundID},
			{"reason", map[string]any{"transaction_id": "x", "reason": "fraud"}, 400, "BadRequestError", "invalid_request", "reason must be refund or chargeback"},
			{"unknown sale", map[string]any{"transaction_id": "txn_nowhere"}, 404, "NotFoundError", "not_found", "Sale not found for transaction_id"},
			{"another program's sale", map[string]any{"transaction_id": "txn_other_program"}, 404, "NotFoundError", "not_found", "Sale not found for transaction_id"},
		} {
			t.Run(tc.desc, func(t *testing.T) {
				r := refund(tc.body)
				assertPlatformError(t, r, tc.status, tc.name, tc.msg, tc.code)
				if r.Header.Get("X-Request-ID") == "" {
					t.Fatal("no X-Request-ID")
				}
			})
		}
	})

	t.Run("Responses", func(t *testing.T) {
		cid := mustSale(t, b, w, "txn_r", 3333) // commission 1000 (999.9)
		c := itoa(cid)
		mustOK(t, do(t, b.app, req{"POST", "/api/operator/v1/commissions/" + c + "/approve", nil, operator()}), 200)
		assertBody(t, refund(map[string]any{"transaction_id": "txn_r", "refund_amount_cents": 1111, "refund_id": "re_1", "reason": "refund"}),
			map[string]string{"success": "true", "status": `"refunded"`, "deductionAmount": "3.33", "commission_id": c})
		assertBody(t, refund(map[string]any{"transaction_id": "txn_r", "refund_amount_cents": 1111, "refund_id": "re_1"}),
			map[string]string{"success": "true", "status": `"skipped"`, "reason": `"refund_id already applied"`, "commission_id": c})
		assertBody(t, refund(map[string]any{"transaction_id": "txn_r", "refund_amount_cents": 0, "refund_id": "ignored", "refund_reason": "Order cancelled"}),
			map[string]string{"success": "true", "status": `"reversed"`, "deductionAmount": "6.67", "commission_id": c})
		assertBody(t, refund(map[string]any{"transaction_id": "txn_r"}),
			map[string]string{"success": "true", "status": `"skipped"`, "reason": `"already reversed"`, "commission_id": c})
		d := mustOK(t, do(t, b.app, req{"GET", "/api/operator/v1/commissions/" + c, nil, operator()}), 200)
		if d["status"] != "reversed" || d["reason"] != "Order cancelled" {
			t.Fatalf("commission %v", d)
		}

		// A repeat sale of a one-time program earns nothing to refund.
		click := mustClick(t, b, w.programID, w.linkID, w.partnerID)
		mustSuccess(t, do(t, b.app, req{"POST", salePath, map[string]any{"transaction_id": "txn_nc1", "amount_cents": 100, "click_id": click}, bearer(w.liveKey)}))
		mustSuccess(t, do(t, b.app, req{"POST", salePath, map[string]any{"transaction_id": "txn_nc2", "amount_cents": 100, "click_id": click}, bearer(w.liveKey)}))
		assertBody(t, refund(map[string]any{"transaction_id": "txn_nc2", "reason": "chargeback"}),
			map[string]string{"success": "true", "status": `"no_commission"`, "message": `"` + ledger.MsgRefundNoCommission + `"`})
	})
}

func mustStatus(t *testing.T, b *testBundle, commissionID int64) string {
	t.Helper()
	var s string
	if err := b.db.QueryRow(`SELECT status FROM commissions WHERE id = $1`, commissionID).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestOperatorLedgerAPI(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	op := func(method, path string, body any) response {
		return do(t, b.app, req{method, "/api/operator/v1" + path, body, operator()})
	}
	partner := "/partners/" + itoa(w.partnerID)

	c1 := itoa(mustSale(t, b, w, "txn_1", 5000)) // 15.00
	c2 := itoa(mustSale(t, b, w, "txn_2", 2000)) // 6.00
	if d := mustOK(t, op("POST", "/commissions/"+c1+"/approve", nil), 200); d["status"] != "approved" || d["credited"] != true {
		t.Fatalf("approve %v", d)
	}
	r := op("GET", partner+"/balances", nil)
	if r.Status != 200 || !strings.Contains(string(r.Raw), `"data":[{"amount":15,"currency":"USD"}]`) {
		t.Fatalf("balances %d %s", r.Status, r.Raw)
	}

	t.Run("Withdrawals", func(t *testing.T) {
		for _, tc := range []struct {
			body any
			msg  string
		}{
			{map[string]any{"currency": "GBP", "amount": 1}, ledger.MsgWithdrawalCurrency},
			{map[string]any{"currency": "USD", "amount": "1"}, ledger.MsgWithdrawalAmount},
			{map[string]any{"currency": "USD", "amount": 0.001}, ledger.MsgWithdrawalAmount},
			{map[string]any{"currency": "USD", "amount": 15.01}, ledger.MsgWithdrawalExceeds},
		} {
			assertPlatformError(t, op("POST", partner+"/withdrawals", tc.body), 400, "BadRequestError", tc.msg, "")
		}
		r := op("POST", partner+"/withdrawals", map[string]any{"currency": "USD", "amount": 15})
		d := mustOK(t, r, 201)
		if d["status"] != "open" || d["currency"] != "USD" || !strings.Contains(string(r.Raw), `"amount":15,`) {
			t.Fatalf("withdrawal %s", r.Raw)
		}
		wid := itoa(id(d["id"]))
		if got := mustOK(t, op("GET", "/withdrawals/"+wid, nil), 200); got["status"] != "open" {
			t.Fatalf("withdrawal %v", got)
		}
		if got := mustOK(t, op("POST", "/withdrawals/"+wid+"/mark-paid", nil), 200); got["status"] != "paid" {
			t.Fatalf("paid withdrawal %v", got)
		}
		if got := mustOK(t, op("GET", "/commissions/"+c1, nil), 200); got["status"] != "paid" || id(got["withdrawal_id"]) != id(d["id"]) {
			t.Fatalf("commission covered by the withdrawal: %v", got)
		}
		if !strings.Contains(string(op("GET", partner+"/balances", nil).Raw), `"amount":0,`) {
			t.Fatal("balance after the payout is not 0")
		}
	})

	t.Run("MarkCommissionPaid", func(t *testing.T) {
		if d := mustOK(t, op("POST", "/commissions/"+c2+"/mark-paid", nil), 200); d["status"] != "paid" || d["paid_at"] == nil {
			t.Fatalf("mark-paid %v", d)
		}
	})

	t.Run("Notifications", func(t *testing.T) {
		// Refunds of both paid-out commissions: the worker stores their
		// notifications (here the inbox is called as the worker does).
		do(t, b.app, req{"POST", refundPath, map[string]any{"transaction_id": "txn_1", "refund_amount_cents": 1000, "refund_id": "a"}, bearer(w.liveKey)})
		do(t, b.app, req{"POST", refundPath, map[string]any{"transaction_id": "txn_2", "reason": "chargeback"}, bearer(w.liveKey)})
		deliverOutbox(t, b)
		r := op("GET", partner+"/notifications", nil)
		if r.Status != 200 {
			t.Fatalf("notifications %d %s", r.Status, r.Raw)
		}
		var body struct {
			Data []struct {
				ID    int64          `json:"id"`
				Kind  string         `json:"kind"`
				Title string         `json:"title"`
				Body  string         `json:"body"`
				Data  map[string]any `json:"data"`
			} `json:"data"`
		}
		json.Unmarshal(r.Raw, &body)
		if len(body.Data) != 2 || body.Data[0].Kind != ledger.NoticeCommissionReversed || body.Data[1].Kind != ledger.NoticeCommissionRefunded ||
			body.Data[0].ID < body.Data[1].ID || body.Data[0].Data["reason"] != "chargeback" {
			t.Fatalf("notifications, newest first: %s", r.Raw)
		}
		var warnings int
		b.db.QueryRow(`SELECT count(*) FROM notifications WHERE workspace_id = $1 AND kind = 'commission.manual_review'`, w.workspaceID).Scan(&warnings)
		if warnings != 2 {
			t.Fatalf("%d manual-review warnings to the advertiser, want 2", warnings)
		}
	})

	t.Run("Errors", func(t *testing.T) {
		assertPlatformError(t, op("POST", "/commissions/"+c2+"/approve", nil), 409, "ConflictError", ledger.MsgCommissionReversed, "")
		for _, path := range []string{"/commissions/999999", "/withdrawals/999999", "/partners/999999/balances", "/partners/999999/notifications", "/commissions/abc"} {
			if r := op("GET", path, nil); r.Status != 404 {
				t.Fatalf("GET %s: %d %s", path, r.Status, r.Raw)
			}
		}
		if r := do(t, b.app, req{"GET", "/api/operator/v1/commissions/" + c1, nil, bearer("wrong")}); r.Status != 401 {
			t.Fatalf("wrong operator token: %d", r.Status)
		}
	})
}

// deliverOutbox hands every outbox notification to the inbox, as the
// notifications worker does after the relay.
func deliverOutbox(t *testing.T, b *testBundle) {
	t.Helper()
	rows, err := b.db.Query(`SELECT id, payload FROM outbox ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	inbox := &notify.Inbox{Store: postgres.NewNotificationStore(b.db.DB)}
	for rows.Next() {
		var outboxID int64
		var payload []byte
		var n ledger.Notification
		if err := rows.Scan(&outboxID, &payload); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(payload, &n); err != nil {
			t.Fatal(err)
		}
		if err := inbox.Deliver(context.Background(), outboxID, n); err != nil {
			t.Fatal(err)
		}
	}
}
