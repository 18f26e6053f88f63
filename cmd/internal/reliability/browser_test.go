package reliability

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/partnertrack/partnertrack/cmd/internal/axe"
)

// chromium is the browser the journeys drive: CHROMIUM, else the Debian
// package's path.
func chromium(t *testing.T) string {
	t.Helper()
	path := os.Getenv("CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the browser journeys need Chromium at %s (%v): install it with `apt-get install -y chromium` "+
			"(bash .ci/run does), or set CHROMIUM to a Chromium or Chrome binary", path, err)
	}
	return path
}

// headless starts one headless Chromium for the test and returns a
// context whose browser is running; tabs of their own cookie jars come
// from person.
func headless(t *testing.T) context.Context {
	t.Helper()
	bounded, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	alloc, cancelAlloc := chromedp.NewExecAllocator(bounded,
		chromedp.ExecPath(chromium(t)),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	t.Cleanup(cancelAlloc)
	ctx, cancelBrowser := chromedp.NewContext(alloc)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx
}

// person is one browser user: a tab in a browser context of its own (its
// own cookies), on the dashboard at base. Every page it opens is checked
// with axe-core; shot saves what it shows.
type person struct {
	t     *testing.T
	ctx   context.Context
	base  string
	shots string // directory of the screenshots
	seen  []string
}

func newPerson(t *testing.T, browser context.Context, base, shots string) *person {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatal(err)
	}
	return &person{t: t, ctx: ctx, base: base, shots: shots}
}

// open loads a page of the dashboard and checks it answered 200 and has
// no serious accessibility violation.
func (p *person) open(path string) {
	p.t.Helper()
	resp, err := chromedp.Run(p.ctx, chromedp.NavigateResponse(p.base+path))
	if err != nil {
		p.t.Fatalf("open %s: %v", path, err)
	}
	if resp.Status != 200 {
		p.t.Fatalf("open %s: status %d (%s)", path, resp.Status, p.location())
	}
	p.audit()
}

// submit clicks the button whose text is label, waits for the page the
// form leads to, and audits it.
func (p *person) submit(label string) {
	p.t.Helper()
	resp, err := chromedp.RunResponse(p.ctx, chromedp.Click(buttonNamed(label)))
	if err != nil {
		p.t.Fatalf("submit %q: %v", label, err)
	}
	if resp.Status >= 400 {
		p.t.Fatalf("submit %q: status %d at %s: %s", label, resp.Status, p.location(), p.text("main"))
	}
	p.audit()
}

// follow clicks a link and waits for the page it opens (through any
// redirects), without auditing it (it may be another site's).
func (p *person) follow(sel string) {
	p.t.Helper()
	if _, err := chromedp.RunResponse(p.ctx, chromedp.Click(sel)); err != nil {
		p.t.Fatalf("follow %s: %v", sel, err)
	}
}

func buttonNamed(label string) string {
	return `//button[normalize-space()="` + label + `"] | //a[normalize-space()="` + label + `"]`
}

// set types a value into the field with the id.
func (p *person) set(id, value string) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, chromedp.SetValue("#"+id, value)); err != nil {
		p.t.Fatalf("set #%s: %v", id, err)
	}
}

// text is the visible text of the first element sel matches.
func (p *person) text(sel string) string {
	p.t.Helper()
	s, err := chromedp.Run(p.ctx, chromedp.Text(sel))
	if err != nil {
		p.t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// eval runs a JavaScript expression in the page and returns its string.
func (p *person) eval(js string) string {
	p.t.Helper()
	s, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](js))
	if err != nil {
		p.t.Fatalf("eval %s: %v", js, err)
	}
	return s
}

func (p *person) location() string {
	loc, _ := chromedp.Run(p.ctx, chromedp.Location())
	return loc
}

// sees fails unless the page's main content shows every one of parts.
func (p *person) sees(parts ...string) {
	p.t.Helper()
	main := p.text("main")
	for _, s := range parts {
		if !strings.Contains(main, s) {
			p.t.Fatalf("%s does not show %q:\n%s", p.location(), s, main)
		}
	}
}

// audit runs axe-core on the page and fails on a serious or critical
// violation; it remembers the page for the narrow-screen check.
func (p *person) audit() {
	p.t.Helper()
	vs, err := axe.Serious(p.ctx)
	if err != nil {
		p.t.Fatal(err)
	}
	for _, v := range vs {
		p.t.Errorf("axe on %s: %s", p.location(), v)
	}
	if u, err := url.Parse(p.location()); err == nil && strings.HasPrefix(u.String(), p.base) {
		p.seen = append(p.seen, u.RequestURI())
	}
}

// shot saves a screenshot of the whole page as <name>.png.
func (p *person) shot(name string) {
	p.t.Helper()
	img, err := chromedp.Run(p.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(p.shots, name+".png"), img, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// narrow reopens every page the person saw at 360 px wide and fails when
// one is wider than the screen (the page would scroll sideways).
func (p *person) narrow() {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, chromedp.EmulateViewport(360, 740)); err != nil {
		p.t.Fatal(err)
	}
	for _, path := range p.seen {
		if strings.Contains(path, "/key") || strings.HasPrefix(path, "/auth/") {
			continue
		}
		if _, err := chromedp.Run(p.ctx, chromedp.NavigateResponse(p.base+path)); err != nil {
			p.t.Fatalf("open %s at 360 px: %v", path, err)
		}
		if w := p.eval(`String(document.documentElement.scrollWidth)`); len(w) > 3 || w > "360" {
			p.t.Errorf("%s is %s px wide on a 360 px screen; too wide: %s", path, w, p.eval(overflowing))
		}
	}
	if err := chromedp.Do(p.ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		p.t.Fatal(err)
	}
}

// overflowing names the first elements that reach past the right edge of
// the screen (tables scroll in their own box, so their insides do not count).
const overflowing = `[...document.querySelectorAll('body *')]
  .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1 && !e.closest('.table-wrap'))
  .slice(0, 5).map(e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.className ? '.' + String(e.className).split(' ').join('.') : ''))
  .join(', ')`

// waitFor reloads path until check says the page shows what is awaited
// (work a worker does after the request that caused it), up to timeout.
func (p *person) waitFor(path string, timeout time.Duration, what string, check func() bool) {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if _, err := chromedp.Run(p.ctx, chromedp.NavigateResponse(p.base+path)); err != nil {
			p.t.Fatalf("open %s: %v", path, err)
		}
		if check() {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s never showed %s in %s:\n%s", path, what, timeout, p.text("main"))
		}
		time.Sleep(200 * time.Millisecond) // paces the reloads
	}
}

// screenshotDir is where the journeys save their screenshots:
// DASHBOARD_SCREENSHOTS (make screenshots sets docs/screenshots), else a
// directory of the test's own.
func screenshotDir(t *testing.T) string {
	if d := os.Getenv("DASHBOARD_SCREENSHOTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// signIn goes through the sign-in page and the provider's page as email
// and returns where the dashboard landed.
func (p *person) signIn(path, email string) {
	p.t.Helper()
	p.open(path) // redirected to /login?next=…
	p.sees("Sign in to partnertrack")
	p.follow(buttonNamed("Sign in"))
	if !strings.Contains(p.text("body"), "Development sign-in") {
		p.t.Fatalf("not on the provider's page: %s", p.location())
	}
	p.set("email", email)
	p.submit("Sign in")
	if loc := p.location(); !strings.HasPrefix(loc, p.base+path) {
		p.t.Fatalf("after sign-in at %s, want %s", loc, path)
	}
}

func itoa64(n int64) string { return fmt.Sprint(n) }
