package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/cmd/internal/service/servicetest"

	"github.com/partnertrack/partnertrack/ingest/apidoc/apitest"
	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/workers/redistest"
)

const testToken = "op-token"

// testBundle is a running edge over the test's own database and queues,
// and the environment partnerctl runs with against it.
type testBundle struct {
	db   *pgtest.DB
	url  string
	env  map[string]string
	http *http.Client // every exchange is checked against the OpenAPI document
}

// setup starts the edge, built exactly as the edge binary builds it, on a
// free port of 127.0.0.1.
func setup(t *testing.T) *testBundle {
	t.Helper()
	db := pgtest.New(t)
	ns := redistest.Namespace(t, redistest.Client(t))
	env := map[string]string{"DATABASE_URL": db.URL, "REDIS_URL": redistest.URL(), "QUEUE_NAMESPACE": string(ns),
		"LOG_LEVEL": "error", "OPERATOR_TOKEN": testToken}
	url := servicetest.StartEdge(t, env)
	return &testBundle{db: db, url: url,
		env:  map[string]string{"OPERATOR_TOKEN": testToken, "PARTNERTRACK_URL": url},
		http: &http.Client{Transport: apitest.Default(t).Transport(t, nil)}}
}

// result is what one run of partnerctl printed and its exit code.
type result struct {
	out  string // standard output
	msg  string // the error line main prints, without "partnerctl: "
	code int
}

// ctl runs partnerctl in process with the bundle's environment.
func (tb *testBundle) ctl(t *testing.T, args ...string) result {
	t.Helper()
	return ctlWith(t, tb.env, tb.http, args...)
}

func ctlWith(t *testing.T, env map[string]string, hc *http.Client, args ...string) result {
	t.Helper()
	cmd := newRootCommand(func(k string) string { return env[k] }, hc)
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs(args)
	r := result{}
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		r.msg, r.code = err.Error(), exitCode(err)
	}
	r.out = out.String()
	return r
}

// MustJSON runs a command with --json and returns the data it printed.
func (tb *testBundle) MustJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	r := tb.ctl(t, append(args, "--json")...)
	if r.code != 0 {
		t.Fatalf("partnerctl %s: exit %d: %s", strings.Join(args, " "), r.code, r.msg)
	}
	var d map[string]any
	dec := json.NewDecoder(strings.NewReader(r.out))
	dec.UseNumber()
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("partnerctl %s --json printed %q: %v", strings.Join(args, " "), r.out, err)
	}
	return d
}

// MustTable runs a command and returns its table for people.
func (tb *testBundle) MustTable(t *testing.T, args ...string) string {
	t.Helper()
	r := tb.ctl(t, args...)
	if r.code != 0 {
		t.Fatalf("partnerctl %s: exit %d: %s", strings.Join(args, " "), r.code, r.msg)
	}
	return r.out
}

// field reads a table's line "name   value".
func field(t *testing.T, table, name string) string {
	t.Helper()
	for _, line := range strings.Split(table, "\n") {
		if rest, ok := strings.CutPrefix(line, name+"  "); ok {
			return strings.TrimSpace(rest)
		}
	}
	t.Fatalf("no %q in\n%s", name, table)
	return ""
}

func str(v any) string {
	if n, ok := v.(json.Number); ok {
		return n.String()
	}
	s, _ := v.(string)
	return s
}

