package ingest

import (
	"net/url"
	"strings"
	"testing"

	"github.com/partnertrack/partnertrack/ledger/postgres"
)

func readinessReq(key string) req {
	return req{"GET", "/api/v1/programs/me/readiness?force_recheck=true", nil, bearer(key)}
}

// assertTyped checks the typed envelope: no data, error.code, message,
// status.
func assertTyped(t *testing.T, r response, status int, code, message string) map[string]any {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Raw)
	}
	if _, hasData := r.Body["data"]; hasData {
		t.Fatalf("typed envelope with data: %s", r.Raw)
	}
	e, _ := r.Body["error"].(map[string]any)
	if e == nil || e["code"] != code || e["message"] != message || e["status"] != float64(status) {
		t.Fatalf("error %s, want %d %s %q", r.Raw, status, code, message)
	}
	return e
}

func gate(t *testing.T, body map[string]any, name string) map[string]any {
	t.Helper()
	g, _ := body["gates"].(map[string]any)[name].(map[string]any)
	if g == nil {
		t.Fatalf("no gate %s in %v", name, body)
	}
	return g
}

func TestReadinessFromRealData(t *testing.T) {
	b := setupCLI(t)
	w := MustWorld(t, b.app)

	r := do(t, b.app, readinessReq(w.liveKey))
	if r.Status != 200 || r.Header.Get("X-Request-ID") == "" || r.Header.Get("X-RateLimit-Limit") != "30" {
		t.Fatalf("readiness %d %v: %s", r.Status, r.Header, r.Raw)
	}
	body := r.Body
	if keys(body) != "blocker,counts_24h,gates,integration_verified,key_rotated_at,last_event_at,poll,program_id,state" {
		t.Fatalf("readiness fields %s", keys(body))
	}
	if id(body["program_id"]) != w.programID || body["state"] != "configuring" || body["integration_verified"] != false ||
		body["blocker"] != "payout" || body["key_rotated_at"] == nil {
		t.Fatalf("new program: %s", r.Raw)
	}
	if keys(body["gates"].(map[string]any)) != "economics,live,payout,profile,tracking" ||
		keys(body["last_event_at"].(map[string]any)) != "click,lead,sale" ||
		keys(body["counts_24h"].(map[string]any)) != "clicks,leads,sales" ||
		body["poll"].(map[string]any)["retry_after_seconds"] != float64(5) {
		t.Fatalf("readiness shape %s", r.Raw)
	}
	for name, want := range map[string][2]any{
		"profile":   {"pass", nil},
		"economics": {"pass", nil},
		"payout":    {"fail", "surface_stripe_connect_url"},
		"tracking":  {"fail", "install_tracker_or_send_events"},
		"live":      {"unknown", "run_synthetic_sale_chain"},
	} {
		g := gate(t, body, name)
		if g["status"] != want[0] || g["next_action"] != want[1] {
			t.Fatalf("gate %s = %v, want %v", name, g, want)
		}
	}
	if g := gate(t, body, "tracking"); g["detail"] == "" || g["checked_at"] != formatTime(b.clock.Now()) {
		t.Fatalf("tracking gate %v", g)
	}

	// The CLI's own test events change nothing but the live gate.
	mustOK(t, do(t, b.app, req{"POST", "/api/v1/cli/test-event", map[string]any{"event_type": "sale"}, bearer(w.liveKey)}), 200)
	mustOK(t, do(t, b.app, req{"POST", "/api/v1/cli/test-event", map[string]any{"type": "chain"}, bearer(w.liveKey)}), 200)
	body = do(t, b.app, readinessReq(w.liveKey)).Body
	live := gate(t, body, "live")
	chain, _ := live["test_chain"].(map[string]any)
	if body["blocker"] != "payout" || live["status"] != "pass" || live["next_action"] != nil ||
		chain["click"] != "attributed" || chain["lead"] != "attributed" || chain["sale"] != "attributed" || live["last_chain_at"] == nil {
		t.Fatalf("after the chain: %v", body)
	}
	if le := body["last_event_at"].(map[string]any); le["lead"] != nil || le["sale"] != nil {
		t.Fatalf("readiness counts the CLI's events: %v", le)
	}

	// The brand's backend sends a test-mode sale with the key: the payout
	// gate passes server-to-server; the tracker's click passes tracking.
	mustOK(t, do(t, b.app, req{"POST", "/api/v1/track/sale", map[string]any{"additional_data": map[string]any{"test_mode": true}}, bearer(w.liveKey)}), 200)
	mustOK(t, do(t, b.app, req{"POST", "/api/v1/track/click", map[string]any{"affiliate_url": landing(w), "referrer_url": "https://blog.example/post"}, fromIP("198.51.100.9")}), 200)
	b.drain(t)
	body = do(t, b.app, readinessReq(w.liveKey)).Body
	payout := gate(t, body, "payout")
	if body["state"] != "integration_verified" || body["integration_verified"] != true || body["blocker"] != nil ||
		payout["mode"] != "s2s" || payout["endpoint"] != "https://track.example/api/v1/track/sale" || gate(t, body, "tracking")["status"] != "pass" {
		t.Fatalf("after the integration's calls: %v", body)
	}
	counts := body["counts_24h"].(map[string]any)
	if counts["clicks"] != float64(1) || counts["sales"] != float64(1) || counts["leads"] != float64(0) {
		t.Fatalf("counts %v", counts)
	}

	// A connected processor and a real attributed sale: live verified.
	mustOK(t, do(t, b.app, req{"POST", "/api/operator/v1/programs/" + itoa(w.programID) + "/processor-account", map[string]any{"account_id": "acct_9"}, operator()}), 200)
	var clickID string
	b.db.QueryRow(`SELECT click_id FROM clicks WHERE program_id = $1 AND NOT is_test`, w.programID).Scan(&clickID)
	mustOK(t, do(t, b.app, req{"POST", "/api/v1/track/sale", map[string]any{"transaction_id": "real-1", "amount_cents": 5000, "click_id": clickID}, bearer(w.liveKey)}), 200)
	body = do(t, b.app, readinessReq(w.liveKey)).Body
	if body["state"] != "live_verified" || gate(t, body, "payout")["mode"] != "stripe" ||
		gate(t, body, "payout")["endpoint"] != "https://track.example/api/v1/webhooks/stripe" {
		t.Fatalf("after a real sale: %v", body)
	}
}

