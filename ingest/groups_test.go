package ingest

import (
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
)

func groupsPath(programID int64) string { return "/api/v1/programs/" + itoa(programID) + "/groups" }

func groupPath(programID, groupID int64) string { return groupsPath(programID) + "/" + itoa(groupID) }

// listGroups returns the program's groups as its owner reads them.
func listGroups(t *testing.T, b *testBundle, w world) []map[string]any {
	t.Helper()
	r := do(t, b.app, req{"GET", groupsPath(w.programID), nil, bearer(w.ownerToken)})
	if r.Status != 200 {
		t.Fatalf("groups: %d %s", r.Status, r.Raw)
	}
	var out []map[string]any
	for _, g := range r.Body["data"].([]any) {
		out = append(out, g.(map[string]any))
	}
	return out
}

// defaultGroup is the id of the program's default group.
func defaultGroup(t *testing.T, b *testBundle, programID int64) int64 {
	t.Helper()
	var gid int64
	if err := b.db.QueryRow(`SELECT id FROM partner_groups WHERE program_id = $1 AND is_default`, programID).Scan(&gid); err != nil {
		t.Fatal(err)
	}
	return gid
}

func TestGroupList(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	gs := listGroups(t, b, w)
	if len(gs) != 1 {
		t.Fatalf("groups = %v", gs)
	}
	g := gs[0]
	if g["is_default"] != true || g["name"] != "Default" || g["policy_id"] != nil || g["commission_type"] != "percent" ||
		g["commission_rate"] != float64(30) || g["hold_days"] != float64(30) || g["partners"] != float64(1) {
		t.Fatalf("default group = %v", g)
	}
	member := dashboardMemberToken(t, b, w, "member")
	r := do(t, b.app, req{"GET", groupsPath(w.programID), nil, bearer(member)})
	if r.Status != 200 || r.Header.Get("X-Request-ID") == "" || r.Header.Get("X-RateLimit-Limit") != "120" {
		t.Fatalf("member read: %d %v %s", r.Status, r.Header, r.Raw)
	}
	other := MustWorld(t, b.app)
	r = do(t, b.app, req{"GET", groupsPath(w.programID), nil, bearer(other.ownerToken)})
	assertPlatformError(t, r, 403, "ForbiddenError", "you are not a member of this program's workspace", "")
}

