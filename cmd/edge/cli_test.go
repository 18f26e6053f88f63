package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ingest/apidoc/apitest"

	"github.com/partnertrack/partnertrack/cmd/partnertrack/cli"
	"github.com/partnertrack/partnertrack/ingest/oidc/testissuer"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/workers/redistest"
)

// cliRun is one run of the partnertrack CLI, in process.
type cliRun struct {
	code           int
	stdout, stderr string
}

// TestCLIAgainstTheEdge runs the real edge program with an in-process
// sign-in provider and drives it with the partnertrack CLI, as a new brand
// would in its first ten minutes: login (the browser part is played by
// the login page's own callback), init, the owner's key, status, the
// synthetic chain, readiness; and the exit codes.
func TestCLIAgainstTheEdge(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	rdb := redistest.Client(t)
	ns := redistest.Namespace(t, rdb)
	iss := testissuer.New(t)
	m := MustRunMain(t, map[string]string{
		"DATABASE_URL":    db.URL,
		"REDIS_URL":       redistest.URL(),
		"LISTEN_ADDR":     "127.0.0.1:0",
		"OPERATOR_TOKEN":  "op-token",
		"LOG_LEVEL":       "error",
		"QUEUE_NAMESPACE": string(ns),
		"OIDC_ISSUER_URL": iss.URL,
		"OIDC_CLIENT_ID":  testissuer.ClientID,
	})
	base := "http://" + m.Addr()
	const email = "brand@acme.example"
	// The operator creates the brand's workspace for its email.
	status, body := post(t, base+"/api/operator/v1/workspaces", "op-token", map[string]any{"name": "Acme", "owner_email": email})
	if status != 201 {
		t.Fatalf("workspace: %d %v", status, body)
	}
	workspace := jsonNum(body["data"].(map[string]any)["id"].(float64))

	configDir := t.TempDir()
	var opened []string
	// browser is what the person does with the login link: open the page,
	// sign in with the provider, and let the page post the callback.
	browser := func(link string) error {
		opened = append(opened, link)
		u, err := url.Parse(link)
		if err != nil {
			return err
		}
		resp, err := http.Get(base + u.Path + "?" + u.RawQuery)
		if err != nil {
			return err
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		state := regexp.MustCompile(`data-state="([^"]+)"`).FindSubmatch(page)
		callback := regexp.MustCompile(`data-callback="([^"]+)"`).FindSubmatch(page)
		confirm := regexp.MustCompile(`data-confirm="([^"]+)"`).FindSubmatch(page)
		code := regexp.MustCompile(`data-user-code="([^"]+)"`).FindSubmatch(page)
		if resp.StatusCode != 200 || state == nil || callback == nil || confirm == nil || code == nil {
			return fmt.Errorf("login page %d: %s", resp.StatusCode, page)
		}
		// The person confirms the code the terminal shows, then signs in.
		if status, body := post(t, base+string(confirm[1]), "", map[string]any{"state": string(state[1]), "user_code": string(code[1])}); status != 200 {
			return fmt.Errorf("confirm %d %v", status, body)
		}
		status, body := post(t, base+string(callback[1]), "", map[string]any{"state": string(state[1]), "id_token": iss.Token(t, "sub-brand", email)})
		if status != 200 {
			return fmt.Errorf("callback %d %v", status, body)
		}
		return nil
	}
	run := func(env map[string]string, args ...string) cliRun {
		t.Helper()
		var out, errOut bytes.Buffer
		code := cli.Run(context.Background(), args, cli.Env{
			Stdout: &out, Stderr: &errOut,
			Getenv:       func(k string) string { return env[k] },
			ConfigDir:    func() (string, error) { return configDir, nil },
			OpenBrowser:  browser,
			PollInterval: 20 * time.Millisecond,
			// Every call of the CLI is checked against the API document.
			HTTP: &http.Client{Transport: apitest.Default(t).Transport(t, nil), Timeout: 30 * time.Second},
		})
		return cliRun{code, out.String(), errOut.String()}
	}
	env := map[string]string{"PARTNERTRACK_API_URL": base}
	must := func(r cliRun, code int, contains ...string) {
		t.Helper()
		if r.code != code {
			t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
		}
		for _, s := range contains {
			if !strings.Contains(r.stdout+r.stderr, s) {
				t.Fatalf("output lacks %q\nstdout: %s\nstderr: %s", s, r.stdout, r.stderr)
			}
		}
	}

	// 1. Login: the link is printed, the browser signs in, the CLI polls.
	r := run(env, "login")
	must(r, 0, "Open this link to sign in", "Logged in as "+email, "Advertiser (workspace): "+workspace)
	if len(opened) != 1 || !strings.Contains(r.stderr, opened[0]) {
		t.Fatalf("opened %v; stderr %s", opened, r.stderr)
	}
	credPath := filepath.Join(configDir, "partnertrack", "credentials.json")
	info, err := os.Stat(credPath)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("credentials %v, %v", info, err)
	}
	var creds cli.Credentials
	raw, _ := os.ReadFile(credPath)
	if json.Unmarshal(raw, &creds) != nil || !strings.HasPrefix(creds.Token, "pt_cli_") || creds.APIURL != base ||
		creds.Email != email || creds.AdvertiserID == nil || time.Until(creds.ExpiresAt) < 89*24*time.Hour {
		t.Fatalf("credentials %s", raw)
	}
	must(run(env, "login"), 0, "Already logged in")

	// 2. Init: the program, without its key.
	r = run(env, "init", "--name", "Acme Pro", "--domain", "https://Acme.example/", "--commission-type", "recurring_percent",
		"--commission-rate", "30", "--duration-months", "12", "--json")
	must(r, 0)
	var program struct {
		ProgramID      int64  `json:"program_id"`
		Domain         string `json:"domain"`
		APITokenMasked string `json:"api_token_masked"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &program); err != nil || program.ProgramID == 0 || program.Domain != "acme.example" ||
		strings.Contains(r.stdout, `"api_key"`) {
		t.Fatalf("init: %v %s", err, r.stdout)
	}
	prog := fmt.Sprint(program.ProgramID)
	must(run(env, "programs"), 0, "COMMISSION", "Acme Pro", "30% recurring (12 months)")

	// 3. The owner generates the key (dashboard sign-in, owner action).
	_, body = post(t, base+"/api/v1/auth/session", "", map[string]any{"id_token": iss.Token(t, "sub-brand", email)})
	dash := body["data"].(map[string]any)["token"].(string)
	status, body = post(t, base+"/api/v1/programs/"+prog+"/api-key", dash, map[string]any{})
	if status != 200 {
		t.Fatalf("api-key: %d %v", status, body)
	}
	key := body["data"].(map[string]any)["api_key"].(string)
	keyEnv := map[string]string{"PARTNERTRACK_API_URL": base, "PARTNERTRACK_API_KEY": key}

	// 4. Status, the chain, a single test event, readiness.
	must(run(keyEnv, "status"), 0, "Acme Pro (id "+prog+")", "0 clicks, 0 leads, 0 sales")
	must(run(env, "status", "--api-key", key, "--program-id", prog), 0, "Acme Pro")
	r = run(keyEnv, "test-event", "--chain")
	must(r, 0, "Attribution works")
	for _, step := range []string{"click", "lead", "sale"} {
		if !regexp.MustCompile(step + `\s+attributed`).MatchString(r.stdout) {
			t.Fatalf("chain output: %s", r.stdout)
		}
	}
	r = run(keyEnv, "test-event", "--chain", "--json")
	must(r, 0)
	var chain struct {
		Type       string            `json:"type"`
		Attributed bool              `json:"attributed"`
		Verdict    map[string]string `json:"verdict"`
	}
	if json.Unmarshal([]byte(r.stdout), &chain) != nil || chain.Type != "chain" || !chain.Attributed || chain.Verdict["lead"] != "attributed" {
		t.Fatalf("chain json: %s", r.stdout)
	}
	must(run(keyEnv, "test-event", "sale"), 0, "Test sale recorded")
	must(run(keyEnv, "readiness"), 0, "surface_stripe_connect_url", "Blocked on payout")

	// 5. Exit codes: user errors are 2, server errors 3.
	for _, c := range []struct {
		desc string
		env  map[string]string
		args []string
		code int
		says string
	}{
		{"status without a key", env, []string{"status"}, 2, "no API key"},
		{"status with an unknown key", env, []string{"status", "--api-key", "aff_nope"}, 2, "Invalid API token (HTTP 401)"},
		{"status of another program", keyEnv, []string{"status", "--program-id", "999"}, 2, "program_id does not match the API key (HTTP 403)"},
		{"an unknown test event", keyEnv, []string{"test-event", "purchase"}, 2, "Invalid event_type: purchase. Valid: click, lead, sale"},
		{"init without its fields", env, []string{"init", "--name", "X"}, 2, "Missing required fields: name, domain, commission_type, commission_rate"},
		{"init in another workspace", env, []string{"init", "--name", "X", "--domain", "x.example", "--commission-type", "fixed",
			"--commission-rate", "5", "--advertiser-id", "999"}, 2, "advertiser_id does not match the authenticated account"},
		{"an unknown command", env, []string{"launch"}, 2, "unknown command"},
		{"an unreachable server", map[string]string{"PARTNERTRACK_API_KEY": key}, []string{"status", "--api-url", "http://127.0.0.1:1"}, 3, "cannot reach http://127.0.0.1:1"},
		{"a login for another server", map[string]string{"PARTNERTRACK_API_URL": "http://127.0.0.1:1"}, []string{"programs"}, 2, "logged in to " + base},
	} {
		t.Run(c.desc, func(t *testing.T) {
			must(run(c.env, c.args...), c.code, c.says)
		})
	}

	// 6. Logout forgets the login.
	must(run(env, "logout"), 0, "Logged out")
	if _, err := os.Stat(credPath); !os.IsNotExist(err) {
		t.Fatalf("credentials still there: %v", err)
	}
	must(run(env, "programs"), 2, "not logged in")
}