// TestProvisioning provisions a world with partnerctl alone, as the README
// does: workspace, member, program, partner, link, session, key rotation,
// processor account, agent key; and checks each step's effect through
// what the edge answers.
func TestProvisioning(t *testing.T) {
	t.Parallel()
	tb := setup(t)

	ws := tb.MustTable(t, "workspace", "create", "--name", "Acme", "--owner-email", "owner@acme.example")
	wsID, owner := field(t, ws, "workspace"), field(t, ws, "owner user")
	if field(t, ws, "name") != "Acme" || owner == "" {
		t.Fatalf("workspace create printed\n%s", ws)
	}
	member := tb.MustJSON(t, "workspace", "add-member", wsID, "--email", "admin@acme.example", "--role", "admin")
	if member["role"] != "admin" || str(member["workspace_id"]) != wsID || str(member["user_id"]) == owner {
		t.Fatalf("add-member: %v", member)
	}

	// The rate goes to the edge exactly as typed.
	p := tb.MustJSON(t, "program", "create", "--workspace", wsID, "--name", "Acme", "--domain", "acme.example",
		"--commission-type", "percent", "--commission-rate", "12.345", "--hold-days", "7", "--currency", "EUR",
		"--lead-auth", "browser_allowed")
	pid := str(p["id"])
	if str(p["commission_rate"]) != "12.345" || str(p["hold_days"]) != "7" || p["currency"] != "EUR" ||
		p["lead_auth"] != "browser_allowed" || str(p["cookie_duration"]) != "90" || str(p["workspace_id"]) != wsID {
		t.Fatalf("program create: %v", p)
	}

	partner := tb.MustTable(t, "partner", "enroll", pid, "--email", "pat@partner.example", "--name", "Pat")
	partnerID := field(t, partner, "partner")
	if field(t, partner, "program") != pid || field(t, partner, "name") != "Pat" {
		t.Fatalf("partner enroll printed\n%s", partner)
	}
	link := tb.MustTable(t, "link", "create", pid, "--partner", partnerID, "--code", "pat", "--inactive")
	linkID := field(t, link, "link")
	if field(t, link, "code") != "pat" || field(t, link, "active") != "no" {
		t.Fatalf("link create --inactive printed\n%s", link)
	}
	if l := tb.MustJSON(t, "link", "set", linkID, "--active=true"); l["active"] != true || str(l["id"]) != linkID {
		t.Fatalf("link set --active=true: %v", l)
	}

	// The owner's session is a dashboard token the edge accepts: it makes
	// the program's key.
	sess := tb.MustJSON(t, "user", "session", owner)
	token := str(sess["token"])
	if token == "" || sess["expires_at"] == nil {
		t.Fatalf("user session: %v", sess)
	}
	key := programKey(t, tb, pid, token)
	if !strings.HasPrefix(key, "aff_") {
		t.Fatalf("api key %q", key)
	}

	deadline := time.Now().Add(30 * 24 * time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	rot := tb.MustJSON(t, "program", "rotate-key", pid, "--deadline", deadline)
	if got, _ := time.Parse(time.RFC3339, str(rot["deadline"])); got.Format(time.RFC3339) != deadline || str(rot["program_id"]) != pid {
		t.Fatalf("rotate-key: %v, want deadline %s", rot, deadline)
	}
	acct := tb.MustTable(t, "program", "connect-processor", pid, "--account", "acct_1AcmeConnect")
	if field(t, acct, "account") != "acct_1AcmeConnect" || field(t, acct, "program") != pid {
		t.Fatalf("connect-processor printed\n%s", acct)
	}

	// The agent key reads the workspace's programs from the agent API.
	ak := tb.MustJSON(t, "agent-key", "create", "--workspace", wsID, "--scopes", "programs:read, programs:write")
	agentKey := str(ak["key"])
	if !strings.HasPrefix(agentKey, "agt_") || len(ak["scopes"].([]any)) != 2 {
		t.Fatalf("agent-key create: %v", ak)
	}
	req, _ := http.NewRequest("GET", tb.url+"/api/agent/v1/programs/"+pid, nil)
	req.Header.Set("Authorization", "Bearer "+agentKey)
	resp, err := tb.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("agent API with the new key: %d", resp.StatusCode)
	}

	// Suspending the admin, and unlinking the owner's identity.
	admin := str(member["user_id"])
	if s := tb.MustTable(t, "user", "suspend", admin); field(t, s, "email") != "admin@acme.example" || field(t, s, "suspended") == "-" {
		t.Fatalf("user suspend printed\n%s", s)
	}
	if r := tb.ctl(t, "user", "session", admin); r.code != exitUser || !strings.Contains(r.msg, "HTTP 403") {
		t.Fatalf("session of a suspended user: exit %d: %s", r.code, r.msg)
	}
	if u := tb.MustJSON(t, "user", "unlink-identity", owner); u["unlinked"] != true || u["email"] != "owner@acme.example" {
		t.Fatalf("unlink-identity: %v", u)
	}
}

