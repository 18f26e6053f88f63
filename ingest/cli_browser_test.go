package ingest

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/valyala/fasthttp"

	"github.com/partnertrack/partnertrack/ingest/oidc/testissuer"
)

// TestCLILoginPageInARealBrowser opens the login link in headless
// Chromium: the page sends the browser to the provider's authorization
// endpoint (found through discovery), comes back with an id_token in the
// fragment, and posts the callback; the CLI's poll then completes. The
// provider here is a small stand-in for the implicit flow in front of the
// test issuer, whose tokens the edge verifies. A second login uses the
// page's paste-a-token form.
func TestCLILoginPageInARealBrowser(t *testing.T) {
	chromium := chromiumPath(t)
	b := setupCLI(t)
	w := MustWorld(t, b.app)
	email := b.ownerEmail(t, w)

	// The provider: discovery (readable cross-origin, as real providers
	// make it) and an authorization endpoint that signs the person in at
	// once and returns to the redirect URI.
	var mu sync.Mutex
	var asked url.Values
	var referer string
	var prov *httptest.Server
	prov = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			rw.Header().Set("Access-Control-Allow-Origin", "*")
			rw.Header().Set("Content-Type", "application/json")
			json.NewEncoder(rw).Encode(map[string]any{"issuer": prov.URL, "authorization_endpoint": prov.URL + "/auth"})
		case "/auth":
			q := r.URL.Query()
			mu.Lock()
			asked, referer = q, r.Referer()
			mu.Unlock()
			back := q.Get("redirect_uri") + "#id_token=" + url.QueryEscape(b.iss.Token(t, "sub-owner", email)) +
				"&state=" + url.QueryEscape(q.Get("state"))
			http.Redirect(rw, r, back, http.StatusFound)
		default:
			http.NotFound(rw, r)
		}
	}))
	t.Cleanup(prov.Close)

	// The edge on a real port; the page names it as its public base URL
	// (the provider's redirect URI) and the stand-in as the provider.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	edge := "http://" + ln.Addr().String()
	srv := newTestServer(b.db, b.clock)
	b.wire(t, srv, b.rdb)
	b.wireCLI(srv, b.db.DB)
	srv.cfg.PublicBaseURL, srv.cfg.OIDCIssuerURL = edge, prov.URL
	server := &fasthttp.Server{Handler: srv.App().Handler(), ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second}
	go server.Serve(ln)
	t.Cleanup(func() { server.Shutdown() })

	bounded, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(bounded,
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	defer cancelAlloc()
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	defer cancelTab()

	start := func() (state, link string) {
		t.Helper()
		d := mustOK(t, do(t, srv.App(), req{"POST", "/api/v1/cli/auth/start", nil, nil}), 200)
		return d["state"].(string), d["auth_url"].(string)
	}
	signedIn := func(state string) {
		t.Helper()
		// The page navigates (to the provider and back) while it is
		// polled: a poll the navigation interrupts is asked again.
		var status string
		var err error
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			status, err = chromedp.Run(ctx, chromedp.Poll[string](
				`(s => s && (s.className === 'ok' || s.className === 'err') ? s.textContent : null)(document.getElementById('status'))`,
				chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second)))
			if err == nil {
				break
			}
		}
		if err != nil || !strings.HasPrefix(status, "Signed in as "+email) {
			t.Fatalf("page status %q, %v", status, err)
		}
		poll := mustOK(t, do(t, srv.App(), pollReq(state)), 200)
		if poll["status"] != "complete" || poll["email"] != email || !strings.HasPrefix(poll["token"].(string), "pt_cli_") {
			t.Fatalf("poll after the page's callback: %v", poll)
		}
	}

	// Through the provider.
	state, link := start()
	if !strings.HasPrefix(link, edge+"/cli/login?state=") {
		t.Fatalf("auth_url %s", link)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(link)); err != nil {
		t.Fatal(err)
	}
	search, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.search`))
	if err != nil || search != "" {
		t.Fatalf("the state stays in the address bar: %q, %v", search, err)
	}
	// The person confirms the code their terminal shows, then signs in.
	if err := chromedp.Do(ctx, chromedp.Click("#confirm-code"), chromedp.WaitVisible("#signin"), chromedp.Click("#signin")); err != nil {
		t.Fatal(err)
	}
	signedIn(state)
	mu.Lock()
	if asked.Get("client_id") != testissuer.ClientID || asked.Get("response_type") != "id_token" || asked.Get("response_mode") != "fragment" ||
		asked.Get("scope") != "openid email" || asked.Get("redirect_uri") != edge+"/cli/login" || asked.Get("nonce") == "" ||
		asked.Get("state") == "" || asked.Get("state") == state || referer != "" {
		t.Fatalf("the provider was asked %v (referer %q)", asked, referer)
	}
	mu.Unlock()
	// Back from the provider, the fragment is gone too.
	if hash, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.hash`)); hash != "" {
		t.Fatalf("the id_token stays in the address bar: %q", hash)
	}

	// With a pasted token.
	state, link = start()
	token, _ := json.Marshal(b.iss.Token(t, "sub-owner", email))
	if err := chromedp.Do(ctx, chromedp.Navigate(link), chromedp.Click("#confirm-code"), chromedp.WaitVisible("#paste")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('token').value = `+string(token)+`; `+
		`document.getElementById('paste').click(); true`)); err != nil {
		t.Fatal(err)
	}
	signedIn(state)
}
