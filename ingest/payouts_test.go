package ingest

import (
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
)

func payoutsPath(programID int64, rest string) string {
	return "/api/v1/programs/" + itoa(programID) + "/payouts" + rest
}

func markPath(programID, payoutID int64, verb string) string {
	return payoutsPath(programID, "/"+itoa(payoutID)+"/mark-"+verb)
}

// programBalanceOf is the partner's approved balance in a program: the
// sum of the entries naming it.
func programBalanceOf(t *testing.T, b *testBundle, partnerID, programID int64) int64 {
	t.Helper()
	return mustCount(t, b, `SELECT COALESCE(SUM(amount_minor), 0) FROM balance_entries WHERE partner_id = $1 AND program_id = $2`,
		partnerID, programID)
}

// approve approves a commission through the brand's review route.
func approve(t *testing.T, b *signInBundle, w world, commissionID int64) {
	t.Helper()
	mustOK(t, do(t, b.app, req{"POST", reviewPath(w.programID, commissionID, "approve"), nil, bearer(w.ownerToken)}), 200)
}

func TestPayoutRoutes(t *testing.T) {
	b := setupSignIn(t)
	w := MustWorld(t, b.app) // 30% of the sale, USD; minimum_payout 50
	other := MustWorld(t, b.app)
	c1 := mustSale(t, b.testBundle, w, "txn-p1", 10000) // 30.00
	b.clock.Set(b.clock.Now().Add(time.Second))
	c2 := mustSale(t, b.testBundle, w, "txn-p2", 10000) // 30.00
	b.clock.Set(b.clock.Now().Add(time.Second))
	c3 := mustSale(t, b.testBundle, w, "txn-p3", 4017) // 12.05
	oc := mustSale(t, b.testBundle, other, "txn-o1", 20000)
	approve(t, b, w, c1)
	approve(t, b, w, c2)
	approve(t, b, other, oc)
	member := dashboardMemberToken(t, b.testBundle, w, "member")
	mustOK(t, do(t, b.app, req{"POST", "/api/v1/programs/" + itoa(w.programID) + "/webhooks",
		map[string]any{"url": "https://93.184.215.14/hooks", "events": []string{"payout.created", "payout.paid", "payout.failed"}}, bearer(w.ownerToken)}), 201)
	hooks := func(event string) int {
		return countRows(t, b.testBundle, `SELECT count(*) FROM outbox WHERE task_type = 'webhook:deliver' AND payload->>'event_type' = $1`, event)
	}
	var patEmail string
	b.db.QueryRow(`SELECT email FROM partners WHERE id = $1`, w.partnerID).Scan(&patEmail)
	pat := signInPartner(t, b, "sub-pat", patEmail)
	var otherEmail string
	b.db.QueryRow(`SELECT email FROM partners WHERE id = $1`, other.partnerID).Scan(&otherEmail)
	otherPartner := signInPartner(t, b, "sub-other", otherEmail)

	t.Run("OK due lists the partner without a method", func(t *testing.T) {
		r := do(t, b.app, req{"GET", payoutsPath(w.programID, "/due"), nil, bearer(member)})
		data := r.Body["data"].([]any)
		if r.Status != 200 || len(data) != 1 || !strings.Contains(string(r.Raw), `"amount":60`) ||
			!strings.Contains(string(r.Raw), `"method_on_file":false`) {
			t.Fatalf("due %d %s", r.Status, r.Raw)
		}
	})
	t.Run("OK payout method stored sealed, shown masked", func(t *testing.T) {
		d := mustOK(t, do(t, b.app, req{"PUT", "/api/v1/partner/payout-method",
			map[string]any{"method": "paypal", "details": map[string]any{"email": " Pat.Pay@PayPal.example "}}, bearer(pat)}), 200)
		if d["method"] != "paypal" || d["details"].(map[string]any)["email"] != "p***@paypal.example" {
			t.Fatalf("method %v", d)
		}
		var sealed string
		b.db.QueryRow(`SELECT sealed FROM payout_methods WHERE partner_id = $1`, w.partnerID).Scan(&sealed)
		if !strings.HasPrefix(sealed, "enc:") || strings.Contains(sealed, "paypal.example") {
			t.Fatalf("stored %q", sealed)
		}
		r := do(t, b.app, req{"GET", payoutsPath(w.programID, "/due"), nil, bearer(member)})
		if !strings.Contains(string(r.Raw), `"method_on_file":true`) || !strings.Contains(string(r.Raw), `p***@paypal.example`) {
			t.Fatalf("due %s", r.Raw)
		}
		if d := mustOK(t, do(t, b.app, req{"GET", "/api/v1/partner/payout-method", nil, bearer(pat)}), 200); d["method"] != "paypal" {
			t.Fatalf("get %v", d)
		}
	})
	t.Run("ErrPayoutMethodShape", func(t *testing.T) {
		for _, tc := range []struct {
			desc string
			body any
			msg  string
		}{
			{"unknown method", map[string]any{"method": "cash", "details": map[string]any{}}, ledger.MsgPayoutMethod},
			{"details not an object", map[string]any{"method": "paypal", "details": "x"}, ledger.MsgPayoutDetails},
			{"detail not a string", map[string]any{"method": "paypal", "details": map[string]any{"email": 5}}, "details.email must be a string"},
			{"bad email", map[string]any{"method": "wise", "details": map[string]any{"email": "nope"}}, "details.email must be one email address"},
			{"field of another method", map[string]any{"method": "paypal", "details": map[string]any{"email": "a@b.example", "iban": "x"}}, "details.iban is not a field of paypal"},
			{"bad iban", map[string]any{"method": "bank_transfer", "details": map[string]any{"account_holder": "Pat", "iban": "DE89370400440532013001", "country": "DE"}}, "details.iban must be a valid IBAN"},
			{"no account", map[string]any{"method": "bank_transfer", "details": map[string]any{"account_holder": "Pat", "country": "DE"}}, "details.iban or details.account_number is required for bank_transfer"},
			{"bad country", map[string]any{"method": "bank_transfer", "details": map[string]any{"account_holder": "Pat", "account_number": "12345678", "country": "Germany"}}, "details.country must be an ISO 3166 alpha-2 country code"},
			{"not JSON", "nope", msgNotJSON},
		} {
			r := do(t, b.app, req{"PUT", "/api/v1/partner/payout-method", tc.body, bearer(pat)})
			assertPlatformError(t, r, 400, "BadRequestError", tc.msg, "")
		}
		if d := mustOK(t, do(t, b.app, req{"GET", "/api/v1/partner/payout-method", nil, bearer(pat)}), 200); d["method"] != "paypal" {
			t.Fatalf("a refused change changed the method: %v", d)
		}
	})

	var brandPayout int64
	t.Run("OK the brand's run pays the due partner", func(t *testing.T) {
		r := do(t, b.app, req{"POST", payoutsPath(w.programID, ""), map[string]any{"partner_ids": []int64{w.partnerID, w.partnerID, other.partnerID}}, bearer(w.ownerToken)})
		d := mustOK(t, r, 200)
		created, skipped := d["created"].([]any), d["skipped"].([]any)
		if len(created) != 1 || len(skipped) != 2 {
			t.Fatalf("run %s", r.Raw)
		}
		p := created[0].(map[string]any)
		brandPayout = id(p["id"])
		if p["status"] != "pending" || p["requested_by"] != "brand" || !strings.Contains(string(r.Raw), `"amount":60`) {
			t.Fatalf("payout %v", p)
		}
		if !strings.Contains(string(r.Raw), `{"partner_id":`+itoa(w.partnerID)+`,"reason":"duplicate"}`) ||
			!strings.Contains(string(r.Raw), `{"partner_id":`+itoa(other.partnerID)+`,"reason":"not_due"}`) {
			t.Fatalf("skipped %s", r.Raw)
		}
		if bal := programBalanceOf(t, b.testBundle, w.partnerID, w.programID); bal != 0 {
			t.Fatalf("program balance %d after the payout", bal)
		}
		// The other program's money is untouched.
		if bal := programBalanceOf(t, b.testBundle, other.partnerID, other.programID); bal != 6000 {
			t.Fatalf("other program balance %d", bal)
		}
		again := mustOK(t, do(t, b.app, req{"POST", payoutsPath(w.programID, ""), nil, bearer(w.ownerToken)}), 200)
		if len(again["created"].([]any)) != 0 {
			t.Fatalf("second run %v", again)
		}
	})
	t.Run("ErrForbiddenAndNotFound", func(t *testing.T) {
		r := do(t, b.app, req{"POST", payoutsPath(w.programID, ""), nil, bearer(member)})
		assertPlatformError(t, r, 403, "ForbiddenError", ledger.MsgPayoutsAdminOnly, "")
		r = do(t, b.app, req{"GET", payoutsPath(w.programID, ""), nil, bearer(other.ownerToken)})
		assertPlatformError(t, r, 403, "ForbiddenError", "you are not a member of this program's workspace", "")
		r = do(t, b.app, req{"POST", markPath(other.programID, brandPayout, "processing"), nil, bearer(other.ownerToken)})
		assertPlatformError(t, r, 404, "NotFoundError", ledger.MsgPayoutNotFound, "")
		r = do(t, b.app, req{"GET", payoutsPath(w.programID, "?format=csv"), nil, bearer(member)})
		assertPlatformError(t, r, 403, "ForbiddenError", ledger.MsgPayoutCSVAdminOnly, "")
		r = do(t, b.app, req{"GET", payoutsPath(w.programID, "?status=done"), nil, bearer(member)})
		assertPlatformError(t, r, 400, "BadRequestError", ledger.MsgPayoutStatusFilter, "")
		r = do(t, b.app, req{"POST", payoutsPath(w.programID, ""), map[string]any{"partner_ids": []any{1, "x"}}, bearer(w.ownerToken)})
		assertPlatformError(t, r, 400, "BadRequestError", ledger.MsgPayoutPartnerIDs, "")
	})
	t.Run("OK CSV for the mass payout upload", func(t *testing.T) {
		r := do(t, b.app, req{"GET", payoutsPath(w.programID, "?format=csv"), nil, bearer(w.ownerToken)})
		if r.Status != 200 || r.Header.Get("Content-Type") != "text/csv; charset=utf-8" {
			t.Fatalf("csv %d %s", r.Status, r.Raw)
		}
		rows, err := csv.NewReader(strings.NewReader(string(r.Raw))).ReadAll()
		if err != nil || len(rows) != 2 {
			t.Fatalf("csv %v %s", err, r.Raw)
		}
		row := rows[1]
		if row[0] != "pat.pay@paypal.example" || row[1] != "60.00" || row[2] != "USD" || row[3] != "payout-"+itoa(brandPayout) || row[5] != "paypal" {
			t.Fatalf("row %v", row)
		}
	})
	t.Run("OK mark paid covers the commissions and tells the partner", func(t *testing.T) {
		r := do(t, b.app, req{"POST", markPath(w.programID, brandPayout, "paid"), map[string]any{}, bearer(w.ownerToken)})
		assertPlatformError(t, r, 400, "BadRequestError", ledger.MsgExternalReference, "")
		d := mustOK(t, do(t, b.app, req{"POST", markPath(w.programID, brandPayout, "paid"), map[string]any{"external_reference": " PP-123 "}, bearer(w.ownerToken)}), 200)
		if d["status"] != "paid" || d["external_reference"] != "PP-123" || d["paid_at"] == nil {
			t.Fatalf("paid %v", d)
		}
		if n := mustCount(t, b.testBundle, `SELECT count(*) FROM commissions WHERE payout_id = $1 AND status = 'paid' AND paid_at IS NOT NULL`, brandPayout); n != 2 {
			t.Fatalf("%d commissions paid by the payout", n)
		}
		if n := mustCount(t, b.testBundle, `SELECT count(*) FROM outbox WHERE payload->>'kind' = 'payout_paid' AND payload->>'to' = $1`, patEmail); n != 1 {
			t.Fatalf("%d payout_paid emails", n)
		}
		if n := mustCount(t, b.testBundle, `SELECT count(*) FROM outbox WHERE payload->>'kind' = 'payout.paid' AND (payload->>'partner_id')::bigint = $1`, w.partnerID); n != 1 {
			t.Fatalf("%d paid notices", n)
		}
		// Repeating is answered unchanged; another move is a 409.
		again := mustOK(t, do(t, b.app, req{"POST", markPath(w.programID, brandPayout, "paid"), map[string]any{"external_reference": "other"}, bearer(w.ownerToken)}), 200)
		if again["external_reference"] != "PP-123" {
			t.Fatalf("repeat %v", again)
		}
		r = do(t, b.app, req{"POST", markPath(w.programID, brandPayout, "failed"), map[string]any{"reason": "x"}, bearer(w.ownerToken)})
		assertPlatformError(t, r, 409, "ConflictError", "payout is already paid and cannot be marked failed", "")
	})
	t.Run("OK a refund after the payout shows as clawback", func(t *testing.T) {
		b.clock.Set(b.clock.Now().Add(time.Minute))
		if r := do(t, b.app, req{"POST", refundPath, map[string]any{"transaction_id": "txn-p1"}, bearer(w.liveKey)}); r.Status != 200 {
			t.Fatalf("refund %d %s", r.Status, r.Raw)
		}
		r := do(t, b.app, req{"GET", payoutsPath(w.programID, "?partner_id="+itoa(w.partnerID)), nil, bearer(member)})
		if r.Status != 200 || !strings.Contains(string(r.Raw), `"clawback":30`) || !strings.Contains(string(r.Raw), "review it manually") {
			t.Fatalf("list %s", r.Raw)
		}
		r = do(t, b.app, req{"GET", "/api/v1/partner/payouts", nil, bearer(pat)})
		if r.Status != 200 || !strings.Contains(string(r.Raw), `"clawback":30`) || strings.Contains(string(r.Raw), patEmail) {
			t.Fatalf("partner list %s", r.Raw)
		}
		if bal := programBalanceOf(t, b.testBundle, w.partnerID, w.programID); bal != -3000 {
			t.Fatalf("balance %d after the refund", bal)
		}
	})

	t.Run("OK the partner asks, the brand approves, the payment fails", func(t *testing.T) {
		approve(t, b, w, c3)
		path := "/api/v1/partner/programs/" + itoa(w.programID) + "/payouts"
		// The refund left the balance at -30.00 + 12.05.
		r := do(t, b.app, req{"POST", path, nil, bearer(pat)})
		assertPlatformError(t, r, 409, "ConflictError", ledger.MsgPayoutNothingDue+"-17.95 USD", "")
		c4 := mustSale(t, b.testBundle, w, "txn-p4", 20000) // 60.00
		approve(t, b, w, c4)
		r = do(t, b.app, req{"POST", path, map[string]any{"amount": 42.06}, bearer(pat)})
		assertPlatformError(t, r, 400, "BadRequestError", ledger.MsgPayoutExceeds+"42.05 USD", "")
		r = do(t, b.app, req{"POST", path, map[string]any{"amount": 10}, bearer(pat)})
		assertPlatformError(t, r, 400, "BadRequestError", ledger.MsgPayoutBelowMinimum+"50.00 USD", "")
		r = do(t, b.app, req{"POST", path, map[string]any{"amount": 0.001}, bearer(pat)})
		assertPlatformError(t, r, 400, "BadRequestError", ledger.MsgPayoutAmount, "")
		b.db.Exec(`UPDATE programs SET minimum_payout = 10 WHERE id = $1`, w.programID)
		d := mustOK(t, do(t, b.app, req{"POST", path, nil, bearer(pat)}), 201)
		pid := id(d["id"])
		if d["requested_by"] != "partner" || d["status"] != "pending" || d["amount"] != 42.05 || d["partner"] != nil {
			t.Fatalf("requested %v", d)
		}
		if bal := programBalanceOf(t, b.testBundle, w.partnerID, w.programID); bal != 0 {
			t.Fatalf("balance %d after the request", bal)
		}
		d = mustOK(t, do(t, b.app, req{"POST", markPath(w.programID, pid, "processing"), nil, bearer(w.ownerToken)}), 200)
		if d["status"] != "processing" || d["processing_at"] == nil {
			t.Fatalf("processing %v", d)
		}
		d = mustOK(t, do(t, b.app, req{"POST", markPath(w.programID, pid, "failed"), map[string]any{"reason": "account closed"}, bearer(w.ownerToken)}), 200)
		if d["status"] != "failed" || d["failure_reason"] != "account closed" {
			t.Fatalf("failed %v", d)
		}
		if bal := programBalanceOf(t, b.testBundle, w.partnerID, w.programID); bal != 4205 {
			t.Fatalf("balance %d after the failure", bal)
		}
		if n := mustCount(t, b.testBundle, `SELECT count(*) FROM balance_entries WHERE payout_id = $1 AND kind = 'payout_return' AND amount_minor = 4205`, pid); n != 1 {
			t.Fatalf("%d returns", n)
		}
		r = do(t, b.app, req{"POST", markPath(w.programID, pid, "processing"), nil, bearer(w.ownerToken)})
		assertPlatformError(t, r, 409, "ConflictError", "payout is already failed and cannot be marked processing", "")
	})
	t.Run("OK webhooks of every payout event", func(t *testing.T) {
		// Created by the run and by the partner's request; paid once; failed once.
		for event, want := range map[string]int{"payout.created": 2, "payout.paid": 1, "payout.failed": 1} {
			if got := hooks(event); got != want {
				t.Errorf("%d %s deliveries, want %d", got, event, want)
			}
		}
	})
	t.Run("ErrPartnerIsolation", func(t *testing.T) {
		r := do(t, b.app, req{"POST", "/api/v1/partner/programs/" + itoa(w.programID) + "/payouts", nil, bearer(otherPartner)})
		assertPlatformError(t, r, 404, "NotFoundError", ledger.MsgPayoutProgramNotFound, "")
		r = do(t, b.app, req{"GET", "/api/v1/partner/payouts", nil, bearer(otherPartner)})
		if r.Status != 200 || len(r.Body["data"].([]any)) != 0 {
			t.Fatalf("other partner sees %s", r.Raw)
		}
		r = do(t, b.app, req{"GET", "/api/v1/partner/payout-method", nil, bearer(otherPartner)})
		assertPlatformError(t, r, 404, "NotFoundError", ledger.MsgPayoutMethodNotFound, "")
		r = do(t, b.app, req{"GET", "/api/v1/partner/payouts", nil, bearer(w.ownerToken)})
		assertPlatformError(t, r, 401, "UnauthorizedError", ledger.MsgPartnerTokenInvalid, "")
	})
	t.Run("OK the partner listing shows the program balance", func(t *testing.T) {
		r := do(t, b.app, req{"GET", partnersPath(w.programID, ""), nil, bearer(w.ownerToken)})
		if r.Status != 200 || !strings.Contains(string(r.Raw), `"balance":42.05`) {
			t.Fatalf("partners %s", r.Raw)
		}
	})
	t.Run("OK delete the payout method", func(t *testing.T) {
		mustOK(t, do(t, b.app, req{"DELETE", "/api/v1/partner/payout-method", nil, bearer(pat)}), 200)
		r := do(t, b.app, req{"DELETE", "/api/v1/partner/payout-method", nil, bearer(pat)})
		assertPlatformError(t, r, 404, "NotFoundError", ledger.MsgPayoutMethodNotFound, "")
	})
}
