package ingest

import (
	"encoding/csv"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
)

func commissionsPath(programID int64, query string) string {
	p := "/api/v1/programs/" + itoa(programID) + "/commissions"
	if query != "" {
		p += "?" + query
	}
	return p
}

func reviewPath(programID, commissionID int64, verb string) string {
	return commissionsPath(programID, "") + "/" + itoa(commissionID) + "/" + verb
}

func auditPath(programID int64, query string) string {
	p := "/api/v1/programs/" + itoa(programID) + "/audit"
	if query != "" {
		p += "?" + query
	}
	return p
}

// assertReviewHeaders checks the headers every answer of the review
// routes carries: the request id and the commission_review bucket.
func assertReviewHeaders(t *testing.T, r response) {
	t.Helper()
	if r.Header.Get("X-Request-ID") == "" || r.Header.Get("X-RateLimit-Limit") != strconv.Itoa(limitCommissionReview) {
		t.Fatalf("headers %v", r.Header)
	}
}

// reviewState is what a refused review call must leave unchanged: the
// commissions' statuses, the balance entries and the audit log.
func reviewState(t *testing.T, b *testBundle, programID int64) string {
	t.Helper()
	var s string
	if err := b.db.QueryRow(`SELECT
		(SELECT COALESCE(string_agg(id || ':' || status || ':' || amount_minor, ',' ORDER BY id), '') FROM commissions WHERE program_id = $1)
		|| '|' || (SELECT count(*) FROM balance_entries)
		|| '|' || (SELECT count(*) FROM audit_log)`, programID).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestReviewCommissionRoutes(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app) // 30% of the sale, USD, 30 days' hold
	other := MustWorld(t, b.app)
	c1 := mustSale(t, b, w, "txn-r1", 10000) // 30.00
	b.clock.Set(b.clock.Now().Add(time.Second))
	c2 := mustSale(t, b, w, "txn-r2", 4017) // 12.05
	b.clock.Set(b.clock.Now().Add(time.Second))
	c3 := mustSale(t, b, w, "txn-r3", 2000) // 6.00
	oc := mustSale(t, b, other, "txn-o1", 1000)
	member := dashboardMemberToken(t, b, w, "member")
	admin := dashboardMemberToken(t, b, w, "admin")

	t.Run("OK approve by the owner", func(t *testing.T) {
		r := do(t, b.app, req{"POST", reviewPath(w.programID, c2, "approve"), nil, bearer(w.ownerToken)})
		assertReviewHeaders(t, r)
		d := mustOK(t, r, 200)
		if d["status"] != "approved" || d["approved_at"] == nil || d["id"] != float64(c2) || d["rejected_at"] != nil {
			t.Fatalf("approved %s", r.Raw)
		}
		if !strings.Contains(string(r.Raw), `"amount":12.05`) || !strings.Contains(string(r.Raw), `"original_amount":12.05`) {
			t.Fatalf("money not exact: %s", r.Raw)
		}
		p := d["partner"].(map[string]any)
		if p["id"] != float64(w.partnerID) || p["name"] != "Pat" {
			t.Fatalf("partner %v", p)
		}
		var credit int64
		b.db.QueryRow(`SELECT amount_minor FROM balance_entries WHERE commission_id = $1 AND kind = 'credit'`, c2).Scan(&credit)
		if credit != 1205 {
			t.Fatalf("credit %d, want 1205", credit)
		}
	})
	t.Run("OK reject by an admin", func(t *testing.T) {
		r := do(t, b.app, req{"POST", reviewPath(w.programID, c3, "reject"), map[string]any{"reason": "  =Self-referral "}, bearer(admin)})
		assertReviewHeaders(t, r)
		d := mustOK(t, r, 200)
		if d["status"] != "rejected" || d["reason"] != "=Self-referral" || d["rejected_at"] == nil || d["amount"] != float64(0) || d["original_amount"] != float64(6) {
			t.Fatalf("rejected %s", r.Raw)
		}
		if n := mustCount(t, b, `SELECT count(*) FROM balance_entries WHERE commission_id = $1`, c3); n != 0 {
			t.Fatalf("%d balance entries", n)
		}
	})
	t.Run("OK reject an approved one reverses it", func(t *testing.T) {
		d := mustOK(t, do(t, b.app, req{"POST", reviewPath(w.programID, c2, "reject"), map[string]any{"reason": "fraud"}, bearer(w.ownerToken)}), 200)
		if d["status"] != "reversed" || d["reversed_at"] == nil || d["rejected_at"] != nil {
			t.Fatalf("reversed %v", d)
		}
		if bal := mustCount(t, b, `SELECT COALESCE(SUM(amount_minor), 0) FROM balance_entries WHERE partner_id = $1`, w.partnerID); bal != 0 {
			t.Fatalf("balance %d after the reversal", bal)
		}
	})

	state := reviewState(t, b, w.programID)
	t.Run("ErrConflict", func(t *testing.T) {
		for _, tc := range []struct {
			desc, path string
			body       any
			msg        string
		}{
			{"approve approved", reviewPath(w.programID, c3, "approve"), nil, ledger.MsgApproveNotPending + "rejected"},
			{"reject rejected", reviewPath(w.programID, c3, "reject"), map[string]any{"reason": "x"}, ledger.MsgRejectRejected},
			{"reject reversed", reviewPath(w.programID, c2, "reject"), map[string]any{"reason": "x"}, ledger.MsgRejectReversed},
		} {
			r := do(t, b.app, req{"POST", tc.path, tc.body, bearer(w.ownerToken)})
			assertPlatformError(t, r, 409, "ConflictError", tc.msg, "")
			assertReviewHeaders(t, r)
		}
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		for _, tc := range []struct {
			desc, tok, msg string
		}{
			{"member", member, msgCommissionsAdminOnly},
			{"owner of another workspace", other.ownerToken, "you are not a member of this program's workspace"},
		} {
			for _, verb := range []string{"approve", "reject"} {
				// The role is checked before the body is read: a bad body is still a 403.
				r := do(t, b.app, req{"POST", reviewPath(w.programID, c1, verb), "not json", bearer(tc.tok)})
				assertPlatformError(t, r, 403, "ForbiddenError", tc.msg, "")
			}
		}
		r := do(t, b.app, req{"GET", commissionsPath(w.programID, ""), nil, bearer(other.ownerToken)})
		assertPlatformError(t, r, 403, "ForbiddenError", "you are not a member of this program's workspace", "")
		r = do(t, b.app, req{"GET", auditPath(w.programID, ""), nil, bearer(other.ownerToken)})
		assertPlatformError(t, r, 403, "ForbiddenError", "you are not a member of this program's workspace", "")
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		for _, path := range []string{
			reviewPath(w.programID, oc, "approve"), reviewPath(w.programID, oc, "reject"),
			reviewPath(w.programID, 0, "approve"), reviewPath(w.programID, c1+100000, "reject"),
		} {
			r := do(t, b.app, req{"POST", path, map[string]any{"reason": "x"}, bearer(w.ownerToken)})
			assertPlatformError(t, r, 404, "NotFoundError", ledger.MsgCommissionNotFound, "")
		}
		r := do(t, b.app, req{"POST", reviewPath(other.programID+1000, c1, "approve"), nil, bearer(w.ownerToken)})
		assertPlatformError(t, r, 404, "NotFoundError", "program not found", "")
		if mustStatus(t, b, oc) != "pending" {
			t.Fatal("another program's commission changed")
		}
	})
	t.Run("ErrInvalid reason", func(t *testing.T) {
		for _, tc := range []struct {
			desc string
			body any
			msg  string
		}{
			{"missing", map[string]any{}, ledger.MsgRejectReason},
			{"no body", nil, ledger.MsgRejectReason},
			{"null", map[string]any{"reason": nil}, ledger.MsgRejectReason},
			{"a number", map[string]any{"reason": 5}, ledger.MsgRejectReason},
			{"blank", map[string]any{"reason": "   "}, ledger.MsgRejectReason},
			{"501 characters", map[string]any{"reason": strings.Repeat("a", 501)}, ledger.MsgRejectReason},
			{"not JSON", "reason=x", "Request body must be a JSON object"},
		} {
			t.Run(tc.desc, func(t *testing.T) {
				r := do(t, b.app, req{"POST", reviewPath(w.programID, c1, "reject"), tc.body, bearer(w.ownerToken)})
				assertPlatformError(t, r, 400, "BadRequestError", tc.msg, "")
			})
		}
	})
	t.Run("ErrUnauthorized", func(t *testing.T) {
		r := do(t, b.app, req{"POST", reviewPath(w.programID, c1, "approve"), nil, nil})
		assertPlatformError(t, r, 401, "UnauthorizedError", "Authentication required", "")
		if r := do(t, b.app, req{"GET", commissionsPath(w.programID, ""), nil, bearer(w.liveKey)}); r.Status != 401 {
			t.Fatalf("program key: %d", r.Status)
		}
	})
	if got := reviewState(t, b, w.programID); got != state {
		t.Fatalf("a refused call changed something: %s, was %s", got, state)
	}

	t.Run("OK list", func(t *testing.T) {
		ids := func(r response) []int64 {
			t.Helper()
			if r.Status != 200 {
				t.Fatalf("%d %s", r.Status, r.Raw)
			}
			var out []int64
			for _, row := range r.Body["data"].([]any) {
				out = append(out, id(row.(map[string]any)["id"]))
			}
			return out
		}
		eq := func(got []int64, want ...int64) bool { return strconv.Quote(itoas(got)) == strconv.Quote(itoas(want)) }
		r := do(t, b.app, req{"GET", commissionsPath(w.programID, ""), nil, bearer(member)})
		assertReviewHeaders(t, r)
		if got := ids(r); !eq(got, c3, c2, c1) {
			t.Fatalf("newest first: %v", got)
		}
		if strings.Contains(string(r.Raw), "customer") {
			t.Fatalf("the listing shows a customer: %s", r.Raw)
		}
		if got := ids(do(t, b.app, req{"GET", commissionsPath(w.programID, "status=rejected"), nil, bearer(member)})); !eq(got, c3) {
			t.Fatalf("status=rejected: %v", got)
		}
		if got := ids(do(t, b.app, req{"GET", commissionsPath(w.programID, "partner_id="+itoa(w.partnerID+1000)), nil, bearer(member)})); len(got) != 0 {
			t.Fatalf("another partner: %v", got)
		}
		today := b.clock.Now().Format("2006-01-02")
		if got := ids(do(t, b.app, req{"GET", commissionsPath(w.programID, "dateFrom="+today+"&dateTo="+today+"&partner_id="+itoa(w.partnerID)), nil, bearer(member)})); len(got) != 3 {
			t.Fatalf("today: %v", got)
		}
		if got := ids(do(t, b.app, req{"GET", commissionsPath(w.programID, "dateTo=2020-01-01"), nil, bearer(member)})); len(got) != 0 {
			t.Fatalf("before: %v", got)
		}
		r = do(t, b.app, req{"GET", commissionsPath(w.programID, "pageSize=2&page=2"), nil, bearer(member)})
		if got := ids(r); !eq(got, c1) {
			t.Fatalf("page 2: %v", got)
		}
		p := r.Body["meta"].(map[string]any)["pagination"].(map[string]any)
		if p["total"] != float64(3) || p["pageCount"] != float64(2) {
			t.Fatalf("pagination %v", p)
		}
	})
	t.Run("ErrInvalid list", func(t *testing.T) {
		for _, tc := range []struct{ query, msg string }{
			{"page=0", ledger.MsgEventPage},
			{"pageSize=101", ledger.MsgEventPageSize},
			{"status=open", ledger.MsgCommissionStatusFilter},
			{"partner_id=abc", ledger.MsgCommissionPartnerFilter},
			{"dateFrom=yesterday", ledger.MsgEventDateFrom},
			{"dateTo=2026-13-40", ledger.MsgEventDateTo},
			{"dateFrom=2026-02-01&dateTo=2026-01-01", ledger.MsgEventDateOrder},
			{"format=xml", ledger.MsgCommissionFormat},
		} {
			r := do(t, b.app, req{"GET", commissionsPath(w.programID, tc.query), nil, bearer(member)})
			assertPlatformError(t, r, 400, "BadRequestError", tc.msg, "")
		}
		for _, tc := range []struct{ query, msg string }{
			{"pageSize=0", ledger.MsgEventPageSize},
			{"action=" + strings.Repeat("a", 101), ledger.MsgAuditAction},
			{"subject_type=" + strings.Repeat("a", 51), ledger.MsgAuditSubjectType},
		} {
			r := do(t, b.app, req{"GET", auditPath(w.programID, tc.query), nil, bearer(member)})
			assertPlatformError(t, r, 400, "BadRequestError", tc.msg, "")
		}
	})
	t.Run("OK CSV", func(t *testing.T) {
		r := do(t, b.app, req{"GET", commissionsPath(w.programID, "format=csv&pageSize=1"), nil, bearer(member)})
		if r.Status != 200 || r.Header.Get("Content-Type") != "text/csv; charset=utf-8" ||
			r.Header.Get("Content-Disposition") != "attachment; filename=commissions-"+itoa(w.programID)+".csv" {
			t.Fatalf("%d %v", r.Status, r.Header)
		}
		assertReviewHeaders(t, r)
		records, err := csv.NewReader(strings.NewReader(string(r.Raw))).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(records[0], ",") != strings.Join(commissionCSVHeader, ",") || len(records) != 4 {
			t.Fatalf("records %v", records)
		}
		rej := records[1]
		if rej[0] != itoa(c3) || rej[2] != "rejected" || rej[9] != "0" || rej[10] != "6" || rej[16] != "'=Self-referral" || rej[15] == "" {
			t.Fatalf("rejected row %v", rej)
		}
		if records[2][9] != "0" || records[2][10] != "12.05" || records[2][7] != "txn-r2" {
			t.Fatalf("reversed row %v", records[2])
		}
		r = do(t, b.app, req{"GET", commissionsPath(w.programID, "format=csv&status=pending"), nil, bearer(member)})
		if n := strings.Count(strings.TrimSpace(string(r.Raw)), "\n"); n != 1 {
			t.Fatalf("filtered export: %d rows: %s", n, r.Raw)
		}
	})
	t.Run("OK audit", func(t *testing.T) {
		r := do(t, b.app, req{"GET", auditPath(w.programID, ""), nil, bearer(member)})
		assertReviewHeaders(t, r)
		if r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
		rows := r.Body["data"].([]any)
		if len(rows) != 3 {
			t.Fatalf("audit %s", r.Raw)
		}
		last := rows[0].(map[string]any)
		actor := last["actor"].(map[string]any)
		var ownerEmail string
		b.db.QueryRow(`SELECT email FROM users WHERE id = $1`, w.ownerID).Scan(&ownerEmail)
		if last["action"] != "commission.rejected" || last["subject_type"] != "commission" || last["subject_id"] != float64(c2) ||
			actor["user_id"] != float64(w.ownerID) || actor["email"] != ownerEmail {
			t.Fatalf("newest row %v", last)
		}
		details := last["details"].(map[string]any)
		if details["status"] != "reversed" || details["reason"] != "fraud" || details["deduction_amount"] != 12.05 {
			t.Fatalf("details %v", details)
		}
		first := rows[2].(map[string]any)
		if first["action"] != "commission.approved" {
			t.Fatalf("oldest row %v", first)
		}
		r = do(t, b.app, req{"GET", auditPath(w.programID, "action="+url.QueryEscape("commission.approved")+"&subject_type=commission"), nil, bearer(member)})
		if len(r.Body["data"].([]any)) != 1 {
			t.Fatalf("filtered audit %s", r.Raw)
		}
		r = do(t, b.app, req{"GET", auditPath(other.programID, ""), nil, bearer(other.ownerToken)})
		if r.Status != 200 || len(r.Body["data"].([]any)) != 0 {
			t.Fatalf("another program's audit: %s", r.Raw)
		}
	})
}

