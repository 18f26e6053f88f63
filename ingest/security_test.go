package ingest

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/hibiken/asynq"

	"github.com/partnertrack/partnertrack/workers/redistest"
)

// TestNoSniffOnEveryResponse: every answer carries nosniff, whoever wrote
// it: a handler, an error, fiber's 404 and 405, the static script, the
// dashboard, and the server's own refusal of a body over its limit,
// written before any middleware ran.
func TestNoSniffOnEveryResponse(t *testing.T) {
	b := setup(t)
	app := newTestServer(b.db, b.clock, withQueuesDashboard(t)).App()
	for _, tc := range []struct {
		desc   string
		r      req
		status int
	}{
		{"Health", req{"GET", "/healthz", nil, nil}, 200},
		{"Tracker", req{"GET", "/tracker.js", nil, nil}, 200},
		{"ErrorReference", req{"GET", "/docs/errors", nil, nil}, 200},
		{"NotFound", req{"GET", "/no/such/route", nil, nil}, 404},
		{"MethodNotAllowed", req{"PUT", "/api/v1/track/sale", nil, nil}, 405},
		{"Unauthorized", req{"POST", "/api/v1/track/sale", map[string]any{}, nil}, 401},
		{"BadRequest", req{"POST", "/api/v1/track/click", "{", nil}, 400},
		{"Dashboard", req{"GET", "/ops/queues/", nil, operator()}, 200},
		{"DashboardAsset", req{"GET", "/ops/queues/favicon.ico", nil, operator()}, 200},
		{"DashboardUnauthorized", req{"GET", "/ops/queues", nil, nil}, 401},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			r := do(t, app, tc.r)
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d: %.300s", r.Status, tc.status, r.Raw)
			}
			assertNoSniff(t, r)
		})
	}
	// The server refuses a body over its own limit while reading it, before
	// any middleware; app.Test cannot show that answer, a real port can.
	r := sendOversized(t, serveOnPort(t, app), "POST", "/api/v1/track/sale", bearer("aff_x"))
	if r.Status != 413 {
		t.Fatalf("body over the server's limit: %d %.300s", r.Status, r.Raw)
	}
	assertNoSniff(t, r)
}

func assertNoSniff(t *testing.T, r response) {
	t.Helper()
	if got := r.Header.Values("X-Content-Type-Options"); len(got) == 0 || got[0] != "nosniff" {
		t.Fatalf("X-Content-Type-Options %q, want nosniff", got)
	}
}

// serveOnPort serves app on a port of its own until the test ends, for
// the answers app.Test cannot return (the server's refusals while
// reading), and returns its address.
func serveOnPort(t *testing.T, app *fiber.App) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- app.Listener(ln) }()
	t.Cleanup(func() {
		if err := app.Shutdown(); err != nil {
			t.Error(err)
		}
		<-done
	})
	return ln.Addr().String()
}

// sendOversized sends a request whose Content-Length is over the server's
// limit, without its body: the server refuses it on the length alone, and
// with no unread bytes left the connection closes cleanly (a body left
// unread would make the kernel reset it, losing the answer).
func sendOversized(t *testing.T, addr, method, path string, header map[string]string) response {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var head strings.Builder
	fmt.Fprintf(&head, "%s %s HTTP/1.1\r\nHost: example.com\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", method, path, maxWebhookBodyBytes+1)
	for k, v := range header {
		fmt.Fprintf(&head, "%s: %s\r\n", k, v)
	}
	head.WriteString("\r\n")
	if _, err := io.WriteString(conn, head.String()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	return readResponse(t, resp, "raw request")
}

// TestOpsQueuesSecurityHeaders: every answer under /ops/queues, the
// challenge included, forbids framing and carries a policy that allows the
// page's own inline scripts by hash and nothing inline else.
func TestOpsQueuesSecurityHeaders(t *testing.T) {
	b := setup(t)
	app := newTestServer(b.db, b.clock, withQueuesDashboard(t)).App()
	page := do(t, app, req{"GET", "/ops/queues/", nil, operator()})
	if page.Status != 200 {
		t.Fatalf("page: %d %.300s", page.Status, page.Raw)
	}
	var hashes []string
	for _, m := range regexp.MustCompile(`(?s)<script>(.*?)</script>`).FindAllSubmatch(page.Raw, -1) {
		sum := sha256.Sum256(m[1])
		hashes = append(hashes, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'")
	}
	if len(hashes) == 0 {
		t.Fatalf("the dashboard page has no inline script any more: %.500s", page.Raw)
	}
	for _, tc := range []struct {
		desc   string
		r      req
		status int
	}{
		{"Page", req{"GET", "/ops/queues/", nil, operator()}, 200},
		{"PageWithoutSlash", req{"GET", "/ops/queues", nil, operator()}, 200},
		{"Route", req{"GET", "/ops/queues/servers", nil, operator()}, 200},
		{"API", req{"GET", "/ops/queues/api/queues", nil, operator()}, 200},
		{"Challenge", req{"GET", "/ops/queues", nil, nil}, 401},
		{"ReadOnly", req{"POST", "/ops/queues/api/queues/default:pause", nil, operator()}, 403},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			r := doQueues(t, app, tc.r)
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d: %.300s", r.Status, tc.status, r.Raw)
			}
			if got := r.Header.Get("X-Frame-Options"); got != "DENY" {
				t.Fatalf("X-Frame-Options %q", got)
			}
			csp := r.Header.Get("Content-Security-Policy")
			directives := map[string]string{}
			for _, d := range strings.Split(csp, ";") {
				name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
				directives[name] = value
			}
			script := directives["script-src"]
			if !strings.Contains(script, "'self'") || strings.Contains(script, "unsafe-inline") || strings.Contains(script, "unsafe-eval") {
				t.Fatalf("script-src %q in %q", script, csp)
			}
			for _, h := range hashes {
				if !strings.Contains(script, h) {
					t.Fatalf("script-src %q lacks the page's inline script %s", script, h)
				}
			}
			if directives["frame-ancestors"] != "'none'" || directives["object-src"] != "'none'" || directives["default-src"] != "'self'" {
				t.Fatalf("policy %q", csp)
			}
		})
	}
	// Elsewhere the dashboard's headers are not sent.
	if r := do(t, app, req{"GET", "/healthz", nil, nil}); r.Header.Get("Content-Security-Policy") != "" {
		t.Fatalf("policy on /healthz: %q", r.Header.Get("Content-Security-Policy"))
	}
}