func TestReadinessErrors(t *testing.T) {
	b := setupCLI(t)
	w := MustWorld(t, b.app)
	path := "/api/v1/programs/me/readiness"
	cases := []struct {
		desc    string
		header  map[string]string
		message string
	}{
		{"no header", nil, "Missing or malformed Authorization header; expected Bearer token."},
		{"malformed header", map[string]string{"Authorization": "Basic abc"}, "Missing or malformed Authorization header; expected Bearer token."},
		{"empty token", map[string]string{"Authorization": "Bearer "}, "Missing API token."},
		{"unknown key", bearer("aff_nope"), "Invalid API token."},
	}
	for _, c := range cases {
		t.Run(c.desc, func(t *testing.T) {
			r := do(t, b.app, req{"GET", path, nil, c.header})
			assertTyped(t, r, 401, "invalid_key", c.message)
			if r.Header.Get("X-Request-ID") == "" {
				t.Fatal("no X-Request-ID")
			}
		})
	}
	t.Run("500 typed with retry_after_seconds 10", func(t *testing.T) {
		srv := b.brokenEdge(t, func(s *Server, g *postgres.DB) { s.svc.Readiness = postgres.NewReadinessService(g) })
		r := do(t, srv.App(), readinessReq(w.liveKey))
		e := assertTyped(t, r, 500, "internal_error", "Failed to compute readiness. Retry shortly.")
		if e["retry_after_seconds"] != float64(10) || r.Header.Get("X-Request-ID") == "" {
			t.Fatalf("500: %s", r.Raw)
		}
	})
	t.Run("30 a minute per key", func(t *testing.T) {
		other := MustWorld(t, b.app)
		for i := 0; i < limitReadiness; i++ {
			mustStatus200(t, do(t, b.app, readinessReq(other.liveKey)))
		}
		r := do(t, b.app, readinessReq(other.liveKey))
		assertTyped(t, r, 429, "rate_limited", r.Body["error"].(map[string]any)["message"].(string))
		mustStatus200(t, do(t, b.app, readinessReq(w.liveKey)))
	})
}

func mustStatus200(t *testing.T, r response) {
	t.Helper()
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Raw)
	}
}

