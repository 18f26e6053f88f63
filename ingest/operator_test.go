package ingest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
)

func TestOperatorAPI(t *testing.T) {
	b := setup(t)
	app := b.app
	op := operator()

	ws := mustOK(t, do(t, app, req{"POST", "/api/operator/v1/workspaces", map[string]any{"name": "Acme", "owner_email": "Owner@Acme.example"}, op}), 201)
	wsID, ownerID := id(ws["id"]), id(ws["owner_user_id"])
	member := mustOK(t, do(t, app, req{"POST", "/api/operator/v1/workspaces/" + itoa(wsID) + "/members", map[string]any{"email": "m@acme.example", "role": "member"}, op}), 201)
	if id(member["user_id"]) == ownerID {
		t.Fatal("member is the owner")
	}
	sess := mustOK(t, do(t, app, req{"POST", "/api/operator/v1/users/" + itoa(ownerID) + "/sessions", nil, op}), 201)
	if !strings.HasPrefix(sess["token"].(string), "pt_sess_") {
		t.Fatalf("session = %v", sess)
	}
	if exp, err := time.Parse(time.RFC3339, sess["expires_at"].(string)); err != nil || !exp.After(time.Now()) {
		t.Fatalf("expires_at = %v", sess["expires_at"])
	}

	prog := mustOK(t, do(t, app, req{"POST", "/api/operator/v1/programs", map[string]any{
		"workspace_id": wsID, "name": "Acme Pro", "domain": "https://Acme.example/", "commission_type": "recurring_fixed",
		"commission_rate": 12.5, "duration_months": 12, "cookie_duration": 60, "lead_auth": "browser_allowed",
		"hold_days": 14, "currency": "EUR"}, op}), 201)
	want := map[string]any{"name": "Acme Pro", "domain": "acme.example", "commission_type": "recurring_fixed",
		"commission_rate": 12.5, "duration_months": float64(12), "cookie_duration": float64(60),
		"lead_auth": "browser_allowed", "hold_days": float64(14), "currency": "EUR"}
	for k, v := range want {
		if prog[k] != v {
			t.Fatalf("program.%s = %v, want %v (%v)", k, prog[k], v, prog)
		}
	}
	if !strings.HasPrefix(prog["api_token_masked"].(string), "aff_****") {
		t.Fatalf("api_token_masked = %v", prog["api_token_masked"])
	}
	for k := range prog {
		if strings.Contains(k, "key") && k != "api_token_masked" {
			t.Fatalf("program read exposes %s", k)
		}
	}
	progID := itoa(id(prog["id"]))

	partner := mustOK(t, do(t, app, req{"POST", "/api/operator/v1/programs/" + progID + "/partners", map[string]any{"email": "pat@partner.example", "name": "Pat"}, op}), 201)
	link := mustOK(t, do(t, app, req{"POST", "/api/operator/v1/programs/" + progID + "/links", map[string]any{"partner_id": partner["id"], "code": "PAT-1"}, op}), 201)
	if link["code"] != "PAT-1" || link["active"] != true {
		t.Fatalf("link = %v", link)
	}
	off := mustOK(t, do(t, app, req{"POST", "/api/operator/v1/programs/" + progID + "/links", map[string]any{"partner_id": partner["id"], "code": "PAT-2", "active": false}, op}), 201)
	if off["active"] != false {
		t.Fatalf("link = %v", off)
	}
	patched := mustOK(t, do(t, app, req{"PATCH", "/api/operator/v1/links/" + itoa(id(link["id"])), map[string]any{"active": false}, op}), 200)
	if patched["active"] != false {
		t.Fatalf("patched = %v", patched)
	}
	acct := mustOK(t, do(t, app, req{"POST", "/api/operator/v1/programs/" + progID + "/processor-account", map[string]any{"account_id": "acct_1Abc"}, op}), 200)
	if acct["account_id"] != "acct_1Abc" || itoa(id(acct["program_id"])) != progID {
		t.Fatalf("processor account = %v", acct)
	}
	agent := mustOK(t, do(t, app, req{"POST", "/api/operator/v1/agent-keys", map[string]any{"workspace_id": wsID, "scopes": []string{"programs:read"}}, op}), 201)
	if !strings.HasPrefix(agent["key"].(string), "agt_") {
		t.Fatalf("agent key = %v", agent)
	}
	susp := mustOK(t, do(t, app, req{"POST", "/api/operator/v1/users/" + itoa(id(member["user_id"])) + "/suspend", nil, op}), 200)
	if susp["suspended_at"] == nil {
		t.Fatalf("suspend = %v", susp)
	}

	// What the operator provisioned is in the database.
	var n int
	b.db.QueryRow(`SELECT count(*) FROM workspaces w JOIN programs p ON p.workspace_id = w.id
		JOIN enrollments e ON e.program_id = p.id JOIN links l ON l.partner_id = e.partner_id AND l.program_id = p.id
		WHERE w.id = $1`, wsID).Scan(&n)
	if n != 2 {
		t.Fatalf("database shows %d links of the provisioned partner, want 2", n)
	}
	var agentHash []byte
	b.db.QueryRow(`SELECT key_hash FROM agent_keys WHERE workspace_id = $1`, wsID).Scan(&agentHash)
	if len(agentHash) != 32 || strings.Contains(string(agentHash), "agt_") {
		t.Fatal("agent key not stored hashed")
	}

	t.Run("RotationDeadlineAsADate", func(t *testing.T) {
		// An ISO 8601 date is its midnight UTC.
		d := mustOK(t, do(t, app, req{"POST", "/api/operator/v1/programs/" + progID + "/key-rotation", map[string]any{"deadline": "2099-06-01"}, op}), 200)
		if d["deadline"] != "2099-06-01T00:00:00.000Z" {
			t.Fatalf("deadline = %v", d["deadline"])
		}
	})

	t.Run("ErrValidation", func(t *testing.T) {
		for _, tc := range []struct {
			desc   string
			r      req
			status int
			msg    string
		}{
			{"workspace without owner", req{"POST", "/api/operator/v1/workspaces", map[string]any{"name": "X"}, op}, 400, "email must be a valid email address"},
			{"program without workspace", req{"POST", "/api/operator/v1/programs", map[string]any{"name": "X"}, op}, 400, "workspace_id is required and must be an integer"},
			{"program missing fields", req{"POST", "/api/operator/v1/programs", map[string]any{"workspace_id": wsID, "name": "X"}, op}, 400, "Missing required fields: name, domain, commission_type, commission_rate"},
			{"program rate as string", req{"POST", "/api/operator/v1/programs", map[string]any{"workspace_id": wsID, "name": "X", "domain": "x.example", "commission_type": "percent", "commission_rate": "30"}, op}, 400, "commission_rate must be a positive number"},
			{"program unknown workspace", req{"POST", "/api/operator/v1/programs", map[string]any{"workspace_id": 999999, "name": "X", "domain": "x.example", "commission_type": "percent", "commission_rate": 30}, op}, 404, "workspace not found"},
			{"link code taken", req{"POST", "/api/operator/v1/programs/" + progID + "/links", map[string]any{"partner_id": partner["id"], "code": "PAT-1"}, op}, 409, "code is already used by another link"},
			{"link of unknown program", req{"POST", "/api/operator/v1/programs/999999/links", map[string]any{"partner_id": partner["id"], "code": "Z"}, op}, 404, "program not found"},
			{"patch link without active", req{"PATCH", "/api/operator/v1/links/" + itoa(id(link["id"])), map[string]any{"active": "no"}, op}, 400, "active must be a boolean"},
			{"rotation without deadline", req{"POST", "/api/operator/v1/programs/" + progID + "/key-rotation", map[string]any{"deadline": "tomorrow"}, op}, 400, "deadline must be an ISO 8601 time"},
			{"processor account shape", req{"POST", "/api/operator/v1/programs/" + progID + "/processor-account", map[string]any{"account_id": "cus_1"}, op}, 400, "account_id must be a connected account id (acct_...)"},
			{"agent key scopes", req{"POST", "/api/operator/v1/agent-keys", map[string]any{"workspace_id": wsID, "scopes": []string{}}, op}, 400, "scopes must be a non-empty array of: programs:read, programs:write"},
			{"member role", req{"POST", "/api/operator/v1/workspaces/" + itoa(wsID) + "/members", map[string]any{"email": "x@acme.example", "role": "boss"}, op}, 400, "role must be one of: owner, admin, member"},
			{"session of unknown user", req{"POST", "/api/operator/v1/users/999999/sessions", nil, op}, 404, "user not found"},
			{"non-numeric id", req{"POST", "/api/operator/v1/users/abc/sessions", nil, op}, 404, "user not found"},
		} {
			t.Run(tc.desc, func(t *testing.T) {
				r := do(t, app, tc.r)
				assertPlatformError(t, r, tc.status, statusNames[tc.status], tc.msg, "")
			})
		}
	})

	t.Run("ErrUnauthorized", func(t *testing.T) {
		for _, h := range []map[string]string{nil, bearer("wrong"), bearer(testOperatorToken + "x"), {"Authorization": testOperatorToken}} {
			r := do(t, app, req{"POST", "/api/operator/v1/workspaces", map[string]any{"name": "A", "owner_email": "a@b.example"}, h})
			assertPlatformError(t, r, 401, "UnauthorizedError", "Invalid or missing operator token", "")
		}
	})

	t.Run("DisabledWithoutToken", func(t *testing.T) {
		s := newTestServer(b.db, b.clock)
		s.cfg.OperatorToken = ""
		r := do(t, s.App(), req{"POST", "/api/operator/v1/workspaces", map[string]any{"name": "A", "owner_email": "a@b.example"}, bearer("")})
		if r.Status != 404 {
			t.Fatalf("operator API without OPERATOR_TOKEN: %d", r.Status)
		}
	})
}

