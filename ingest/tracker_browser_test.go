package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/gofiber/fiber/v2"
	"github.com/hibiken/asynq"
	"github.com/valyala/fasthttp"

	"github.com/partnertrack/partnertrack/workers"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

// chromiumPath is the browser of the real-browser test: $CHROMIUM, else
// Debian's chromium package.
func chromiumPath(t *testing.T) string {
	t.Helper()
	path := os.Getenv("CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the browser test needs Chromium at %s (%v): install it with `apt-get install -y chromium` "+
			"(bash .ci/run does), or set CHROMIUM to a Chromium or Chrome binary", path, err)
	}
	return path
}

// TestTrackerInARealBrowser serves a landing page that includes the real
// tracker from a real edge, opens it with ?aff=CODE in headless Chromium,
// and checks the cookie, the click row a worker wrote, the visit, the
// Stripe links, and a browser lead carrying the click id.
func TestTrackerInARealBrowser(t *testing.T) {
	chromium := chromiumPath(t)
	b := setupClicks(t)
	w := MustWorld(t, b.app)
	code := "pat" + itoa(w.programID)

	// A tap in front of the edge copies what the tracker posts to the lead
	// route (the real one) so the test can check the request as well as
	// the stored lead.
	const leadPath = "/api/v1/track/lead"
	leads := make(chan map[string]any, 4)
	app := b.app.Handler()
	tap := func(rc *fasthttp.RequestCtx) {
		if string(rc.Method()) == "POST" && string(rc.Path()) == leadPath {
			var body map[string]any
			if err := json.Unmarshal(rc.PostBody(), &body); err == nil {
				body["authorization"] = string(rc.Request.Header.Peek(fiber.HeaderAuthorization))
				leads <- body
			}
		}
		app(rc)
	}

	// The edge, on a real port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server := &fasthttp.Server{Handler: tap, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second}
	go server.Serve(ln)
	t.Cleanup(func() { server.Shutdown() })
	edge := "http://" + ln.Addr().String()

	// A worker on the clicks and visits queues.
	worker := asynq.NewServerFromRedisClient(b.rdb, asynq.Config{
		Concurrency: 2,
		Queues:      map[string]int{b.ns.Queue(tasks.QueueClicks): 1, b.ns.Queue(tasks.QueueVisits): 1},
		Logger:      quietAsynq{},
	})
	if err := worker.Start(workers.NewMux(workers.Handlers{Traffic: b.store, Logger: quietLog})); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(worker.Shutdown)

	// The brand's landing page, on another origin.
	page := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(rw, `<!doctype html><html><head><title>Acme</title>
<script src="%s/tracker.js" data-program-id="%d" defer></script></head>
<body><h1>Acme</h1>
<a id="pay" href="https://buy.stripe.com/test_abc">Buy</a>
<a id="brand-ref" href="https://buy.stripe.com/test_def?client_reference_id=user_7">Buy (brand's own reference)</a>
<stripe-buy-button id="button" buy-button-id="buy_btn_1" publishable-key="pk_test_1"></stripe-buy-button>
</body></html>`, edge, w.programID)
	}))
	t.Cleanup(page.Close)
	landingURL := page.URL + "/landing?aff=" + code

	// The browser, bounded in time: the whole test gives up after two
	// minutes, taking the browser with it.
	bounded, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(bounded,
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		// Names under .acme.test reach the landing page: the root-domain
		// probing needs a host name, not an address.
		chromedp.Flag("host-resolver-rules", "MAP *.acme.test 127.0.0.1"),
		chromedp.UserDataDir(t.TempDir()),
	)
	defer cancelAlloc()
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	defer cancelTab()

	if err := chromedp.Do(ctx, chromedp.Navigate(landingURL)); err != nil {
		t.Fatalf("open %s: %v", landingURL, err)
	}
	clickID, err := chromedp.Run(ctx, chromedp.Poll[string](`window.svc && window.svc.getClickId()`,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second)))
	if err != nil {
		t.Fatalf("the tracker set no click id: %v", err)
	}

	// The first-party cookie: the click id, SameSite=Lax, path /, host
	// only on an IP address, not Secure over http, for the program's 90
	// days.
	cookies, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{page.URL}})
	if err != nil {
		t.Fatal(err)
	}
	jar := map[string]*network.Cookie{}
	for _, c := range cookies.Cookies {
		jar[c.Name] = c
	}
	c := jar["svc_click_id"]
	if c == nil || c.Value != clickID || c.SameSite != network.CookieSameSiteLax || c.Path != "/" || c.Secure || c.HTTPOnly || c.Session {
		t.Fatalf("svc_click_id cookie %+v (click %s)", c, clickID)
	}
	if days := (c.Expires - float64(time.Now().Unix())) / 86400; math.Abs(days-90) > 1 {
		t.Fatalf("cookie lasts %.1f days, want the program's 90", days)
	}
	if jar["svc_aff_url"] == nil || !strings.Contains(mustUnescape(t, jar["svc_aff_url"].Value), "aff="+code) || jar["svc_click_ids"] == nil {
		t.Fatalf("cookies %v", names(jar))
	}

	// The click reaches Postgres through the queue and the worker.
	eventually(t, "the click row", func() bool {
		var n int
		b.db.QueryRow(`SELECT count(*) FROM clicks WHERE click_id = $1 AND program_id = $2 AND link_id = $3 AND page_url = $4`,
			clickID, w.programID, w.linkID, landingURL).Scan(&n)
		return n == 1
	})
	got := b.row(t, clickID)
	// Enriched from the browser's own User-Agent (headless Chromium calls
	// itself HeadlessChrome, which the parser files as a bot).
	if got.Browser != "Headless Chrome" || got.OS != "Linux" || got.Device != "bot" || got.IP != "127.0.0.1" || !strings.HasPrefix(got.Session, "sess_") {
		t.Fatalf("stored click %+v", got)
	}
	eventually(t, "the visit row, carrying the click", func() bool {
		var n int
		b.db.QueryRow(`SELECT count(*) FROM visits WHERE click_id = $1 AND program_id = $2`, clickID, w.programID).Scan(&n)
		return n == 1
	})

	// The click id is written into the Stripe payment link and buy button,
	// and a reference the brand set is left alone.
	refs, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[document.getElementById('pay').href,
		document.getElementById('brand-ref').href, document.getElementById('button').getAttribute('client-reference-id')]`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(refs[0], "client_reference_id="+clickID) || !strings.HasSuffix(refs[1], "client_reference_id=user_7") || refs[2] != clickID {
		t.Fatalf("Stripe references %q", refs)
	}

	// A browser lead carries the click id, without credentials, and is
	// stored for that click (provisional: the program requires server
	// leads).
	outcome, err := chromedp.Run(ctx, chromedp.Evaluate[string](
		`window.svc.lead({customer_key: 'user-42', email: 'lead@buyer.example'}).then(() => 'ok', e => 'refused: ' + e.message)`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("lead(): %v", err)
	}
	var lead map[string]any
	select {
	case lead = <-leads:
	case <-time.After(30 * time.Second):
		t.Fatalf("the tracker sent no lead (lead() said %q)", outcome)
	}
	if lead["click_id"] != clickID || lead["customer_key"] != "user-42" || lead["email"] != "lead@buyer.example" ||
		lead["program_id"] != float64(w.programID) || lead["authorization"] != "" {
		t.Fatalf("lead request %v", lead)
	}
	if ids, _ := lead["click_ids"].([]any); len(ids) != 1 || ids[0] != clickID {
		t.Fatalf("lead click_ids %v", lead["click_ids"])
	}
	if outcome != "ok" {
		t.Fatalf("lead() said %q", outcome)
	}
	var mode, email string
	var provisional bool
	if err := b.db.QueryRow(`SELECT mode, provisional, email FROM leads WHERE click_id = $1`, clickID).
		Scan(&mode, &provisional, &email); err != nil {
		t.Fatalf("the browser lead is not stored: %v", err)
	}
	if mode != "browser" || !provisional || email != "lead@buyer.example" {
		t.Fatalf("stored lead: mode %s provisional %v email %s", mode, provisional, email)
	}

	// The visitor comes back through the same link: a visit, no new click.
	if err := chromedp.Do(ctx, chromedp.Navigate(landingURL)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the second visit", func() bool {
		var n int
		b.db.QueryRow(`SELECT count(*) FROM visits WHERE click_id = $1`, clickID).Scan(&n)
		return n == 2
	})
	if n := b.clickRows(t); n != 1 {
		t.Fatalf("%d clicks after a return visit, want 1", n)
	}

	// On a site with a host name, the cookie goes to the widest domain
	// that takes it, so that every subdomain of the brand sees it.
	port := page.Listener.Addr().(*net.TCPAddr).Port
	shop := fmt.Sprintf("http://www.shop.acme.test:%d", port)
	if err := chromedp.Do(ctx, chromedp.Navigate(shop+"/landing?aff="+code)); err != nil {
		t.Fatal(err)
	}
	shopClick, err := chromedp.Run(ctx, chromedp.Poll[string](`window.svc && window.svc.getClickId()`,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second)))
	if err != nil {
		t.Fatalf("no click on %s: %v", shop, err)
	}
	cookies, err = chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{shop}})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range cookies.Cookies {
		switch c.Name {
		case "svc_click_id":
			found = c.Value == shopClick && c.Domain == ".acme.test"
		case "svc_domain_test":
			t.Fatalf("the probe cookie was left behind: %+v", c)
		}
	}
	if !found {
		t.Fatalf("svc_click_id not on .acme.test: %+v", cookies.Cookies)
	}
}

func mustUnescape(t *testing.T, s string) string {
	t.Helper()
	u, err := url.QueryUnescape(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func names(jar map[string]*network.Cookie) []string {
	var out []string
	for n := range jar {
		out = append(out, n)
	}
	return out
}

// eventually polls cond; it fails after a generous bound instead of
// asserting on timing.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never happened: %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type quietAsynq struct{}

func (quietAsynq) Debug(...any) {}
func (quietAsynq) Info(...any)  {}
func (quietAsynq) Warn(...any)  {}
func (quietAsynq) Error(...any) {}
func (quietAsynq) Fatal(...any) {}
