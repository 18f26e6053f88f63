package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// newFakeEdge answers the CLI's calls with canned bodies, per method and
// path: the CLI's own behaviour (exit codes, polling, credentials) without
// a real edge, which cmd/edge's TestCLIAgainstTheEdge provides.
func newFakeEdge(t *testing.T, handlers map[string]http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h, ok := handlers[r.Method+" "+r.URL.Path]; ok {
			h(w, r)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func reply(status int, body string, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write([]byte(body))
	}
}

type result struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, dir string, env map[string]string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(context.Background(), args, Env{
		Stdout: &out, Stderr: &errOut,
		Getenv:       func(k string) string { return env[k] },
		ConfigDir:    func() (string, error) { return dir, nil },
		PollInterval: time.Millisecond,
	})
	return result{code, out.String(), errOut.String()}
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	edge := newFakeEdge(t, map[string]http.HandlerFunc{
		"GET /api/v1/cli/status": reply(500, `{"data":null,"error":{"status":500,"name":"InternalServerError",`+
			`"message":"Failed to get status (request_id: req_abc)","details":{"request_id":"req_abc"}}}`, "X-Request-ID", "req_abc"),
		"POST /api/v1/cli/test-event": func(w http.ResponseWriter, r *http.Request) {
			var body map[string]string
			json.NewDecoder(r.Body).Decode(&body)
			switch {
			case body["type"] == "chain" && r.Header.Get("Authorization") == "Bearer aff_capped":
				reply(429, `{"error":{"code":"rate_limited","status":429,"message":"Too many synthetic chains (max 10/program/hour).","retry_after_seconds":1200}}`, "Retry-After", "1200")(w, r)
			case body["type"] == "chain":
				reply(200, `{"data":{"type":"chain","short_code":"s-1","customer_key":"k","verdict":{"click":"attributed","lead":"unattributed","sale":"pending"},"attributed":false}}`)(w, r)
			default:
				reply(400, `{"data":null,"error":{"status":400,"name":"BadRequestError","message":"Invalid event_type: x. Valid: click, lead, sale","details":{}}}`)(w, r)
			}
		},
		"GET /api/v1/programs/me/readiness": reply(502, `<html>bad gateway</html>`),
	})
	env := map[string]string{EnvAPIURL: edge.URL, EnvAPIKey: "aff_key"}
	dir := t.TempDir()
	cases := []struct {
		desc   string
		env    map[string]string
		args   []string
		code   int
		stderr string
		stdout string
	}{
		{desc: "a 500 is a server error and names the request id once", env: env, args: []string{"status"}, code: ExitServer,
			stderr: "partnertrack: Failed to get status (request_id: req_abc) (HTTP 500)\n"},
		{desc: "a 500 in json mode also prints the error as JSON", env: env, args: []string{"status", "--json"}, code: ExitServer,
			stdout: `"request_id": "req_abc"`},
		{desc: "the chain not attributed", env: env, args: []string{"test-event", "--chain"}, code: ExitNotAttributed,
			stdout: "Attribution failed"},
		{desc: "the chain cap is a user error with its wait", env: map[string]string{EnvAPIURL: edge.URL, EnvAPIKey: "aff_capped"},
			args: []string{"test-event", "--chain"}, code: ExitUser,
			stderr: "Too many synthetic chains (max 10/program/hour). (retry in 1200 s) (HTTP 429)"},
		{desc: "a 400 is a user error", env: env, args: []string{"test-event", "x"}, code: ExitUser, stderr: "Invalid event_type: x"},
		{desc: "an answer that is not the API is a server error", env: env, args: []string{"readiness"}, code: ExitServer, stderr: "HTTP 502"},
		{desc: "both an event type and --chain", env: env, args: []string{"test-event", "sale", "--chain"}, code: ExitUser, stderr: "not both"},
		{desc: "no event at all", env: env, args: []string{"test-event"}, code: ExitUser, stderr: "give an event type"},
		{desc: "an unknown flag", env: env, args: []string{"status", "--colour"}, code: ExitUser, stderr: "unknown flag"},
		{desc: "a bad rate never reaches the server", env: map[string]string{EnvAPIURL: edge.URL, EnvToken: "pt_cli_x"},
			args: []string{"init", "--commission-rate", "thirty"}, code: ExitUser, stderr: "--commission-rate must be a number"},
		{desc: "help is success", env: env, args: []string{"--help"}, code: ExitOK, stdout: "test-event"},
	}
	for _, c := range cases {
		t.Run(c.desc, func(t *testing.T) {
			r := runCLI(t, dir, c.env, c.args...)
			if r.code != c.code || !strings.Contains(r.stderr, c.stderr) || !strings.Contains(r.stdout, c.stdout) {
				t.Fatalf("exit %d (want %d)\nstdout: %s\nstderr: %s", r.code, c.code, r.stdout, r.stderr)
			}
		})
	}
}