// TestCommissionReviewRateLimit: the four routes share 120 a minute per
// dashboard token.
func TestCommissionReviewRateLimit(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	start := b.clock.Now().Truncate(time.Minute).Add(time.Second)
	b.clock.Set(start)
	paths := []string{commissionsPath(w.programID, ""), auditPath(w.programID, "")}
	for i := 1; i <= limitCommissionReview; i++ {
		r := do(t, b.app, req{"GET", paths[i%len(paths)], nil, bearer(w.ownerToken)})
		if r.Status != 200 || r.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(limitCommissionReview-i) {
			t.Fatalf("GET %d: %d %v", i, r.Status, r.Header)
		}
	}
	r := do(t, b.app, req{"POST", reviewPath(w.programID, 1, "approve"), nil, bearer(w.ownerToken)})
	if r.Status != 429 {
		t.Fatalf("approve over the limit: %d %s", r.Status, r.Raw)
	}
	b.clock.Set(start.Add(time.Minute))
	if r := do(t, b.app, req{"GET", paths[0], nil, bearer(w.ownerToken)}); r.Status != 200 {
		t.Fatalf("next minute: %d", r.Status)
	}
}

func itoas(ids []int64) string {
	s := make([]string, len(ids))
	for i, n := range ids {
		s[i] = itoa(n)
	}
	return strings.Join(s, ",")
}

func mustCount(t *testing.T, b *testBundle, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := b.db.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