// programKey generates the program's key with the owner's dashboard token.
func programKey(t *testing.T, tb *testBundle, pid, token string) string {
	t.Helper()
	var out struct {
		Data struct {
			APIKey string `json:"api_key"`
		} `json:"data"`
	}
	postJSON(t, tb, "/api/v1/programs/"+pid+"/api-key", token, map[string]any{}, &out)
	return out.Data.APIKey
}

// postJSON posts body to the edge and decodes a 2xx answer into out.
func postJSON(t *testing.T, tb *testBundle, path, token string, body, out any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", tb.url+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := tb.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw json.RawMessage
	json.NewDecoder(resp.Body).Decode(&raw)
	if resp.StatusCode >= 300 {
		t.Fatalf("POST %s: %d %s", path, resp.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("POST %s: %s: %v", path, raw, err)
	}
}

// TestCommissionsAndWithdrawals pays a partner with partnerctl: two sales
// make two pending commissions; one is approved (credited), the other
// marked paid by hand; a withdrawal of part of the balance is opened and
// marked paid; balances, the click's customer and notifications read back.
func TestCommissionsAndWithdrawals(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ws := tb.MustJSON(t, "workspace", "create", "--name", "Acme", "--owner-email", "owner@acme.example")
	p := tb.MustJSON(t, "program", "create", "--workspace", str(ws["id"]), "--name", "Acme", "--domain", "acme.example",
		"--commission-type", "recurring_percent", "--commission-rate", "20")
	pid := str(p["id"])
	partner := tb.MustJSON(t, "partner", "enroll", pid, "--email", "pat@partner.example", "--name", "Pat")
	partnerID := str(partner["id"])
	link := tb.MustJSON(t, "link", "create", pid, "--partner", partnerID, "--code", "pat")
	sess := tb.MustJSON(t, "user", "session", str(ws["owner_user_id"]))
	key := programKey(t, tb, pid, str(sess["token"]))

	// A click of the link (stored as the click pipeline stores it), then
	// two sales of the customer it brought (a recurring commission pays both).
	click := ledger.NewClickID(time.Now())
	at, _ := ledger.ClickTime(click)
	if _, err := tb.db.Exec(`INSERT INTO clicks (click_id, occurred_at, program_id, partner_id, link_id) VALUES ($1, $2, $3, $4, $5)`,
		click, at, pid, partnerID, str(link["id"])); err != nil {
		t.Fatal(err)
	}
	sale := func(txn string, cents int) string {
		t.Helper()
		var out struct {
			CommissionID json.Number `json:"commission_id"`
		}
		postJSON(t, tb, "/api/v1/track/sale", key, map[string]any{"transaction_id": txn, "amount_cents": cents,
			"click_id": click}, &out)
		if out.CommissionID == "" {
			t.Fatalf("sale %s made no commission", txn)
		}
		return out.CommissionID.String()
	}
	first, second := sale("txn_1", 10000), sale("txn_2", 5000)

	c := tb.MustTable(t, "commission", "get", first)
	if field(t, c, "status") != "pending" || field(t, c, "amount") != "20 USD" || field(t, c, "transaction") != "txn_1" {
		t.Fatalf("commission get printed\n%s", c)
	}
	if c := tb.MustJSON(t, "commission", "approve", first); c["status"] != "approved" || c["credited"] != true {
		t.Fatalf("commission approve: %v", c)
	}
	if c := tb.MustJSON(t, "commission", "mark-paid", second); c["status"] != "paid" || c["paid_at"] == nil {
		t.Fatalf("commission mark-paid: %v", c)
	}
	bal := tb.MustTable(t, "partner", "balances", partnerID)
	if !strings.Contains(bal, "CURRENCY  AMOUNT\nUSD       20\n") {
		t.Fatalf("balances after approving 20 and paying 10 by hand:\n%s", bal)
	}

	// The amount is sent exactly as typed.
	w := tb.MustJSON(t, "withdrawal", "create", partnerID, "--currency", "USD", "--amount", "12.50")
	wid := str(w["id"])
	if w["status"] != "open" || str(w["amount"]) != "12.5" {
		t.Fatalf("withdrawal create: %v", w)
	}
	if g := tb.MustTable(t, "withdrawal", "get", wid); field(t, g, "status") != "open" || field(t, g, "amount") != "12.5 USD" {
		t.Fatalf("withdrawal get printed\n%s", g)
	}
	if m := tb.MustJSON(t, "withdrawal", "mark-paid", wid); m["status"] != "paid" || m["paid_at"] == nil {
		t.Fatalf("withdrawal mark-paid: %v", m)
	}
	var balances []struct {
		Currency string      `json:"currency"`
		Amount   json.Number `json:"amount"`
	}
	r := tb.ctl(t, "partner", "balances", partnerID, "--json")
	if err := json.Unmarshal([]byte(r.out), &balances); r.code != 0 || err != nil || len(balances) != 1 ||
		balances[0].Currency != "USD" || balances[0].Amount != "7.5" {
		t.Fatalf("balances after the withdrawal: exit %d %s: %q", r.code, r.msg, r.out)
	}

	cust := tb.MustJSON(t, "customer", "find", "--program", pid, "--click-id", click)
	if str(cust["partner_id"]) != partnerID || cust["click_id"] != click {
		t.Fatalf("customer find: %v", cust)
	}
	if n := tb.MustTable(t, "partner", "notifications", partnerID); !strings.HasPrefix(n, "ID") {
		t.Fatalf("notifications printed\n%s", n)
	}
}

// TestFailures: what the operator sees when a command cannot do its work:
// one line and exit 2 for their mistakes and the edge's refusals, exit 3
// when the edge is not there.
func TestFailures(t *testing.T) {
	t.Parallel()
	tb := setup(t)

	t.Run("Refused", func(t *testing.T) {
		// The flag not given is not sent: the edge says what is missing.
		r := tb.ctl(t, "workspace", "create", "--name", "Acme")
		if r.code != exitUser || r.out != "" || strings.Contains(r.msg, "\n") ||
			!strings.HasPrefix(r.msg, "email must be a valid email address (") || !strings.Contains(r.msg, "HTTP 400") ||
			!strings.Contains(r.msg, "request id ") {
			t.Fatalf("exit %d, %q, %q", r.code, r.msg, r.out)
		}
		r = tb.ctl(t, "commission", "get", "999999")
		if r.code != exitUser || !strings.Contains(r.msg, "HTTP 404") {
			t.Fatalf("unknown commission: exit %d, %q", r.code, r.msg)
		}
	})
	t.Run("WrongToken", func(t *testing.T) {
		env := map[string]string{"OPERATOR_TOKEN": "wrong", "PARTNERTRACK_URL": tb.url}
		if r := ctlWith(t, env, tb.http, "user", "session", "1"); r.code != exitUser || !strings.Contains(r.msg, "HTTP 401") {
			t.Fatalf("exit %d, %q", r.code, r.msg)
		}
	})
	t.Run("NoToken", func(t *testing.T) {
		env := map[string]string{"PARTNERTRACK_URL": tb.url}
		if r := ctlWith(t, env, tb.http, "workspace", "create", "--name", "Acme"); r.code != exitUser ||
			!strings.Contains(r.msg, "OPERATOR_TOKEN is not set") {
			t.Fatalf("exit %d, %q", r.code, r.msg)
		}
	})
	t.Run("Usage", func(t *testing.T) {
		for _, args := range [][]string{
			{"commission", "get"},
			{"commission", "get", "abc"},
			{"program", "create", "--commission-rate", "twenty"},
			{"customer", "find", "--customer-key", "cus_1"},
			{"link", "set", "1", "--active=maybe"},
			{"workspace", "create", "--bogus"},
			{"workspace", "frobnicate"},
			{"customer", "find", "--program", "1", "--customer-key", "k", "--click-id", "c"},
		} {
			if r := tb.ctl(t, args...); r.code != exitUser || r.msg == "" {
				t.Errorf("%v: exit %d, %q", args, r.code, r.msg)
			}
		}
	})
	t.Run("Unreachable", func(t *testing.T) {
		// A port nothing listens on: taken, then released.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		env := map[string]string{"OPERATOR_TOKEN": testToken, "PARTNERTRACK_URL": "http://" + addr}
		r := ctlWith(t, env, nil, "workspace", "create", "--name", "Acme", "--owner-email", "o@acme.example")
		if r.code != exitServer || !strings.Contains(r.msg, "cannot reach the edge at http://"+addr) {
			t.Fatalf("exit %d, %q", r.code, r.msg)
		}
		// --url wins over the environment.
		r = ctlWith(t, env, tb.http, "workspace", "create", "--url", tb.url, "--name", "Acme", "--owner-email", "o@acme.example")
		if r.code != 0 {
			t.Fatalf("--url %s: exit %d, %q", tb.url, r.code, r.msg)
		}
	})
}

// TestServerFailures: a failing edge, or something at --url that is not
// the edge, exits 3 with one line. (The real edge's 5xx need a broken
// Postgres; these stand-ins answer what such an edge, or a stray web
// server, would.)
func TestServerFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc, contentType, body string
		status                  int
		want                    string
	}{
		{desc: "InternalError", status: 500, contentType: "application/json",
			body: `{"data":null,"error":{"code":"internal_error","message":"Internal server error"}}`,
			want: "Internal server error (internal_error, HTTP 500, request id req_x1)"},
		{desc: "NotTheAPI", status: 200, contentType: "text/html", body: "<html>hello</html>",
			want: "is not the operator API's; check --url"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.contentType)
				w.Header().Set("X-Request-ID", "req_x1")
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			env := map[string]string{"OPERATOR_TOKEN": testToken, "PUBLIC_BASE_URL": srv.URL}
			r := ctlWith(t, env, nil, "commission", "get", "1")
			if r.code != exitServer || !strings.Contains(r.msg, tc.want) || r.out != "" {
				t.Fatalf("exit %d, %q, %q", r.code, r.msg, r.out)
			}
		})
	}
}

// TestBaseURL: --url, else PARTNERTRACK_URL, else PUBLIC_BASE_URL, else the
// laptop default.
func TestBaseURL(t *testing.T) {
	for _, tc := range []struct {
		desc, flag string
		env        map[string]string
		want       string
	}{
		{desc: "Flag", flag: "http://flag", env: map[string]string{"PARTNERTRACK_URL": "http://env"}, want: "http://flag"},
		{desc: "PartnertrackURL", env: map[string]string{"PARTNERTRACK_URL": "http://env", "PUBLIC_BASE_URL": "http://pub"}, want: "http://env"},
		{desc: "PublicBaseURL", env: map[string]string{"PUBLIC_BASE_URL": "http://pub"}, want: "http://pub"},
		{desc: "Default", want: defaultURL},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			o := &operator{getenv: func(k string) string { return tc.env[k] }, url: tc.flag}
			if got := o.baseURL(); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}
