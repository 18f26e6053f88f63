package ingest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
)

// TestEmbedInARealBrowser frames the referral widget in headless Chromium:
// on https://acme.example (the program's domain) the widget renders in
// the iframe with the user's link and numbers; on https://evil.example
// the browser refuses to frame it (CSP frame-ancestors). Both sites and
// the edge are local TLS servers; the browser resolves the two names to
// the brand's server and accepts the test certificates.
func TestEmbedInARealBrowser(t *testing.T) {
	chromium := chromiumPath(t)
	b := setup(t)
	w := MustWorld(t, b.app)
	tok := mustEmbedToken(t, b, w, "browser@customer.example")

	edge := httptest.NewTLSServer(adaptor.FiberApp(b.app))
	t.Cleanup(edge.Close)
	widget := edge.URL + "/embed/referrals?token=" + url.QueryEscape(tok)
	brand := httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(rw, `<!doctype html><html><head><title>%s</title></head>
<body><h1>Your account</h1><iframe id="widget" src="%s" width="600" height="400"></iframe></body></html>`, r.Host, widget)
	}))
	t.Cleanup(brand.Close)
	brandAddr := strings.TrimPrefix(brand.URL, "https://")

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
		chromedp.Flag("ignore-certificate-errors", true),
		// The iframe's document is queried from the page's own target.
		chromedp.Flag("disable-site-isolation-trials", true),
		chromedp.Flag("disable-features", "IsolateOrigins,site-per-process"),
		chromedp.Flag("host-resolver-rules", "MAP acme.example "+brandAddr+", MAP evil.example "+brandAddr),
		chromedp.UserDataDir(t.TempDir()),
	)
	defer cancelAlloc()
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	defer cancelTab()

	// childFrame waits for the page's iframe to finish loading and
	// returns its frame: its URL, or the error page it was replaced by.
	childFrame := func() *cdp.Frame {
		t.Helper()
		var child *cdp.Frame
		deadline := time.Now().Add(30 * time.Second)
		for child == nil {
			tree, err := chromedp.Call(ctx, page.GetFrameTree, cdp.Empty{})
			if err != nil {
				t.Fatal(err)
			}
			if len(tree.FrameTree.ChildFrames) == 1 && tree.FrameTree.ChildFrames[0].Frame.URL != "about:blank" {
				child = tree.FrameTree.ChildFrames[0].Frame
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the iframe did not load within 30 s")
			}
			time.Sleep(50 * time.Millisecond)
		}
		return child
	}

	if err := chromedp.Do(ctx, chromedp.Navigate("https://acme.example/account")); err != nil {
		t.Fatal(err)
	}
	if f := childFrame(); f.URL != widget || f.UnreachableURL != "" {
		t.Fatalf("on the program's domain the iframe is %q (unreachable %q), want the widget", f.URL, f.UnreachableURL)
	}
	frames, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSS("#widget")))
	if err != nil || len(frames) != 1 {
		t.Fatalf("iframe node: %v", err)
	}
	inner, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#terms"), chromedp.FromNode(frames[0])))
	if err != nil || !strings.Contains(inner, "You earn 30%") {
		t.Fatalf("the widget's terms in the iframe: %q, %v", inner, err)
	}
	link, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(".referral-link"), chromedp.FromNode(frames[0])))
	if err != nil || !strings.HasPrefix(link, "https://acme.example/?aff=") {
		t.Fatalf("the widget's link in the iframe: %q, %v", link, err)
	}

	if err := chromedp.Do(ctx, chromedp.Navigate("https://evil.example/account")); err != nil {
		t.Fatal(err)
	}
	// Refused: the frame shows the browser's error page in its place.
	if f := childFrame(); f.UnreachableURL != widget || f.URL == widget {
		t.Fatalf("on another site the iframe is %q (unreachable %q), want the widget refused", f.URL, f.UnreachableURL)
	}
}
