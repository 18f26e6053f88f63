package devissuer_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/partnertrack/partnertrack/ingest/oidc/devissuer"
)

const (
	clientID    = "partnertrack-dev"
	redirectURI = "http://127.0.0.1:8080/auth/callback"
)

var (
	keyOnce sync.Once
	testKey *rsa.PrivateKey
)

// key is one RSA key for the whole test binary: generating 2048-bit keys
// per test is slow.
func key(t *testing.T) *rsa.PrivateKey {
	keyOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		testKey = k
	})
	return testKey
}

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// testBundle is a running issuer and an oauth2 client of it.
type testBundle struct {
	iss       *devissuer.Issuer
	issuerURL string
	server    *httptest.Server
	clock     *clock
	provider  *gooidc.Provider
	conf      oauth2.Config
	browser   *http.Client // follows no redirects, like a test of the Location
}

// setup serves an issuer at prefix of a server that has another route
// beside it, as the edge mounts it at /dev/oidc.
func setup(t *testing.T, prefix string) *testBundle {
	t.Helper()
	b := &testBundle{clock: &clock{now: time.Now()}}
	mux := http.NewServeMux()
	mux.HandleFunc("/other", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "other route") })
	b.server = httptest.NewUnstartedServer(mux)
	b.issuerURL = "http://" + b.server.Listener.Addr().String() + prefix
	iss, err := devissuer.New(devissuer.Config{IssuerURL: b.issuerURL, ClientID: clientID, Key: key(t), Now: b.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	b.iss = iss
	if prefix == "" {
		mux.Handle("/", iss)
	} else {
		mux.Handle(prefix+"/", iss)
	}
	b.server.Start()
	t.Cleanup(b.server.Close)

	// Discovery checks that the document names this issuer; the clock
	// only shapes the tokens, so verification runs on the same clock.
	b.provider, err = gooidc.NewProvider(context.Background(), b.issuerURL)
	if err != nil {
		t.Fatal(err)
	}
	b.conf = oauth2.Config{
		ClientID:    clientID,
		Endpoint:    b.provider.Endpoint(),
		RedirectURL: redirectURI,
		Scopes:      []string{gooidc.ScopeOpenID, "email", "profile"},
	}
	b.browser = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return b
}

// verifier verifies id_tokens of b's issuer on b's clock.
func (b *testBundle) verifier() *gooidc.IDTokenVerifier {
	return b.provider.Verifier(&gooidc.Config{ClientID: clientID, Now: b.clock.Now})
}

// page is a fetched HTML answer.
type page struct {
	status int
	header http.Header
	body   string
	loc    string
}

func (b *testBundle) get(t *testing.T, u string) page {
	t.Helper()
	res, err := b.browser.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	return readPage(t, res)
}

func (b *testBundle) postForm(t *testing.T, u string, v url.Values) page {
	t.Helper()
	res, err := b.browser.PostForm(u, v)
	if err != nil {
		t.Fatal(err)
	}
	return readPage(t, res)
}

func readPage(t *testing.T, res *http.Response) page {
	t.Helper()
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return page{res.StatusCode, res.Header, string(body), res.Header.Get("Location")}
}

var (
	hiddenRE = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)
	actionRE = regexp.MustCompile(`<form method="post" action="([^"]+)">`)
)

// form returns the action and the hidden fields of the sign-in page, as a
// browser would submit them.
func (p page) form(t *testing.T) (string, url.Values) {
	t.Helper()
	m := actionRE.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no form in the page:\n%s", p.body)
	}
	v := url.Values{}
	for _, h := range hiddenRE.FindAllStringSubmatch(p.body, -1) {
		v.Set(html.UnescapeString(h[1]), html.UnescapeString(h[2]))
	}
	return html.UnescapeString(m[1]), v
}

// flow is one sign-in as far as the code.
type flow struct {
	state, nonce, verifier string
	code                   string
	loc                    *url.URL // where the browser was sent back
}

// mustSignIn opens conf's authorization URL, fills the form with email and
// name and returns the code the browser brings back.
func (b *testBundle) mustSignIn(t *testing.T, conf oauth2.Config, email, name string) flow {
	t.Helper()
	f := flow{state: oauth2.GenerateVerifier(), nonce: oauth2.GenerateVerifier(), verifier: oauth2.GenerateVerifier()}
	p := b.get(t, conf.AuthCodeURL(f.state, gooidc.Nonce(f.nonce), oauth2.S256ChallengeOption(f.verifier)))
	if p.status != http.StatusOK {
		t.Fatalf("GET authorize = %d:\n%s", p.status, p.body)
	}
	action, v := p.form(t)
	v.Set("email", email)
	v.Set("name", name)
	res := b.postForm(t, b.abs(action), v)
	if res.status != http.StatusSeeOther {
		t.Fatalf("POST authorize = %d, want 303:\n%s", res.status, res.body)
	}
	loc, err := url.Parse(res.loc)
	if err != nil {
		t.Fatal(err)
	}
	if got := loc.Query().Get("state"); got != f.state {
		t.Fatalf("state = %q, want %q", got, f.state)
	}
	f.code, f.loc = loc.Query().Get("code"), loc
	if f.code == "" {
		t.Fatalf("no code in %s", res.loc)
	}
	return f
}

// abs resolves a path of the issuer's server.
func (b *testBundle) abs(path string) string {
	if strings.HasPrefix(path, "http") {
		return path
	}
	return b.server.URL + path
}
