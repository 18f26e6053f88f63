package ingest

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ingest/apidoc/apitest"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/notify"
	"github.com/partnertrack/partnertrack/ratelimit"
)

const (
	testOperatorToken = "op-secret-for-tests"
	testStripeSecret  = "whsec_test_connect_endpoint"
)

// fakeClock is a settable clock shared by the server and its limiter.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

type testBundle struct {
	db    *pgtest.DB
	srv   *Server
	app   *fiber.App
	clock *fakeClock
}

// setup returns an edge over a fresh database. Requests from app.Test come
// from 0.0.0.0, which the test edge trusts as a proxy so that tests can
// pose as many clients through X-Forwarded-For.
func setup(t *testing.T) *testBundle {
	t.Helper()
	t.Parallel()
	db := pgtest.New(t)
	clock := &fakeClock{t: time.Now().UTC()}
	db.Now = clock.Now
	srv := newTestServer(db, clock)
	return &testBundle{db: db, srv: srv, app: srv.App(), clock: clock}
}

// newTestServer builds an edge instance over db; a test may build several
// over one database, the way replicas behind a load balancer run. Tweaks
// adjust the services and options before the edge is built.
func newTestServer(db *pgtest.DB, clock *fakeClock, tweaks ...func(*Services, *Options)) *Server {
	return newTestServerConfig(db, clock, nil, tweaks...)
}

// newTestServerConfig is newTestServer with a change of the configuration.
func newTestServerConfig(db *pgtest.DB, clock *fakeClock, config func(*Config), tweaks ...func(*Services, *Options)) *Server {
	cfg := Config{
		PublicBaseURL:       "https://track.example",
		OperatorToken:       testOperatorToken,
		TrustedProxies:      []netip.Prefix{netip.MustParsePrefix("0.0.0.0/32")},
		StripeWebhookSecret: testStripeSecret,
	}
	programs := postgres.NewProgramService(db.DB)
	accounts := postgres.NewAccountService(db.DB)
	balances := postgres.NewBalanceService(db.DB)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := Services{
		Programs:      programs,
		Keys:          programs,
		Accounts:      accounts,
		Partners:      postgres.NewPartnerService(db.DB),
		BrandLinks:    postgres.NewBrandLinkService(db.DB),
		Leads:         postgres.NewLeadService(db.DB, nil),
		Sales:         postgres.NewSaleService(db.DB, postgres.SaleOptions{Logger: logger}),
		Refunds:       postgres.NewRefundService(db.DB, nil, logger),
		Commissions:   balances,
		Balances:      balances,
		Notifications: postgres.NewNotificationStore(db.DB),
		SignIn:        accounts,
		PartnerSignIn: postgres.NewPartnerAccountService(db.DB),
		Events:        postgres.NewEventService(db.DB),
		Settings:      programs,
		Webhooks:      postgres.NewWebhookService(db.DB, &notify.Guard{}),
		Agents:        postgres.NewAgentService(db.DB),
		Processor:     postgres.NewProcessorService(db.DB, postgres.ProcessorOptions{Logger: logger}),

		ProgramPartners:  postgres.NewProgramPartnerService(db.DB, nil, logger),
		Groups:           postgres.NewGroupService(db.DB),
		CommissionReview: postgres.NewCommissionReviewService(db.DB, nil, logger),
		Performance:      postgres.NewPerformanceService(db.DB, clock.Now),
		Payouts:          postgres.NewPayoutService(db.DB, nil, logger),

		MemberPrograms:    programs,
		WebhookDeliveries: postgres.NewWebhookDeliveryService(db.DB, nil, logger),
		Readiness:         postgres.NewReadinessService(db.DB),
	}
	opts := Options{
		Logger:  logger,
		Now:     clock.Now,
		Limiter: ratelimit.New(ratelimit.NewMemory(10000), clock.Now),
	}
	if config != nil {
		config(&cfg)
	}
	intake := postgres.NewIntakeService(db.DB, postgres.IntakeOptions{PublicBaseURL: cfg.PublicBaseURL, Logger: logger})
	svc.Invites, svc.Applications = intake, intake
	svc.Embeds = intake
	svc.Portal = postgres.NewPortalService(db.DB, intake, clock.Now)
	for _, tweak := range tweaks {
		tweak(&svc, &opts)
	}
	return New(cfg, svc, opts)
}

