package pagetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/partnertrack/partnertrack/cmd/internal/config"
	"github.com/partnertrack/partnertrack/cmd/internal/service"
	"github.com/partnertrack/partnertrack/ingest/oidc/testissuer"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/workers/redistest"
)

const opToken = "web-test-operator"

// stack is an edge wired as the binaries wire it (service.Backends), on a
// loopback port, over a database and queue namespace of its own, with the
// in-process OIDC issuer as its sign-in provider.
type stack struct {
	URL    string
	Issuer *testissuer.Issuer
	DB     *pgtest.DB
}

func newStack(t *testing.T) *stack {
	t.Helper()
	db := pgtest.New(t)
	rdb := redistest.Client(t)
	ns := redistest.Namespace(t, rdb)
	iss := testissuer.New(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	env := map[string]string{
		"DATABASE_URL": db.URL, "REDIS_URL": redistest.URL(), "QUEUE_NAMESPACE": string(ns),
		"LISTEN_ADDR": ln.Addr().String(), "PUBLIC_BASE_URL": base, "OPERATOR_TOKEN": opToken, "LOG_LEVEL": "error",
		"OIDC_ISSUER_URL": iss.URL, "OIDC_CLIENT_ID": testissuer.ClientID,
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	b, err := service.Open(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	edge, err := b.Edge(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	go edge.App().Listener(ln)
	t.Cleanup(func() { edge.Shutdown(context.Background()) })
	return &stack{URL: base, Issuer: iss, DB: db}
}

// api calls the JSON API with a bearer token and returns its data
// object.
func (s *stack) api(t *testing.T, want int, method, path, token string, body any) map[string]any {
	t.Helper()
	data, _ := s.apiBody(t, want, method, path, token, body)["data"].(map[string]any)
	return data
}

// apiBody calls the JSON API with a bearer token (none when empty) and a
// JSON body (none when nil), and decodes the whole answer: data and meta,
// or the tracking routes' answers outside a data envelope.
func (s *stack) apiBody(t *testing.T, want int, method, path, token string, body any) map[string]any {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.URL+path, rd)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, raw)
	}
	var out map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
	return out
}

var worldCount atomic.Int64

// brandWorld is a workspace, its owner's dashboard token and a program.
type brandWorld struct {
	Owner      string // dashboard token of the owner
	OwnerEmail string
	ProgramID  int64
	Domain     string
}

func (s *stack) brand(t *testing.T) brandWorld {
	t.Helper()
	n := worldCount.Add(1)
	email := fmt.Sprintf("owner%d@brand.example", n)
	ws := s.api(t, 201, "POST", "/api/operator/v1/workspaces", opToken, map[string]any{"name": fmt.Sprintf("Brand %d", n), "owner_email": email})
	domain := fmt.Sprintf("brand%d.example", n)
	prog := s.api(t, 201, "POST", "/api/operator/v1/programs", opToken, map[string]any{
		"workspace_id": ws["id"], "name": fmt.Sprintf("Brand %d Partners", n), "domain": domain,
		"commission_type": "percent", "commission_rate": 20, "hold_days": 0})
	sess := s.api(t, 201, "POST", fmt.Sprintf("/api/operator/v1/users/%v/sessions", jsonInt(ws["owner_user_id"])), opToken, nil)
	return brandWorld{Owner: sess["token"].(string), OwnerEmail: email, ProgramID: jsonInt(prog["id"]), Domain: domain}
}

// partnerToken signs a partner in through the API with a test id_token.
func (s *stack) partnerToken(t *testing.T, email string) string {
	t.Helper()
	tok := s.Issuer.Token(t, "sub-"+email, email)
	return s.api(t, 200, "POST", "/api/v1/partner/session", "", map[string]any{"id_token": tok})["token"].(string)
}

func jsonInt(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

// browser is an HTTP client with cookies that does not follow redirects,
// so tests see each answer.
type browser struct {
	t    *testing.T
	s    *stack
	http *http.Client
}

func (s *stack) browser(t *testing.T) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, s: s, http: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

// withCookie sets a session cookie, as a sign-in would.
func (b *browser) withCookie(name, value string) *browser {
	u, _ := url.Parse(b.s.URL)
	b.http.Jar.SetCookies(u, []*http.Cookie{{Name: name, Value: value, Path: "/"}})
	return b
}

type page struct {
	Status   int
	Body     string
	Location string
	Header   http.Header
}

func (b *browser) get(path string) page {
	b.t.Helper()
	req, _ := http.NewRequest("GET", b.s.URL+path, nil)
	return b.do(req)
}

// post submits a form; the csrf field is taken from the page given.
func (b *browser) post(path string, form url.Values) page {
	b.t.Helper()
	req, _ := http.NewRequest("POST", b.s.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

func (b *browser) do(req *http.Request) page {
	b.t.Helper()
	resp, err := b.http.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return page{Status: resp.StatusCode, Body: string(raw), Location: resp.Header.Get("Location"), Header: resp.Header}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf reads the form token of a page.
func (p page) csrf(t *testing.T) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(p.Body)
	if m == nil {
		t.Fatalf("no csrf field in page:\n%s", p.Body)
	}
	return m[1]
}

func (p page) mustContain(t *testing.T, parts ...string) {
	t.Helper()
	for _, s := range parts {
		if !strings.Contains(p.Body, s) {
			t.Fatalf("page (status %d) lacks %q:\n%s", p.Status, s, p.Body)
		}
	}
}

func regexpFind(t *testing.T, body, expr string) string {
	t.Helper()
	m := regexp.MustCompile(expr).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no %s in page:\n%s", expr, body)
	}
	return m[1]
}

// ---- helpers of the brand overview, partners and links tests ----

// enroll adds a partner to a brand's program (operator API) and returns
// its id.
func (s *stack) enroll(t *testing.T, w brandWorld, name, email string) int64 {
	t.Helper()
	p := s.api(t, 201, "POST", fmt.Sprintf("/api/operator/v1/programs/%d/partners", w.ProgramID), opToken,
		map[string]any{"email": email, "name": name})
	return jsonInt(p["id"])
}

// brandLink creates a partner's link through the brand's API.
func (s *stack) brandLink(t *testing.T, w brandWorld, partnerID int64, code string) int64 {
	t.Helper()
	l := s.api(t, 201, "POST", fmt.Sprintf("/api/v1/programs/%d/links", w.ProgramID), w.Owner,
		map[string]any{"partner_id": partnerID, "code": code})
	return jsonInt(l["id"])
}

// submit posts a form of page p with its form token.
func (b *browser) submit(p page, path string, form url.Values) page {
	b.t.Helper()
	form.Set("csrf", p.csrf(b.t))
	return b.post(path, form)
}

// brandList reads the data list of a brand API page with the owner's token.
func (s *stack) brandList(t *testing.T, w brandWorld, path string) []map[string]any {
	t.Helper()
	return s.apiList(t, path, w.Owner)
}

// count runs a counting query on the stack's database.
func (s *stack) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := s.DB.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}
