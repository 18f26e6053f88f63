package ingest

import (
	"testing"

	"github.com/partnertrack/partnertrack/ledger"
)

// MustAgentKey issues an agent key with scopes through the operator API.
func MustAgentKey(t *testing.T, b *testBundle, workspaceID int64, scopes ...string) string {
	t.Helper()
	d := mustOK(t, do(t, b.app, req{"POST", "/api/operator/v1/agent-keys",
		map[string]any{"workspace_id": workspaceID, "scopes": scopes}, operator()}), 201)
	return d["key"].(string)
}

func TestAgentAPI(t *testing.T) {
	b, app, changes := setupSettings(t)
	b.app = app
	w := MustWorld(t, b.app)
	other := MustWorld(t, b.app)
	second := mustOK(t, do(t, b.app, req{"POST", "/api/operator/v1/programs", map[string]any{
		"workspace_id": w.workspaceID, "name": "Acme Two", "domain": "two.acme.example",
		"commission_type": "fixed", "commission_rate": 5}, operator()}), 201)
	readKey := MustAgentKey(t, b, w.workspaceID, ledger.ScopeProgramsRead)
	writeKey := MustAgentKey(t, b, w.workspaceID, ledger.ScopeProgramsWrite)
	bothKey := MustAgentKey(t, b, w.workspaceID, ledger.ScopeProgramsRead, ledger.ScopeProgramsWrite)
	programPath := "/api/agent/v1/programs/" + itoa(w.programID)
	otherPath := "/api/agent/v1/programs/" + itoa(other.programID)

	t.Run("OKListConfinedToTheWorkspace", func(t *testing.T) {
		r := do(t, b.app, req{"GET", "/api/agent/v1/programs", nil, bearer(readKey)})
		list, _ := r.Body["data"].([]any)
		if r.Status != 200 || len(list) != 2 {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
		first, last := list[0].(map[string]any), list[1].(map[string]any)
		if id(first["id"]) != w.programID || id(last["id"]) != id(second["id"]) || first["api_token_masked"] == "" {
			t.Fatalf("programs %v", list)
		}
		if r.Header.Get("X-RateLimit-Limit") != "60" {
			t.Fatalf("rate limit headers %v", r.Header)
		}
	})
	t.Run("OKRead", func(t *testing.T) {
		d := mustOK(t, do(t, b.app, req{"GET", programPath, nil, bearer(bothKey)}), 200)
		if id(d["id"]) != w.programID || d["commission_type"] != "percent" || d["api_key"] != nil {
			t.Fatalf("program %v", d)
		}
	})
	t.Run("OKUpdate", func(t *testing.T) {
		changes.take()
		d := mustOK(t, do(t, b.app, req{"PATCH", programPath, map[string]any{"cookie_duration": 45, "lead_auth": "browser_allowed",
			"stripe_webhook_secret": "whsec_agent"}, bearer(writeKey)}), 200)
		if d["cookie_duration"] != 45.0 || d["lead_auth"] != "browser_allowed" || d["commission_type"] != "percent" ||
			d["stripe_webhook_secret_set"] != true {
			t.Fatalf("updated %v", d)
		}
		if got := changes.take(); len(got) != 1 || got[0] != w.programID {
			t.Fatalf("ProgramChanged calls %v, want one for program %d", got, w.programID)
		}
		d = mustOK(t, do(t, b.app, req{"GET", programPath, nil, bearer(readKey)}), 200)
		if d["cookie_duration"] != 45.0 {
			t.Fatalf("read back %v", d)
		}
	})
	t.Run("Refusals", func(t *testing.T) {
		for _, tc := range []struct {
			desc    string
			method  string
			path    string
			body    any
			header  map[string]string
			status  int
			message string
		}{
			{"ErrReadWithoutScope", "GET", programPath, nil, bearer(writeKey), 403, "This agent key lacks the programs:read scope"},
			{"ErrListWithoutScope", "GET", "/api/agent/v1/programs", nil, bearer(writeKey), 403, "This agent key lacks the programs:read scope"},
			{"ErrWriteWithoutScope", "PATCH", programPath, map[string]any{"cookie_duration": 10}, bearer(readKey), 403, "This agent key lacks the programs:write scope"},
			{"ErrOtherWorkspaceRead", "GET", otherPath, nil, bearer(bothKey), 404, "program not found"},
			{"ErrOtherWorkspaceWrite", "PATCH", otherPath, map[string]any{"cookie_duration": 10}, bearer(bothKey), 404, "program not found"},
			{"ErrNoProgram", "GET", "/api/agent/v1/programs/999999", nil, bearer(readKey), 404, "program not found"},
			{"ErrValidation", "PATCH", programPath, map[string]any{"cookie_duration": 400}, bearer(writeKey), 400, ledger.MsgCookieDuration},
			{"ErrValidationRate", "PATCH", programPath, map[string]any{"commission_rate": 150}, bearer(writeKey), 400, ledger.MsgCommissionRateCap},
			{"ErrValidationSecret", "PATCH", programPath, map[string]any{"stripe_webhook_secret": "sk_live"}, bearer(writeKey), 400, ledger.MsgStripeWebhookSecret},
			{"ErrNotJSON", "PATCH", programPath, "nope", bearer(writeKey), 400, msgNotJSON},
			{"ErrProgramKey", "GET", "/api/agent/v1/programs", nil, bearer(w.liveKey), 401, ledger.MsgAgentProgramKey},
			{"ErrProgramKeyWrite", "PATCH", programPath, map[string]any{"cookie_duration": 10}, bearer(w.liveKey), 401, ledger.MsgAgentProgramKey},
			{"ErrDashboardToken", "GET", "/api/agent/v1/programs", nil, bearer(w.ownerToken), 401, ledger.MsgAgentKeyInvalid},
			{"ErrOperatorToken", "GET", "/api/agent/v1/programs", nil, operator(), 401, ledger.MsgAgentKeyInvalid},
			{"ErrUnknownAgentKey", "GET", "/api/agent/v1/programs", nil, bearer("agt_notakey"), 401, ledger.MsgAgentKeyInvalid},
			{"ErrNoHeader", "GET", "/api/agent/v1/programs", nil, nil, 401, ledger.MsgAgentKeyRequired},
			{"ErrEmptyBearer", "GET", "/api/agent/v1/programs", nil, map[string]string{"Authorization": "Bearer "}, 401, ledger.MsgAgentKeyRequired},
			{"ErrBasic", "GET", "/api/agent/v1/programs", nil, map[string]string{"Authorization": "Basic " + readKey}, 401, ledger.MsgAgentKeyRequired},
		} {
			t.Run(tc.desc, func(t *testing.T) {
				assertError(t, do(t, b.app, req{tc.method, tc.path, tc.body, tc.header}), tc.status, tc.message)
			})
		}
		d := mustOK(t, do(t, b.app, req{"GET", programPath, nil, bearer(readKey)}), 200)
		if d["cookie_duration"] != 45.0 || d["commission_rate"] != 30.0 {
			t.Fatalf("a refused update changed the program: %v", d)
		}
		if got := changes.take(); len(got) != 0 {
			t.Fatalf("refused updates called ProgramChanged %v", got)
		}
	})
}