// response is a decoded test response.
type response struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    []byte
}

type req struct {
	method string
	path   string
	body   any // string (sent as is), or a value encoded as JSON
	header map[string]string
}

func do(t *testing.T, app *fiber.App, r req) response {
	t.Helper()
	var rd io.Reader
	switch b := r.body.(type) {
	case nil:
	case string:
		rd = bytes.NewBufferString(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(buf)
	}
	hr := httptest.NewRequest(r.method, r.path, rd)
	if rd != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	sent := hr.Clone(hr.Context())
	resp, err := app.Test(hr, -1)
	if err != nil {
		t.Fatal(err)
	}
	out := readResponse(t, resp, r.method+" "+r.path)
	resp.Body = nil
	apitest.Default(t).Check(t, sent, bodyBytes(r.body), resp, out.Raw)
	return out
}

// bodyBytes is the body do sends for b.
func bodyBytes(b any) []byte {
	switch b := b.(type) {
	case nil:
		return nil
	case string:
		return []byte(b)
	case []byte:
		return b
	}
	buf, _ := json.Marshal(b)
	return buf
}

// readResponse reads an answer, its body decoded when it is JSON; what
// names the request in a failure.
func readResponse(t *testing.T, resp *http.Response, what string) response {
	t.Helper()
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := response{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	if len(raw) > 0 && raw[0] == '{' {
		if err := json.Unmarshal(raw, &out.Body); err != nil {
			t.Fatalf("%s: body is not JSON: %s", what, raw)
		}
	}
	return out
}

func bearer(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

func operator() map[string]string { return bearer(testOperatorToken) }

// world is what the operator API provisions for most tests.
type world struct {
	workspaceID int64
	ownerID     int64
	programID   int64
	partnerID   int64
	linkID      int64
	ownerToken  string
	liveKey     string
}

func mustOK(t *testing.T, r response, status int) map[string]any {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Raw)
	}
	data, _ := r.Body["data"].(map[string]any)
	if data == nil {
		t.Fatalf("no data in %s", r.Raw)
	}
	return data
}

func id(v any) int64 { return int64(v.(float64)) }

var worldCount atomic.Int64

// MustWorld provisions a workspace, program, partner, link, an owner
// session and a live key through the operator and owner APIs.
func MustWorld(t *testing.T, app *fiber.App) world {
	t.Helper()
	var w world
	n := itoa(worldCount.Add(1))
	d := mustOK(t, do(t, app, req{"POST", "/api/operator/v1/workspaces", map[string]any{"name": "Acme " + n, "owner_email": "owner" + n + "@acme.example"}, operator()}), 201)
	w.workspaceID, w.ownerID = id(d["id"]), id(d["owner_user_id"])
	d = mustOK(t, do(t, app, req{"POST", "/api/operator/v1/programs", map[string]any{
		"workspace_id": w.workspaceID, "name": "Acme Pro", "domain": "acme.example",
		"commission_type": "percent", "commission_rate": 30}, operator()}), 201)
	w.programID = id(d["id"])
	d = mustOK(t, do(t, app, req{"POST", "/api/operator/v1/programs/" + itoa(w.programID) + "/partners", map[string]any{"email": "pat" + n + "@partner.example", "name": "Pat"}, operator()}), 201)
	w.partnerID = id(d["id"])
	d = mustOK(t, do(t, app, req{"POST", "/api/operator/v1/programs/" + itoa(w.programID) + "/links", map[string]any{"partner_id": w.partnerID, "code": "pat" + itoa(w.programID)}, operator()}), 201)
	w.linkID = id(d["id"])
	d = mustOK(t, do(t, app, req{"POST", "/api/operator/v1/users/" + itoa(w.ownerID) + "/sessions", nil, operator()}), 201)
	w.ownerToken = d["token"].(string)
	d = mustOK(t, do(t, app, req{"POST", "/api/v1/programs/" + itoa(w.programID) + "/api-key", nil, bearer(w.ownerToken)}), 200)
	w.liveKey = d["api_key"].(string)
	return w
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// countRows runs a counting query on the test database.
func countRows(t *testing.T, b *testBundle, query string, args ...any) int {
	t.Helper()
	var n int
	if err := b.db.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