func TestAnalyticsSourcesEndpoint(t *testing.T) {
	b := setupCLI(t)
	w := MustWorld(t, b.app)
	// Three clicks through the click endpoint: two from one referrer.
	for i, ref := range []string{"https://www.google.com/search?q=acme", "https://google.com/", "https://news.example/a"} {
		mustOK(t, do(t, b.app, req{"POST", "/api/v1/track/click", map[string]any{"affiliate_url": landing(w), "referrer_url": ref},
			fromIP("198.51.100." + itoa(int64(10+i)))}), 200)
	}
	b.drain(t)
	var clickID string
	b.db.QueryRow(`SELECT click_id FROM clicks WHERE program_id = $1 AND referrer_url = 'https://google.com/'`, w.programID).Scan(&clickID)
	mustOK(t, do(t, b.app, req{"POST", "/api/v1/track/lead", map[string]any{"click_id": clickID, "customer_key": "c-1"}, bearer(w.liveKey)}), 200)
	mustOK(t, do(t, b.app, req{"POST", "/api/v1/track/sale", map[string]any{"transaction_id": "s-1", "amount_cents": 4200, "customer_key": "c-1"}, bearer(w.liveKey)}), 200)

	r := do(t, b.app, req{"GET", "/api/v1/programs/me/analytics/sources", nil, bearer(w.liveKey)})
	d := mustOK(t, r, 200)
	if r.Header.Get("X-RateLimit-Limit") != "30" || keys(d) != "from,group_by,groups,program_id,sources,to,totals" ||
		d["group_by"] != "referrer,partner" || d["groups"] != float64(2) || id(d["program_id"]) != w.programID {
		t.Fatalf("sources %s", r.Raw)
	}
	sources := d["sources"].([]any)
	top := sources[0].(map[string]any)
	if keys(top) != "clicks,leads,partner_id,partner_name,referrer_domain,revenue_cents,sales" ||
		top["referrer_domain"] != "google.com" || id(top["partner_id"]) != w.partnerID || top["partner_name"] != "Pat" ||
		top["clicks"] != float64(2) || top["leads"] != float64(1) || top["sales"] != float64(1) ||
		top["revenue_cents"].(map[string]any)["USD"] != float64(4200) {
		t.Fatalf("top source %v", top)
	}
	if second := sources[1].(map[string]any); second["referrer_domain"] != "news.example" || second["clicks"] != float64(1) {
		t.Fatalf("second source %v", second)
	}
	totals := d["totals"].(map[string]any)
	if totals["clicks"] != float64(3) || totals["sales"] != float64(1) {
		t.Fatalf("totals %v", totals)
	}
	// By partner only: one row, no referrer field.
	d = mustOK(t, do(t, b.app, req{"GET", "/api/v1/programs/me/analytics/sources?group_by=partner", nil, bearer(w.liveKey)}), 200)
	only := d["sources"].([]any)
	if len(only) != 1 || keys(only[0].(map[string]any)) != "clicks,leads,partner_id,partner_name,revenue_cents,sales" {
		t.Fatalf("by partner %v", d)
	}
	// A window before the clicks is empty.
	q := url.Values{"from": {"2020-01-01"}, "to": {"2020-01-31"}}
	d = mustOK(t, do(t, b.app, req{"GET", "/api/v1/programs/me/analytics/sources?" + q.Encode(), nil, bearer(w.liveKey)}), 200)
	if len(d["sources"].([]any)) != 0 || d["from"] != "2020-01-01T00:00:00.000Z" {
		t.Fatalf("old window %v", d)
	}

	for _, c := range []struct{ query, message string }{
		{"from=yesterday", "from must be an ISO 8601 date or date-time"},
		{"to=never", "to must be an ISO 8601 date or date-time"},
		{"from=2026-02-02&to=2026-02-01", "from must not be later than to"},
		{"from=2025-01-01&to=2026-01-01", "the range from from to to must not exceed 92 days"},
		{"limit=0", "limit must be an integer from 1 to 100"},
		{"group_by=device", "group_by must be one of: referrer, partner, referrer,partner"},
	} {
		assertTyped(t, do(t, b.app, req{"GET", "/api/v1/programs/me/analytics/sources?" + c.query, nil, bearer(w.liveKey)}), 400, "invalid_request", c.message)
	}
	assertTyped(t, do(t, b.app, req{"GET", "/api/v1/programs/me/analytics/sources", nil, nil}), 401, "invalid_key",
		"Missing or malformed Authorization header; expected Bearer token.")
	srv := b.brokenEdge(t, func(s *Server, g *postgres.DB) { s.svc.Analytics = postgres.NewAnalyticsService(g) })
	e := assertTyped(t, do(t, srv.App(), req{"GET", "/api/v1/programs/me/analytics/sources", nil, bearer(w.liveKey)}), 500,
		"internal_error", "Failed to compute analytics sources. Retry shortly.")
	if e["retry_after_seconds"] != float64(10) {
		t.Fatalf("500 %v", e)
	}
	if strings.Contains(keys(e), "request_id") {
		t.Fatalf("typed 500 carries a CLI request id: %v", e)
	}
}