func TestGroupCreate(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	other := MustWorld(t, b.app)
	groups := func() int {
		return countRows(t, b, `SELECT count(*) FROM partner_groups WHERE program_id = $1`, w.programID)
	}

	t.Run("OK", func(t *testing.T) {
		r := do(t, b.app, req{"POST", groupsPath(w.programID), map[string]any{"name": "  VIP ", "commission_rate": 20.5, "hold_days": 7}, bearer(w.ownerToken)})
		d := mustOK(t, r, 201)
		if d["name"] != "VIP" || d["is_default"] != false || d["commission_type"] != "percent" || d["commission_rate"] != 20.5 ||
			d["hold_days"] != float64(7) || d["duration_months"] != float64(0) || d["partners"] != float64(0) || d["policy_id"] == nil {
			t.Fatalf("group = %s", r.Raw)
		}
		if n := countRows(t, b, `SELECT count(*) FROM commission_policies WHERE id = $1 AND group_id = $2 AND commission_rate = 20.5`,
			id(d["policy_id"]), id(d["id"])); n != 1 {
			t.Fatal("no policy version")
		}
		if n := countRows(t, b, `SELECT count(*) FROM audit_log WHERE program_id = $1 AND action = 'group.created' AND subject_id = $2
			AND actor_user_id = $3`, w.programID, id(d["id"]), w.ownerID); n != 1 {
			t.Fatal("no audit entry")
		}
		admin := dashboardMemberToken(t, b, w, "admin")
		d = mustOK(t, do(t, b.app, req{"POST", groupsPath(w.programID), map[string]any{"name": "Flat", "commission_type": "fixed", "commission_rate": 5}, bearer(admin)}), 201)
		if d["commission_type"] != "fixed" || d["commission_rate"] != float64(5) || d["hold_days"] != float64(30) {
			t.Fatalf("fixed group = %v", d)
		}
		if gs := listGroups(t, b, w); len(gs) != 3 || gs[0]["is_default"] != true || gs[1]["name"] != "VIP" || gs[2]["name"] != "Flat" {
			t.Fatalf("groups = %v", gs)
		}
	})
	t.Run("ErrConflict", func(t *testing.T) {
		before := groups()
		r := do(t, b.app, req{"POST", groupsPath(w.programID), map[string]any{"name": "VIP"}, bearer(w.ownerToken)})
		assertPlatformError(t, r, 409, "ConflictError", ledger.MsgGroupNameTaken, "")
		r = do(t, b.app, req{"POST", groupsPath(w.programID), map[string]any{"name": "Default"}, bearer(w.ownerToken)})
		assertPlatformError(t, r, 409, "ConflictError", ledger.MsgGroupNameTaken, "")
		if groups() != before {
			t.Fatal("a refused create stored a group")
		}
		// The same name in another program is fine.
		mustOK(t, do(t, b.app, req{"POST", groupsPath(other.programID), map[string]any{"name": "VIP"}, bearer(other.ownerToken)}), 201)
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		before := groups()
		r := do(t, b.app, req{"POST", groupsPath(w.programID), map[string]any{"name": "M"}, bearer(dashboardMemberToken(t, b, w, "member"))})
		assertPlatformError(t, r, 403, "ForbiddenError", msgGroupsAdminOnly, "")
		r = do(t, b.app, req{"POST", groupsPath(w.programID), map[string]any{"name": "X"}, bearer(other.ownerToken)})
		assertPlatformError(t, r, 403, "ForbiddenError", "you are not a member of this program's workspace", "")
		if groups() != before {
			t.Fatal("a refused create stored a group")
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		before := groups()
		for _, tc := range []struct {
			desc string
			body any
			msg  string
		}{
			{"no name", map[string]any{"commission_rate": 10}, ledger.MsgGroupName},
			{"blank name", map[string]any{"name": "  "}, ledger.MsgGroupName},
			{"long name", map[string]any{"name": strings.Repeat("n", 101)}, ledger.MsgGroupName},
			{"name not a string", map[string]any{"name": 5}, ledger.MsgGroupName},
			{"type", map[string]any{"name": "a", "commission_type": "weekly"}, ledger.MsgInvalidCommissionType("weekly")},
			{"rate zero", map[string]any{"name": "a", "commission_rate": 0}, ledger.MsgCommissionRate},
			{"rate text", map[string]any{"name": "a", "commission_rate": "ten"}, ledger.MsgCommissionRate},
			{"rate places", map[string]any{"name": "a", "commission_rate": 1.23456}, ledger.MsgCommissionRatePlaces},
			{"rate over 100 percent", map[string]any{"name": "a", "commission_rate": 101}, ledger.MsgCommissionRateCap},
			{"duration", map[string]any{"name": "a", "duration_months": -1}, ledger.MsgDurationMonths},
			{"hold", map[string]any{"name": "a", "hold_days": 366}, ledger.MsgHoldDays},
			{"not an object", "[]", "Request body must be a JSON object"},
		} {
			r := do(t, b.app, req{"POST", groupsPath(w.programID), tc.body, bearer(w.ownerToken)})
			if r.Status != 400 {
				t.Fatalf("%s: %d %s", tc.desc, r.Status, r.Raw)
			}
			assertPlatformError(t, r, 400, "BadRequestError", tc.msg, "")
		}
		if groups() != before {
			t.Fatal("a refused create stored a group")
		}
	})
}

func TestGroupPatch(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	other := MustWorld(t, b.app)
	g := mustOK(t, do(t, b.app, req{"POST", groupsPath(w.programID), map[string]any{"name": "VIP", "commission_rate": 10}, bearer(w.ownerToken)}), 201)
	gid, firstPolicy := id(g["id"]), id(g["policy_id"])
	path := groupPath(w.programID, gid)

	t.Run("OK terms make a new version", func(t *testing.T) {
		d := mustOK(t, do(t, b.app, req{"PATCH", path, map[string]any{"commission_rate": 20, "hold_days": 3}, bearer(w.ownerToken)}), 200)
		if d["commission_rate"] != float64(20) || d["hold_days"] != float64(3) || id(d["policy_id"]) == firstPolicy || d["name"] != "VIP" {
			t.Fatalf("changed = %v", d)
		}
		if n := countRows(t, b, `SELECT count(*) FROM commission_policies WHERE id = $1 AND commission_rate = 10 AND hold_days = 30`, firstPolicy); n != 1 {
			t.Fatal("the old version changed")
		}
		// Equal terms write no version.
		again := mustOK(t, do(t, b.app, req{"PATCH", path, map[string]any{"commission_rate": 20.0}, bearer(w.ownerToken)}), 200)
		if again["policy_id"] != d["policy_id"] || countRows(t, b, `SELECT count(*) FROM commission_policies WHERE group_id = $1`, gid) != 2 {
			t.Fatalf("equal terms wrote a version: %v", again)
		}
		if n := countRows(t, b, `SELECT count(*) FROM audit_log WHERE action = 'group.updated' AND subject_id = $1`, gid); n != 1 {
			t.Fatalf("%d audit entries", n)
		}
	})
	t.Run("OK rename", func(t *testing.T) {
		d := mustOK(t, do(t, b.app, req{"PATCH", path, map[string]any{"name": "Gold"}, bearer(dashboardMemberToken(t, b, w, "admin"))}), 200)
		if d["name"] != "Gold" || d["commission_rate"] != float64(20) {
			t.Fatalf("renamed = %v", d)
		}
	})
	t.Run("OK default group changes the program", func(t *testing.T) {
		def := defaultGroup(t, b, w.programID)
		d := mustOK(t, do(t, b.app, req{"PATCH", groupPath(w.programID, def), map[string]any{"commission_rate": 12, "duration_months": 6,
			"commission_type": "recurring_percent"}, bearer(w.ownerToken)}), 200)
		if d["is_default"] != true || d["policy_id"] != nil || d["commission_rate"] != float64(12) || d["commission_type"] != "recurring_percent" {
			t.Fatalf("default = %v", d)
		}
		s := mustOK(t, do(t, b.app, req{"GET", "/api/v1/programs/" + itoa(w.programID) + "/settings", nil, bearer(w.ownerToken)}), 200)
		if s["commission_rate"] != float64(12) || s["duration_months"] != float64(6) || s["commission_type"] != "recurring_percent" {
			t.Fatalf("settings = %v", s)
		}
		// The program's own rules apply to the default group's terms.
		r := do(t, b.app, req{"PATCH", groupPath(w.programID, def), map[string]any{"commission_rate": 150}, bearer(w.ownerToken)})
		assertPlatformError(t, r, 400, "BadRequestError", ledger.MsgCommissionRateCap, "")
	})
	t.Run("ErrConflict", func(t *testing.T) {
		r := do(t, b.app, req{"PATCH", path, map[string]any{"name": "Default"}, bearer(w.ownerToken)})
		assertPlatformError(t, r, 409, "ConflictError", ledger.MsgGroupNameTaken, "")
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		for _, tc := range []struct {
			body any
			msg  string
		}{
			{map[string]any{}, ledger.MsgGroupNoChange},
			{map[string]any{"name": ""}, ledger.MsgGroupName},
			{map[string]any{"commission_type": "fixed", "commission_rate": -1}, ledger.MsgCommissionRate},
			{map[string]any{"hold_days": "x"}, ledger.MsgHoldDays},
		} {
			r := do(t, b.app, req{"PATCH", path, tc.body, bearer(w.ownerToken)})
			assertPlatformError(t, r, 400, "BadRequestError", tc.msg, "")
		}
		if n := countRows(t, b, `SELECT count(*) FROM commission_policies WHERE group_id = $1`, gid); n != 2 {
			t.Fatalf("%d versions after refusals", n)
		}
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		r := do(t, b.app, req{"PATCH", path, map[string]any{"name": "M"}, bearer(dashboardMemberToken(t, b, w, "member"))})
		assertPlatformError(t, r, 403, "ForbiddenError", msgGroupsAdminOnly, "")
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		otherGroup := defaultGroup(t, b, other.programID)
		for _, p := range []string{groupPath(w.programID, otherGroup), groupPath(w.programID, gid+1000), groupsPath(w.programID) + "/abc"} {
			r := do(t, b.app, req{"PATCH", p, map[string]any{"name": "Z"}, bearer(w.ownerToken)})
			assertPlatformError(t, r, 404, "NotFoundError", "group not found", "")
		}
		r := do(t, b.app, req{"PATCH", groupPath(other.programID, gid), map[string]any{"name": "Z"}, bearer(other.ownerToken)})
		assertPlatformError(t, r, 404, "NotFoundError", "group not found", "")
		if n := countRows(t, b, `SELECT count(*) FROM partner_groups WHERE name = 'Z'`); n != 0 {
			t.Fatal("a refused change renamed a group")
		}
	})
}

// TestGroupTermsAcrossChange: a commission keeps the terms version in
// force when its sale was recorded; a change of the group's terms changes
// only later sales (amount and hold).
func TestGroupTermsAcrossChange(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	g := mustOK(t, do(t, b.app, req{"POST", groupsPath(w.programID), map[string]any{"name": "VIP", "commission_rate": 10, "hold_days": 10}, bearer(w.ownerToken)}), 201)
	gid, v1 := id(g["id"]), id(g["policy_id"])
	mustOK(t, do(t, b.app, req{"PATCH", partnersPath(w.programID, "") + "/" + itoa(w.partnerID), map[string]any{"group_id": gid}, bearer(w.ownerToken)}), 200)

	commission := func(cid int64) (amount int64, policy *int64, approveAfter time.Time) {
		t.Helper()
		if err := b.db.QueryRow(`SELECT amount_minor, policy_id, approve_after FROM commissions WHERE id = $1`, cid).Scan(&amount, &policy, &approveAfter); err != nil {
			t.Fatal(err)
		}
		return amount, policy, approveAfter
	}
	now := b.clock.Now()
	a := mustSale(t, b, w, "txn-a", 10000)
	d := mustOK(t, do(t, b.app, req{"PATCH", groupPath(w.programID, gid), map[string]any{"commission_rate": 20, "hold_days": 2}, bearer(w.ownerToken)}), 200)
	v2 := id(d["policy_id"])
	bID := mustSale(t, b, w, "txn-b", 10000)

	amountA, policyA, holdA := commission(a)
	if amountA != 1000 || policyA == nil || *policyA != v1 || !holdA.Equal(now.AddDate(0, 0, 10).Truncate(time.Microsecond)) {
		t.Fatalf("sale A: %d %v %v", amountA, policyA, holdA)
	}
	amountB, policyB, holdB := commission(bID)
	if amountB != 2000 || policyB == nil || *policyB != v2 || !holdB.Equal(now.AddDate(0, 0, 2).Truncate(time.Microsecond)) {
		t.Fatalf("sale B: %d %v %v", amountB, policyB, holdB)
	}
	// Back in the default group, the program's terms (30 %, no policy).
	def := defaultGroup(t, b, w.programID)
	mustOK(t, do(t, b.app, req{"PATCH", partnersPath(w.programID, "") + "/" + itoa(w.partnerID), map[string]any{"group_id": def}, bearer(w.ownerToken)}), 200)
	c := mustSale(t, b, w, "txn-c", 10000)
	if amount, policy, _ := commission(c); amount != 3000 || policy != nil {
		t.Fatalf("sale C: %d %v", amount, policy)
	}
	if amountA2, _, _ := commission(a); amountA2 != 1000 {
		t.Fatal("sale A's commission changed")
	}
}

// TestGroupRateLimit: the group routes count in the partner_program
// bucket of the link routes, 120 a minute per dashboard token; the
// partner PATCH counts in the partners bucket.
func TestGroupRateLimit(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	start := b.clock.Now().Truncate(time.Minute).Add(time.Second)
	b.clock.Set(start)
	for i := 1; i <= limitPartnerProgram; i++ {
		path := groupsPath(w.programID)
		if i%2 == 0 {
			path = linksPath(w.programID)
		}
		r := do(t, b.app, req{"GET", path, nil, bearer(w.ownerToken)})
		if r.Status != 200 || r.Header.Get("X-RateLimit-Remaining") != itoa(int64(limitPartnerProgram-i)) {
			t.Fatalf("GET %d: %d %v", i, r.Status, r.Header)
		}
	}
	def := defaultGroup(t, b, w.programID)
	for _, r := range []req{
		{"GET", groupsPath(w.programID), nil, bearer(w.ownerToken)},
		{"POST", groupsPath(w.programID), map[string]any{"name": "over"}, bearer(w.ownerToken)},
		{"PATCH", groupPath(w.programID, def), map[string]any{"name": "over"}, bearer(w.ownerToken)},
	} {
		if rep := do(t, b.app, r); rep.Status != 429 || rep.Body["error"].(map[string]any)["code"] != "rate_limited" {
			t.Fatalf("%s over the limit: %d %s", r.method, rep.Status, rep.Raw)
		}
	}
	if n := countRows(t, b, `SELECT count(*) FROM partner_groups WHERE program_id = $1`, w.programID); n != 1 {
		t.Fatalf("a limited call stored a group: %d groups", n)
	}
	// The partner PATCH is in the partners bucket, not this one.
	r := do(t, b.app, req{"PATCH", partnerPath(w.programID, w.partnerID), map[string]any{"status": "active"}, bearer(w.ownerToken)})
	if r.Status != 200 || r.Header.Get("X-RateLimit-Remaining") != itoa(int64(limitPartners-1)) {
		t.Fatalf("partner PATCH: %d %v", r.Status, r.Header)
	}
}
