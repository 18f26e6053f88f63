package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/partnertrack/partnertrack/ingest/apidoc/apitest"

	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/workers/redistest"
)

// MustRunMain starts the real edge program on a free port.
func MustRunMain(tb testing.TB, env map[string]string) *Main {
	tb.Helper()
	m := NewMain()
	if err := m.ParseFlags(nil, func(k string) string { return env[k] }); err != nil {
		tb.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := m.Close(); err != nil {
			tb.Errorf("close: %v", err)
		}
	})
	return m
}

func post(t *testing.T, url, token string, body any) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	return send(t, req, token)
}

// get reads a JSON answer, with the bearer token when one is given.
func get(t *testing.T, url, token string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	return send(t, req, token)
}

// send does req with the bearer token when one is given and decodes the
// JSON answer.
func send(t *testing.T, req *http.Request, token string) (int, map[string]any) {
	t.Helper()
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	// Every exchange is checked against the OpenAPI document.
	client := &http.Client{Transport: apitest.Default(t).Transport(t, nil)}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func TestEdgeServesTheOperatorAPI(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	redistest.Client(t)
	m := MustRunMain(t, map[string]string{
		"DATABASE_URL":   db.URL,
		"REDIS_URL":      redistest.URL(),
		"LISTEN_ADDR":    "127.0.0.1:0",
		"OPERATOR_TOKEN": "op-token",
		"LOG_LEVEL":      "error",
	})
	base := "http://" + m.Addr()

	resp, err := http.Get(base + "/readyz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("readyz: %v %v", resp, err)
	}
	status, body := post(t, base+"/api/operator/v1/workspaces", "op-token", map[string]any{"name": "Acme", "owner_email": "o@acme.example"})
	if status != 201 {
		t.Fatalf("workspace: %d %v", status, body)
	}
	ws := body["data"].(map[string]any)["id"]
	status, body = post(t, base+"/api/operator/v1/programs", "op-token", map[string]any{
		"workspace_id": ws, "name": "Acme", "domain": "acme.example", "commission_type": "percent", "commission_rate": 20})
	if status != 201 {
		t.Fatalf("program: %d %v", status, body)
	}
	prog := body["data"].(map[string]any)["id"].(float64)
	status, body = post(t, base+"/api/operator/v1/programs/"+jsonNum(prog)+"/partners", "op-token", map[string]any{"email": "p@p.example", "name": "P"})
	if status != 201 {
		t.Fatalf("partner: %d %v", status, body)
	}
	partner := body["data"].(map[string]any)["id"]
	status, body = post(t, base+"/api/operator/v1/programs/"+jsonNum(prog)+"/links", "op-token", map[string]any{"partner_id": partner, "code": "p-1"})
	if status != 201 {
		t.Fatalf("link: %d %v", status, body)
	}
	var code string
	if err := db.QueryRow(`SELECT l.code FROM links l JOIN programs p ON p.id = l.program_id WHERE p.workspace_id = $1`, int64(ws.(float64))).Scan(&code); err != nil || code != "p-1" {
		t.Fatalf("link in database: %q, %v", code, err)
	}
	if status, _ := post(t, base+"/api/operator/v1/workspaces", "wrong", map[string]any{}); status != 401 {
		t.Fatalf("wrong operator token: %d", status)
	}
}

func jsonNum(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}

func TestEdgeFailsFastNamingTheVariable(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	for _, tc := range []struct {
		desc, variable string
		env            map[string]string
	}{
		{"postgres down", "DATABASE_URL", map[string]string{"DATABASE_URL": "postgres://postgres@127.0.0.1:1/x?sslmode=disable"}},
		{"redis down", "REDIS_URL", map[string]string{"DATABASE_URL": db.URL, "REDIS_URL": "redis://127.0.0.1:1/0"}},
		{"schema behind", "partnerctl migrate", map[string]string{"DATABASE_URL": strings.Replace(db.URL, db.Name, "postgres", 1)}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			m := NewMain()
			tc.env["LISTEN_ADDR"] = "127.0.0.1:0"
			if err := m.ParseFlags(nil, func(k string) string { return tc.env[k] }); err != nil {
				t.Fatal(err)
			}
			err := m.Run(context.Background())
			if err == nil {
				m.Close()
				t.Fatal("edge started without its backend")
			}
			if !strings.Contains(err.Error(), tc.variable) || strings.Count(err.Error(), "\n") > 0 {
				t.Fatalf("error %q is not one line naming %s", err, tc.variable)
			}
		})
	}
}

// TestEdgeSaysOneLineWhenRedisIsDown runs the edge's main in a child
// process (this test binary again) with Redis unreachable: everything it
// writes is the one line naming REDIS_URL, and it exits 1. go-redis
// printed its dial retries to stderr before that line.
func TestEdgeSaysOneLineWhenRedisIsDown(t *testing.T) {
	if os.Getenv("EDGE_TEST_RUN_MAIN") == "1" {
		os.Args = []string{"edge"}
		main()
		return
	}
	t.Parallel()
	db := pgtest.New(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestEdgeSaysOneLineWhenRedisIsDown$")
	cmd.Env = append(os.Environ(), "EDGE_TEST_RUN_MAIN=1", "DATABASE_URL="+db.URL,
		"REDIS_URL=redis://127.0.0.1:1/0", "LISTEN_ADDR=127.0.0.1:0", "LOG_LEVEL=info")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("edge exited with %v, want status 1; output:\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "edge: cannot reach Redis") || !strings.Contains(lines[0], "REDIS_URL") {
		t.Fatalf("output is not one line naming REDIS_URL:\n%s", out)
	}
}