func TestLoginPollsUntilSignedIn(t *testing.T) {
	t.Parallel()
	var polls atomic.Int32
	var challenge atomic.Value // the code_challenge the CLI started with
	edge := newFakeEdge(t, map[string]http.HandlerFunc{})
	expires := time.Now().Add(5 * time.Minute).UTC().Format(time.RFC3339)
	edge.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/cli/auth/start":
			var body struct {
				CodeChallenge       string `json:"code_challenge"`
				CodeChallengeMethod string `json:"code_challenge_method"`
			}
			json.NewDecoder(r.Body).Decode(&body)
			challenge.Store(body.CodeChallenge)
			if len(body.CodeChallenge) != 43 || body.CodeChallengeMethod != "S256" {
				t.Errorf("start without an S256 challenge: %+v", body)
			}
			reply(200, `{"data":{"state":"st1","user_code":"BCDF-GHJK","auth_url":"https://x/cli/login?state=st1","poll_url":"p","expires_at":"`+expires+`"}}`)(w, r)
		case "/api/v1/cli/auth/poll":
			if r.URL.Query().Get("state") != "st1" {
				t.Errorf("poll of state %q", r.URL.Query().Get("state"))
			}
			h := sha256.Sum256([]byte(r.URL.Query().Get("code_verifier")))
			if ch, _ := challenge.Load().(string); base64.RawURLEncoding.EncodeToString(h[:]) != ch {
				t.Errorf("poll's code_verifier does not match the challenge %q", ch)
			}
			if polls.Add(1) < 3 {
				reply(200, `{"data":{"status":"pending"}}`)(w, r)
				return
			}
			reply(200, `{"data":{"status":"complete","token":"pt_cli_tok","email":"a@b.example","advertiser_id":12,"user_id":3,"expires_at":"`+expires+`"}}`)(w, r)
		case "/api/v1/cli/programs":
			if r.Header.Get("Authorization") != "Bearer pt_cli_tok" {
				t.Errorf("programs with %q", r.Header.Get("Authorization"))
			}
			reply(200, `{"data":[]}`)(w, r)
		}
	})
	dir := t.TempDir()
	env := map[string]string{EnvAPIURL: edge.URL}
	r := runCLI(t, dir, env, "login", "--json")
	if r.code != 0 || polls.Load() != 3 || !strings.Contains(r.stdout, `"logged_in": true`) || !strings.Contains(r.stderr, "https://x/cli/login?state=st1") ||
		!strings.Contains(r.stderr, "Your code: BCDF-GHJK") {
		t.Fatalf("login: %+v, %d polls", r, polls.Load())
	}
	path := filepath.Join(dir, "partnertrack", "credentials.json")
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("credentials %v %v", info, err)
	}
	dirInfo, _ := os.Stat(filepath.Dir(path))
	if dirInfo.Mode().Perm() != 0o700 {
		t.Fatalf("config dir mode %v", dirInfo.Mode())
	}
	if r := runCLI(t, dir, env, "programs"); r.code != 0 || !strings.Contains(r.stdout, "No programs yet") {
		t.Fatalf("programs: %+v", r)
	}
	if r := runCLI(t, dir, env, "programs", "--json"); r.code != 0 || strings.TrimSpace(r.stdout) != "[]" {
		t.Fatalf("programs json: %+v", r)
	}
	// An expired login is not sent.
	raw, _ := os.ReadFile(path)
	var c Credentials
	json.Unmarshal(raw, &c)
	c.ExpiresAt = time.Now().Add(-time.Hour)
	raw, _ = json.Marshal(c)
	os.WriteFile(path, raw, 0o600)
	if r := runCLI(t, dir, env, "programs"); r.code != ExitUser || !strings.Contains(r.stderr, "your login expired") {
		t.Fatalf("programs with an expired login: %+v", r)
	}
}

func TestLoginFailures(t *testing.T) {
	t.Parallel()
	expires := time.Now().Add(5 * time.Minute).UTC().Format(time.RFC3339)
	start := reply(200, `{"data":{"state":"st1","auth_url":"u","expires_at":"`+expires+`"}}`)
	cases := []struct {
		desc   string
		poll   http.HandlerFunc
		code   int
		stderr string
	}{
		{"the link expires", reply(200, `{"data":{"status":"expired"}}`), ExitUser, "the login link expired"},
		{"the session was consumed elsewhere", reply(400, `{"data":null,"error":{"status":400,"name":"BadRequestError","message":"Session already consumed","details":{}}}`),
			ExitUser, "Session already consumed (HTTP 400)"},
		{"the server keeps failing", reply(500, `{"data":null,"error":{"status":500,"name":"InternalServerError","message":"Failed to poll auth session (request_id: r1)","details":{"request_id":"r1"}}}`),
			ExitServer, "Failed to poll auth session (request_id: r1) (HTTP 500)"},
	}
	for _, c := range cases {
		t.Run(c.desc, func(t *testing.T) {
			edge := newFakeEdge(t, map[string]http.HandlerFunc{"POST /api/v1/cli/auth/start": start, "GET /api/v1/cli/auth/poll": c.poll})
			dir := t.TempDir()
			r := runCLI(t, dir, map[string]string{EnvAPIURL: edge.URL}, "login")
			if r.code != c.code || !strings.Contains(r.stderr, c.stderr) {
				t.Fatalf("exit %d\nstderr: %s", r.code, r.stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, "partnertrack", "credentials.json")); !os.IsNotExist(err) {
				t.Fatal("credentials written after a failed login")
			}
		})
	}
}

func TestAPIURLFlagBeatsTheEnvironment(t *testing.T) {
	t.Parallel()
	hit := newFakeEdge(t, map[string]http.HandlerFunc{
		"GET /api/v1/cli/status": reply(200, `{"data":{"program_id":4,"name":"Acme","domain":"acme.example","recent_events":{"clicks_24h":2,"leads_24h":1,"sales_24h":0},"active_partners":3,"pending_commissions":1}}`),
	})
	r := runCLI(t, t.TempDir(), map[string]string{EnvAPIURL: "http://127.0.0.1:1", EnvAPIKey: "aff_env"}, "status", "--api-url", hit.URL+"/")
	if r.code != 0 || !strings.Contains(r.stdout, "Acme (id 4)") || !strings.Contains(r.stdout, "2 clicks, 1 leads, 0 sales") {
		t.Fatalf("status: %+v", r)
	}
}
