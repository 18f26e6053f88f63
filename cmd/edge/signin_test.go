package main

import (
	"testing"

	"github.com/partnertrack/partnertrack/ingest/oidc/testissuer"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/workers/redistest"
)

// The edge wires OIDC_ISSUER_URL and OIDC_CLIENT_ID to sign-in: an owner
// invited by email signs in with the provider's id_token and reads the
// settings and the event listing of their program.
func TestEdgeSignInWithConfiguredIssuer(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	redistest.Client(t)
	iss := testissuer.New(t)
	m := MustRunMain(t, map[string]string{
		"DATABASE_URL":    db.URL,
		"REDIS_URL":       redistest.URL(),
		"LISTEN_ADDR":     "127.0.0.1:0",
		"OPERATOR_TOKEN":  "op-token",
		"LOG_LEVEL":       "error",
		"OIDC_ISSUER_URL": iss.URL,
		"OIDC_CLIENT_ID":  testissuer.ClientID,
	})
	base := "http://" + m.Addr()

	status, body := post(t, base+"/api/operator/v1/workspaces", "op-token", map[string]any{"name": "Acme", "owner_email": "owner@acme.example"})
	if status != 201 {
		t.Fatalf("workspace: %d %v", status, body)
	}
	status, body = post(t, base+"/api/operator/v1/programs", "op-token", map[string]any{
		"workspace_id": body["data"].(map[string]any)["id"], "name": "Acme", "domain": "acme.example",
		"commission_type": "percent", "commission_rate": 20})
	if status != 201 {
		t.Fatalf("program: %d %v", status, body)
	}
	prog := jsonNum(body["data"].(map[string]any)["id"].(float64))

	status, body = post(t, base+"/api/v1/auth/session", "", map[string]any{"id_token": iss.Token(t, "owner-sub", "Owner@acme.example")})
	if status != 200 {
		t.Fatalf("sign-in: %d %v", status, body)
	}
	token := body["data"].(map[string]any)["token"].(string)

	if status, body := get(t, base+"/api/v1/programs/"+prog+"/settings", token); status != 200 || body["data"].(map[string]any)["api_token_masked"] == "" {
		t.Fatalf("settings: %d %v", status, body)
	}
	if status, body := get(t, base+"/api/tracking/events/"+prog, token); status != 200 {
		t.Fatalf("listing: %d %v", status, body)
	}
}

// Without OIDC_ISSUER_URL, sign-in answers 503 and says what to set.
func TestEdgeSignInUnconfigured(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	redistest.Client(t)
	m := MustRunMain(t, map[string]string{
		"DATABASE_URL": db.URL,
		"REDIS_URL":    redistest.URL(),
		"LISTEN_ADDR":  "127.0.0.1:0",
		"LOG_LEVEL":    "error",
	})
	status, body := post(t, "http://"+m.Addr()+"/api/v1/auth/session", "", map[string]any{"id_token": "x"})
	if status != 503 {
		t.Fatalf("sign-in without a provider: %d %v", status, body)
	}
}