func TestHealth(t *testing.T) {
	b := setup(t)
	if r := do(t, b.app, req{"GET", "/healthz", nil, nil}); r.Status != 200 || r.Body["status"] != "ok" {
		t.Fatalf("healthz: %d %s", r.Status, r.Raw)
	}
	b.srv.checks = map[string]Check{"postgres": b.db.PingContext}
	if r := do(t, b.app, req{"GET", "/readyz", nil, nil}); r.Status != 200 || r.Body["status"] != "ready" {
		t.Fatalf("readyz: %d %s", r.Status, r.Raw)
	}
	// One backend away: the edge still answers what it can, so it stays
	// in the load balancer and says what is missing.
	b.srv.checks["redis"] = func(ctx context.Context) error { return errors.New("connection refused") }
	r := do(t, b.app, req{"GET", "/readyz", nil, nil})
	if r.Status != 200 || r.Body["status"] != "degraded" || r.Body["checks"].(map[string]any)["redis"] != "error: connection refused" {
		t.Fatalf("readyz with redis down: %d %s", r.Status, r.Raw)
	}
	// Everything away: not ready.
	b.srv.checks["postgres"] = func(ctx context.Context) error { return errors.New("connection refused") }
	if r := do(t, b.app, req{"GET", "/readyz", nil, nil}); r.Status != 503 || r.Body["status"] != "unavailable" {
		t.Fatalf("readyz with every backend down: %d %s", r.Status, r.Raw)
	}
}

