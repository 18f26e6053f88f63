package ingest

import (
	"strconv"
	"strings"
	"testing"

	"github.com/partnertrack/partnertrack/ledger"
)

// loneUserToken signs in a user who belongs to no workspace: added to
// w's workspace by the operator, then taken out of it.
func loneUserToken(t *testing.T, b *testBundle, w world, email string) (int64, string) {
	t.Helper()
	d := mustOK(t, do(t, b.app, req{"POST", "/api/operator/v1/workspaces/" + itoa(w.workspaceID) + "/members",
		map[string]any{"email": email, "role": "member"}, operator()}), 201)
	userID := id(d["user_id"])
	b.db.MustExec(`DELETE FROM memberships WHERE user_id = $1`, userID)
	s := mustOK(t, do(t, b.app, req{"POST", "/api/operator/v1/users/" + itoa(userID) + "/sessions", nil, operator()}), 201)
	return userID, s["token"].(string)
}

func TestListMyPrograms(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	other := MustWorld(t, b.app)
	member := dashboardMemberToken(t, b, w, "member")
	// A second program of w's workspace, named to sort first.
	mustOK(t, do(t, b.app, req{"POST", "/api/operator/v1/programs", map[string]any{"workspace_id": w.workspaceID,
		"name": "Aardvark", "domain": "aardvark.example", "commission_type": "fixed", "commission_rate": 12.50, "currency": "EUR"}, operator()}), 201)

	r := do(t, b.app, req{"GET", "/api/v1/programs", nil, bearer(member)})
	if r.Status != 200 || r.Header.Get("X-RateLimit-Limit") != strconv.Itoa(limitMyPrograms) {
		t.Fatalf("%d %v %s", r.Status, r.Header, r.Raw)
	}
	list := r.Body["data"].([]any)
	if len(list) != 2 {
		t.Fatalf("programs %s", r.Raw)
	}
	first, second := list[0].(map[string]any), list[1].(map[string]any)
	if first["name"] != "Aardvark" || first["commission_rate"] != 12.5 || first["currency"] != "EUR" ||
		first["role"] != "member" || !strings.HasPrefix(first["workspace_name"].(string), "Acme ") ||
		id(second["id"]) != w.programID || second["role"] != "member" {
		t.Fatalf("programs %s", r.Raw)
	}
	if keys(second) != "api_token_masked,commission_rate,commission_type,cookie_duration,created_at,currency,domain,duration_months,"+
		"hold_days,id,lead_auth,name,role,status,updated_at,workspace_id,workspace_name" {
		t.Fatalf("fields %s", keys(second))
	}
	if strings.Contains(string(r.Raw), itoa(other.programID)+",") || strings.Contains(string(r.Raw), other.liveKey) {
		t.Fatalf("another tenant's program listed: %s", r.Raw)
	}
	// The owner sees the same programs as owner.
	r = do(t, b.app, req{"GET", "/api/v1/programs", nil, bearer(w.ownerToken)})
	if list := r.Body["data"].([]any); len(list) != 2 || list[1].(map[string]any)["role"] != "owner" {
		t.Fatalf("owner's programs %s", r.Raw)
	}

	t.Run("OKNoWorkspaceIsEmpty", func(t *testing.T) {
		_, tok := loneUserToken(t, b, w, "lonely@acme.example")
		r := do(t, b.app, req{"GET", "/api/v1/programs", nil, bearer(tok)})
		if r.Status != 200 || string(r.Raw) != `{"data":[]}` {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
	})
	t.Run("ErrNotADashboardToken", func(t *testing.T) {
		assertError(t, do(t, b.app, req{"GET", "/api/v1/programs", nil, nil}), 401, "Authentication required")
		assertError(t, do(t, b.app, req{"GET", "/api/v1/programs", nil, bearer(w.liveKey)}), 401, "invalid or expired token")
	})
}

func TestCreateMyProgram(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	other := MustWorld(t, b.app)
	admin := dashboardMemberToken(t, b, w, "admin")
	member := dashboardMemberToken(t, b, w, "member")
	body := func(extra map[string]any) map[string]any {
		m := map[string]any{"name": "Shop", "domain": "shop.acme.example", "commission_type": "recurring_percent",
			"commission_rate": 12.5, "duration_months": 6, "hold_days": 14}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	programs := func() int { return countRows(t, b, `SELECT count(*) FROM programs`) }

	t.Run("OKTheOnlyWorkspaceOwned", func(t *testing.T) {
		r := do(t, b.app, req{"POST", "/api/v1/programs", body(nil), bearer(w.ownerToken)})
		d := mustOK(t, r, 201)
		if id(d["workspace_id"]) != w.workspaceID || d["role"] != "owner" || d["commission_type"] != "recurring_percent" ||
			d["commission_rate"] != 12.5 || d["duration_months"] != 6.0 || d["hold_days"] != 14.0 || d["cookie_duration"] != 90.0 ||
			d["currency"] != "USD" || !strings.HasPrefix(d["api_token_masked"].(string), "aff_") ||
			r.Header.Get("X-RateLimit-Limit") != strconv.Itoa(limitCreateProgram) {
			t.Fatalf("created %s", r.Raw)
		}
		// It is the user's program from now on: listed, and readable.
		mustOK(t, do(t, b.app, req{"GET", "/api/v1/programs/" + itoa(id(d["id"])) + "/settings", nil, bearer(w.ownerToken)}), 200)
	})
	t.Run("OKAdminNamesTheWorkspace", func(t *testing.T) {
		d := mustOK(t, do(t, b.app, req{"POST", "/api/v1/programs", body(map[string]any{"workspace_id": w.workspaceID}), bearer(admin)}), 201)
		if id(d["workspace_id"]) != w.workspaceID || d["role"] != "admin" {
			t.Fatalf("created %v", d)
		}
	})
	t.Run("OKFirstProgramMakesAWorkspace", func(t *testing.T) {
		userID, tok := loneUserToken(t, b, w, "founder@new.example")
		d := mustOK(t, do(t, b.app, req{"POST", "/api/v1/programs", body(map[string]any{"domain": "https://New.example/pricing"}), bearer(tok)}), 201)
		if d["workspace_name"] != "new.example" || d["role"] != "owner" || d["domain"] != "new.example" || id(d["workspace_id"]) == w.workspaceID {
			t.Fatalf("created %v", d)
		}
		if n := countRows(t, b, `SELECT count(*) FROM memberships WHERE user_id = $1 AND workspace_id = $2 AND role = 'owner'`,
			userID, id(d["workspace_id"])); n != 1 {
			t.Fatalf("owner memberships %d", n)
		}
		// The new workspace is the user's only one: the next program goes there.
		d2 := mustOK(t, do(t, b.app, req{"POST", "/api/v1/programs", body(nil), bearer(tok)}), 201)
		if id(d2["workspace_id"]) != id(d["workspace_id"]) {
			t.Fatalf("second program in workspace %v", d2["workspace_id"])
		}
	})
	t.Run("Refusals", func(t *testing.T) {
		// w's owner, made an admin of another workspace too, must say which.
		b.db.MustExec(`INSERT INTO memberships (workspace_id, user_id, role) VALUES ($1, $2, 'admin')`, other.workspaceID, w.ownerID)
		twoWorkspaces := w.ownerToken
		for _, tc := range []struct {
			desc    string
			token   string
			body    any
			status  int
			message string
		}{
			{"ErrTwoWorkspacesNoneNamed", twoWorkspaces, body(nil), 400, ledger.MsgWorkspaceRequired},
			{"ErrMemberNamesTheWorkspace", member, body(map[string]any{"workspace_id": w.workspaceID}), 403, ledger.MsgProgramCreate},
			{"ErrAnotherTenantsWorkspace", admin, body(map[string]any{"workspace_id": other.workspaceID}), 404, ledger.MsgWorkspaceNotFound},
			{"ErrNoSuchWorkspace", admin, body(map[string]any{"workspace_id": 99999999}), 404, ledger.MsgWorkspaceNotFound},
			{"ErrWorkspaceIDString", admin, body(map[string]any{"workspace_id": "abc"}), 400, ledger.MsgWorkspaceIDShape},
			{"ErrWorkspaceIDZero", admin, body(map[string]any{"workspace_id": 0}), 400, ledger.MsgWorkspaceIDShape},
			{"ErrMissingFields", admin, map[string]any{"name": "x"}, 400, ledger.MsgProgramMissingFields},
			{"ErrDomain", admin, body(map[string]any{"domain": "not a host"}), 400, ledger.MsgProgramDomain},
			{"ErrCommissionType", admin, body(map[string]any{"commission_type": "flat"}), 400, ledger.MsgInvalidCommissionType("flat")},
			{"ErrRateCap", admin, body(map[string]any{"commission_rate": 101}), 400, ledger.MsgCommissionRateCap},
			{"ErrRateNegative", admin, body(map[string]any{"commission_rate": -1}), 400, ledger.MsgCommissionRate},
			{"ErrCurrency", admin, body(map[string]any{"currency": "GBP"}), 400, ledger.MsgProgramCurrency},
			{"ErrHoldDays", admin, body(map[string]any{"hold_days": 366}), 400, ledger.MsgHoldDays},
			{"ErrNotJSON", admin, "name=x", 400, msgNotJSON},
			{"ErrNoToken", "", body(nil), 401, "Authentication required"},
			{"ErrProgramKey", w.liveKey, body(nil), 401, "invalid or expired token"},
		} {
			t.Run(tc.desc, func(t *testing.T) {
				before := programs()
				var h map[string]string
				if tc.token != "" {
					h = bearer(tc.token)
				}
				assertError(t, do(t, b.app, req{"POST", "/api/v1/programs", tc.body, h}), tc.status, tc.message)
				if after := programs(); after != before {
					t.Fatalf("a refused request stored %d programs", after-before)
				}
			})
		}
	})
	t.Run("MemberOnlyGetsAWorkspaceOfItsOwn", func(t *testing.T) {
		// A member of another brand's workspace starts a brand of its own.
		r := do(t, b.app, req{"POST", "/api/v1/programs", body(map[string]any{"domain": "member.acme.example"}), bearer(member)})
		d := mustOK(t, r, 201)
		if d["role"] != "owner" || d["workspace_name"] != "member.acme.example" || id(d["workspace_id"]) == w.workspaceID {
			t.Fatalf("member's first program: %v", d)
		}
	})
	t.Run("ErrRateLimited", func(t *testing.T) {
		_, tok := loneUserToken(t, b, w, "busy@acme.example")
		for i := 1; i <= limitCreateProgram; i++ {
			// Refused for a missing field, counted all the same.
			if r := do(t, b.app, req{"POST", "/api/v1/programs", map[string]any{}, bearer(tok)}); r.Status != 400 {
				t.Fatalf("request %d: %d %s", i, r.Status, r.Raw)
			}
		}
		r := do(t, b.app, req{"POST", "/api/v1/programs", body(nil), bearer(tok)})
		if r.Status != 429 || r.Header.Get("Retry-After") == "" {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
	})
}

// TestGetMyProgram: a program of the user's workspace reads with the
// user's role; another workspace's, or one that does not exist, is 404.
func TestGetMyProgram(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	other := MustWorld(t, b.app)
	d := mustOK(t, do(t, b.app, req{"GET", "/api/v1/programs/" + itoa(w.programID), nil, bearer(w.ownerToken)}), 200)
	if id(d["id"]) != w.programID || d["role"] != "owner" || d["workspace_name"] == nil || d["api_token_masked"] == nil {
		t.Fatalf("own program: %v", d)
	}
	for _, path := range []string{"/api/v1/programs/" + itoa(other.programID), "/api/v1/programs/99999999", "/api/v1/programs/abc"} {
		assertError(t, do(t, b.app, req{"GET", path, nil, bearer(w.ownerToken)}), 404, "program not found")
	}
	assertError(t, do(t, b.app, req{"GET", "/api/v1/programs/" + itoa(w.programID), nil, nil}), 401, "Authentication required")
}

func TestProgramReadinessByID(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	other := MustWorld(t, b.app)
	member := dashboardMemberToken(t, b, w, "member")
	path := "/api/v1/programs/" + itoa(w.programID) + "/readiness"

	r := do(t, b.app, req{"GET", path, nil, bearer(member)})
	me := do(t, b.app, readinessReq(w.liveKey))
	if r.Status != 200 || me.Status != 200 || r.Header.Get("X-RateLimit-Limit") != strconv.Itoa(limitReadiness) {
		t.Fatalf("%d %s / %d %s", r.Status, r.Raw, me.Status, me.Raw)
	}
	// The same answer as the key's own route: the same clock, the same facts.
	if string(r.Raw) != string(me.Raw) {
		t.Fatalf("by id:\n%s\nby key:\n%s", r.Raw, me.Raw)
	}
	if id(r.Body["program_id"]) != w.programID || r.Body["state"] != "configuring" {
		t.Fatalf("readiness %s", r.Raw)
	}
	assertError(t, do(t, b.app, req{"GET", "/api/v1/programs/" + itoa(other.programID) + "/readiness", nil, bearer(member)}),
		403, "you are not a member of this program's workspace")
	assertError(t, do(t, b.app, req{"GET", "/api/v1/programs/999999/readiness", nil, bearer(member)}), 404, "program not found")
	assertError(t, do(t, b.app, req{"GET", "/api/v1/programs/abc/readiness", nil, bearer(member)}), 404, "program not found")
	assertError(t, do(t, b.app, req{"GET", path, nil, nil}), 401, "Authentication required")
	assertError(t, do(t, b.app, req{"GET", path, nil, bearer(w.liveKey)}), 401, "invalid or expired token")
	// The key's own route still answers keys only, not dashboard tokens.
	if r := do(t, b.app, readinessReq(member)); r.Status != 401 {
		t.Fatalf("me/readiness with a dashboard token: %d %s", r.Status, r.Raw)
	}
}
