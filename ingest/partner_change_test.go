package ingest

import (
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
)

func partnerPath(programID, partnerID int64) string {
	return partnersPath(programID, "") + "/" + itoa(partnerID)
}

// enrollment is a partner's stored status and group in a program.
func enrollment(t *testing.T, b *testBundle, programID, partnerID int64) (status string, group int64) {
	t.Helper()
	if err := b.db.QueryRow(`SELECT status, group_id FROM enrollments WHERE program_id = $1 AND partner_id = $2`,
		programID, partnerID).Scan(&status, &group); err != nil {
		t.Fatal(err)
	}
	return status, group
}

func TestPatchProgramPartner(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	other := MustWorld(t, b.app)
	path := partnerPath(w.programID, w.partnerID)
	vip := id(mustOK(t, do(t, b.app, req{"POST", groupsPath(w.programID), map[string]any{"name": "VIP"}, bearer(w.ownerToken)}), 201)["id"])
	def := defaultGroup(t, b, w.programID)
	mustOK(t, do(t, b.app, req{"POST", "/api/v1/programs/" + itoa(w.programID) + "/webhooks",
		map[string]any{"url": "https://93.184.215.14/hooks", "events": []string{"partner.suspended", "partner.enrolled"}}, bearer(w.ownerToken)}), 201)
	events := func(event string) int {
		return countRows(t, b, `SELECT count(*) FROM outbox WHERE payload::text LIKE '%' || $1 || '%'`, event)
	}

	t.Run("OK suspend and move", func(t *testing.T) {
		r := do(t, b.app, req{"PATCH", path, map[string]any{"status": "suspended", "group_id": vip}, bearer(w.ownerToken)})
		d := mustOK(t, r, 200)
		if d["status"] != "suspended" || id(d["group_id"]) != vip || d["group_name"] != "VIP" || d["name"] != "Pat" || d["links"] == nil {
			t.Fatalf("answer = %s", r.Raw)
		}
		if r.Header.Get("X-Request-ID") == "" || r.Header.Get("X-RateLimit-Limit") != itoa(limitPartners) {
			t.Fatalf("headers = %v", r.Header)
		}
		if s, g := enrollment(t, b, w.programID, w.partnerID); s != "suspended" || g != vip {
			t.Fatalf("stored %s %d", s, g)
		}
		if events(`"partner.suspended"`) != 1 {
			t.Fatal("no partner.suspended delivery")
		}
		if n := countRows(t, b, `SELECT count(*) FROM audit_log WHERE program_id = $1 AND subject_id = $2
			AND action IN ('partner.suspended', 'partner.group_changed')`, w.programID, w.partnerID); n != 2 {
			t.Fatalf("%d audit entries", n)
		}
		// The same values again change nothing and send nothing.
		mustOK(t, do(t, b.app, req{"PATCH", path, map[string]any{"status": "suspended"}, bearer(w.ownerToken)}), 200)
		if events(`"partner.suspended"`) != 1 {
			t.Fatal("a no-op sent a webhook")
		}
		// The listing filters by group and by the suspended status.
		if got := partnerIDs(t, do(t, b.app, req{"GET", partnersPath(w.programID, "status=suspended&group_id="+itoa(vip)), nil, bearer(w.ownerToken)})); len(got) != 1 || got[0] != w.partnerID {
			t.Fatalf("filtered = %v", got)
		}
		if got := partnerIDs(t, do(t, b.app, req{"GET", partnersPath(w.programID, "group_id="+itoa(def)), nil, bearer(w.ownerToken)})); len(got) != 0 {
			t.Fatalf("default group = %v", got)
		}
		if got := partnerIDs(t, do(t, b.app, req{"GET", partnersPath(w.programID, "group_id="+itoa(defaultGroup(t, b, other.programID))), nil, bearer(w.ownerToken)})); len(got) != 0 {
			t.Fatalf("another program's group = %v", got)
		}
		csvOut := string(do(t, b.app, req{"GET", partnersPath(w.programID, "format=csv&status=suspended"), nil, bearer(w.ownerToken)}).Raw)
		if lines := strings.Split(strings.TrimSpace(csvOut), "\n"); len(lines) != 2 || !strings.HasSuffix(lines[0], ",group_id,group_name") ||
			!strings.HasSuffix(lines[1], ","+itoa(vip)+",VIP") || !strings.Contains(lines[1], ",suspended,") {
			t.Fatalf("csv = %s", csvOut)
		}
		r = do(t, b.app, req{"GET", partnersPath(w.programID, "group_id=0"), nil, bearer(w.ownerToken)})
		assertPlatformError(t, r, 400, "BadRequestError", ledger.MsgPartnerGroupFilter, "")
	})
	t.Run("OK re-activate", func(t *testing.T) {
		d := mustOK(t, do(t, b.app, req{"PATCH", path, map[string]any{"status": "active"}, bearer(dashboardMemberToken(t, b, w, "admin"))}), 200)
		if d["status"] != "active" || id(d["group_id"]) != vip {
			t.Fatalf("answer = %v", d)
		}
		if events(`"partner.enrolled"`) != 1 {
			t.Fatal("no partner.enrolled delivery")
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		for _, tc := range []struct {
			body any
			msg  string
		}{
			{map[string]any{}, ledger.MsgPartnerNoChange},
			{map[string]any{"status": "removed"}, ledger.MsgPartnerChangeStatus},
			{map[string]any{"status": 1}, ledger.MsgPartnerChangeStatus},
			{map[string]any{"group_id": 0}, ledger.MsgPartnerGroupID},
			{map[string]any{"group_id": "5"}, ledger.MsgPartnerGroupID},
			{map[string]any{"group_id": defaultGroup(t, b, other.programID)}, ledger.MsgPartnerGroupID},
			{map[string]any{"status": "suspended", "group_id": vip + 1000}, ledger.MsgPartnerGroupID},
		} {
			r := do(t, b.app, req{"PATCH", path, tc.body, bearer(w.ownerToken)})
			assertPlatformError(t, r, 400, "BadRequestError", tc.msg, "")
		}
		if s, g := enrollment(t, b, w.programID, w.partnerID); s != "active" || g != vip {
			t.Fatalf("a refused change stored %s %d", s, g)
		}
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		r := do(t, b.app, req{"PATCH", path, map[string]any{"status": "suspended"}, bearer(dashboardMemberToken(t, b, w, "member"))})
		assertPlatformError(t, r, 403, "ForbiddenError", msgPartnersAdminOnly, "")
		r = do(t, b.app, req{"PATCH", path, map[string]any{"status": "suspended"}, bearer(other.ownerToken)})
		assertPlatformError(t, r, 403, "ForbiddenError", "you are not a member of this program's workspace", "")
		if s, _ := enrollment(t, b, w.programID, w.partnerID); s != "active" {
			t.Fatal("a refused change suspended the partner")
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		for _, p := range []string{partnerPath(w.programID, other.partnerID), partnerPath(w.programID, w.partnerID+1000), partnersPath(w.programID, "") + "/abc"} {
			r := do(t, b.app, req{"PATCH", p, map[string]any{"status": "suspended"}, bearer(w.ownerToken)})
			assertPlatformError(t, r, 404, "NotFoundError", "partner not found", "")
		}
		r := do(t, b.app, req{"PATCH", partnerPath(other.programID, w.partnerID), map[string]any{"status": "suspended"}, bearer(other.ownerToken)})
		assertPlatformError(t, r, 404, "NotFoundError", "partner not found", "")
		if s, _ := enrollment(t, b, w.programID, w.partnerID); s != "active" {
			t.Fatal("another program's call suspended the partner")
		}
	})
	t.Run("ErrConflict removed", func(t *testing.T) {
		ann := mustEnroll(t, b, w, "Ann")
		if _, err := b.db.Exec(`UPDATE enrollments SET status = 'removed' WHERE program_id = $1 AND partner_id = $2`, w.programID, ann); err != nil {
			t.Fatal(err)
		}
		r := do(t, b.app, req{"PATCH", partnerPath(w.programID, ann), map[string]any{"status": "active"}, bearer(w.ownerToken)})
		assertPlatformError(t, r, 409, "ConflictError", ledger.MsgPartnerRemoved, "")
		if s, _ := enrollment(t, b, w.programID, ann); s != "removed" {
			t.Fatal("a removed partner was changed")
		}
	})
}

// TestSuspendedPartner: a suspended partner's links answer 410 on every
// edge at once, its new sales earn nothing, what it earned stays; made
// active again, its links take clicks and it earns again.
func TestSuspendedPartner(t *testing.T) {
	b := setupClicks(t)
	w := MustWorld(t, b.app)
	replica := newTestServer(b.db, b.clock)
	b.wire(t, replica, b.rdb)
	click := req{"POST", "/api/v1/track/click", map[string]any{"affiliate_url": "https://acme.example/?aff=pat" + itoa(w.programID)}, fromIP("203.0.113.50")}
	for _, srv := range []*Server{b.srv, replica} { // both cache the active link
		if r := do(t, srv.App(), click); r.Status != 200 {
			t.Fatalf("active link: %d %s", r.Status, r.Raw)
		}
	}
	earned := mustSale(t, b.testBundle, w, "txn-before", 10000)
	balance := func() int64 {
		t.Helper()
		var n int64
		if err := b.db.QueryRow(`SELECT COALESCE(sum(amount_minor), 0) FROM balance_entries WHERE partner_id = $1`, w.partnerID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := balance()
	waitStatus := func(srv *Server, want int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for do(t, srv.App(), click).Status != want {
			if time.Now().After(deadline) {
				t.Fatalf("the instance never answered %d", want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	path := partnerPath(w.programID, w.partnerID)
	mustOK(t, do(t, b.app, req{"PATCH", path, map[string]any{"status": "suspended"}, bearer(w.ownerToken)}), 200)
	r := do(t, b.app, click)
	if r.Status != 410 || r.Body["error"].(map[string]any)["code"] != ledger.ELinkDisabled {
		t.Fatalf("the instance that suspended: %d %s", r.Status, r.Raw)
	}
	waitStatus(replica, 410)

	// A sale of the suspended partner's customer earns nothing.
	r = do(t, b.app, req{"POST", salePath, map[string]any{"transaction_id": "txn-during", "amount_cents": 10000,
		"click_id": mustClick(t, b.testBundle, w.programID, w.linkID, w.partnerID)}, bearer(w.liveKey)})
	if r.Status != 400 {
		t.Fatalf("sale of a suspended partner: %d %s", r.Status, r.Raw)
	}
	if n := countRows(t, b.testBundle, `SELECT count(*) FROM commissions WHERE partner_id = $1`, w.partnerID); n != 1 {
		t.Fatalf("%d commissions", n)
	}
	// What it earned before stays.
	var status string
	if err := b.db.QueryRow(`SELECT status FROM commissions WHERE id = $1`, earned).Scan(&status); err != nil {
		t.Fatal(err)
	}
	if status != ledger.CommissionPending || balance() != before {
		t.Fatalf("earned commission %s, balance %d (was %d)", status, balance(), before)
	}
	// The operator's enroll call (automation re-posting the partner) leaves
	// the suspension to the brand.
	var email string
	if err := b.db.QueryRow(`SELECT email FROM partners WHERE id = $1`, w.partnerID).Scan(&email); err != nil {
		t.Fatal(err)
	}
	mustOK(t, do(t, b.app, req{"POST", "/api/operator/v1/programs/" + itoa(w.programID) + "/partners",
		map[string]any{"email": email, "name": "Pat"}, operator()}), 201)
	if st := countRows(t, b.testBundle, `SELECT count(*) FROM enrollments WHERE partner_id = $1 AND status = 'suspended'`, w.partnerID); st != 1 {
		t.Fatal("the operator's enroll call lifted the suspension")
	}

	mustOK(t, do(t, b.app, req{"PATCH", path, map[string]any{"status": "active"}, bearer(w.ownerToken)}), 200)
	if r := do(t, b.app, click); r.Status != 200 {
		t.Fatalf("re-activated: %d %s", r.Status, r.Raw)
	}
	waitStatus(replica, 200)
	if cid := mustSale(t, b.testBundle, w, "txn-after", 10000); cid == 0 {
		t.Fatal("no commission after re-activation")
	}
}