// The synthetic test partner exists for the CLI's test events and the
// synthetic chain: a normal link of it would send real clicks, and pay
// real commissions, to a partner nobody is. The operator API refuses one
// (a test link is made only by the fixture), and stores nothing.
func TestOperatorRefusesNormalLinkForTestPartner(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	fx, err := postgres.NewSyntheticStore(b.db.DB).EnsureFixture(context.Background(), w.programID)
	if err != nil {
		t.Fatal(err)
	}
	for _, active := range []bool{true, false} {
		r := do(t, b.app, req{"POST", "/api/operator/v1/programs/" + itoa(w.programID) + "/links",
			map[string]any{"partner_id": fx.PartnerID, "code": "real-" + strconv.FormatBool(active), "active": active}, operator()})
		if r.Status != 400 || r.Body["error"].(map[string]any)["message"] != ledger.MsgTestPartnerLink {
			t.Fatalf("normal link (active %v) for the test partner: %d %s", active, r.Status, r.Raw)
		}
	}
	var n int
	if err := b.db.QueryRow(`SELECT count(*) FROM links WHERE partner_id = $1 AND NOT is_test`, fx.PartnerID).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d normal links of the test partner stored (%v)", n, err)
	}
	// A real partner still gets its links.
	mustOK(t, do(t, b.app, req{"POST", "/api/operator/v1/programs/" + itoa(w.programID) + "/links",
		map[string]any{"partner_id": w.partnerID, "code": "second-" + itoa(w.programID)}, operator()}), 201)
}