// TestOpsQueuesRefusesCrossSiteChanges: with a writable dashboard, a
// change that a browser sends from another site (with the operator's
// cached basic auth) is refused and changes nothing; the same change from
// the dashboard's own page, or from a client that is not a browser, goes
// through.
func TestOpsQueuesRefusesCrossSiteChanges(t *testing.T) {
	b := setup(t)
	rdb := redistest.Client(t)
	ns := redistest.Namespace(t, rdb)
	queue := ns.Queue("notifications")
	if _, err := asynq.NewClientFromRedisClient(rdb).Enqueue(asynq.NewTask("x", nil), asynq.Queue(queue)); err != nil {
		t.Fatal(err)
	}
	inspector := asynq.NewInspectorFromRedisClient(rdb)
	paused := func() bool {
		t.Helper()
		info, err := inspector.GetQueueInfo(queue)
		if err != nil {
			t.Fatal(err)
		}
		return info.Paused
	}
	app := newTestServerConfig(b.db, b.clock, func(cfg *Config) { cfg.OpsQueuesWritable = true }, withQueuesDashboard(t)).App()
	auth := basic("ops", testOperatorToken)
	with := func(extra map[string]string) map[string]string {
		h := map[string]string{"Authorization": auth["Authorization"]}
		for k, v := range extra {
			h[k] = v
		}
		return h
	}
	pause := "/ops/queues/api/queues/" + queue + ":pause"
	for _, tc := range []struct {
		desc   string
		method string
		path   string
		header map[string]string
	}{
		{"CrossSite", "POST", pause, with(map[string]string{"Sec-Fetch-Site": "cross-site"})},
		{"SameSiteOtherOrigin", "POST", pause, with(map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "https://other.example.com"})},
		{"OldBrowserOtherOrigin", "POST", pause, with(map[string]string{"Origin": "https://evil.example"})},
		{"CrossSiteDelete", "DELETE", "/ops/queues/api/queues/" + queue, with(map[string]string{"Sec-Fetch-Site": "cross-site"})},
		{"CrossSiteBearer", "POST", pause, map[string]string{"Authorization": operator()["Authorization"], "Sec-Fetch-Site": "cross-site"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			r := do(t, app, req{tc.method, tc.path, nil, tc.header})
			assertError(t, r, 403, msgOpsCrossSite)
			if paused() {
				t.Fatal("a refused cross-site request paused the queue")
			}
		})
	}
	if info, err := inspector.GetQueueInfo(queue); err != nil || info.Size != 1 {
		t.Fatalf("queue after the refusals: %+v, %v (a cross-site DELETE went through)", info, err)
	}
	// A cross-site GET changes nothing (and CORS keeps its answer from the
	// other site): it passes.
	if r := doQueues(t, app, req{"GET", "/ops/queues/api/queues", nil, with(map[string]string{"Sec-Fetch-Site": "cross-site"})}); r.Status != 200 {
		t.Fatalf("cross-site GET: %d", r.Status)
	}
	// The dashboard's own page (httptest's host is example.com).
	same := with(map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://example.com"})
	if r := do(t, app, req{"POST", pause, nil, same}); r.Status != 200 && r.Status != 204 {
		t.Fatalf("same-origin pause: %d %s", r.Status, r.Raw)
	}
	if !paused() {
		t.Fatal("same-origin pause did not pause")
	}
	// A client that is no browser sends neither header.
	if r := do(t, app, req{"POST", "/ops/queues/api/queues/" + queue + ":resume", nil, auth}); r.Status != 200 && r.Status != 204 {
		t.Fatalf("resume without browser headers: %d %s", r.Status, r.Raw)
	}
	if paused() {
		t.Fatal("resume did not resume")
	}
}
