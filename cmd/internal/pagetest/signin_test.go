package pagetest

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// providerSignIn follows /auth/login to the test issuer's page, signs in
// there as email, and returns the callback URL the provider sends the
// browser back to.
func providerSignIn(t *testing.T, b *browser, start, email string) string {
	t.Helper()
	p := b.get(start)
	if p.Status != 302 || !strings.HasPrefix(p.Location, b.s.Issuer.URL+"/authorize?") {
		t.Fatalf("GET %s: %d %q", start, p.Status, p.Location)
	}
	auth, err := url.Parse(p.Location)
	if err != nil {
		t.Fatal(err)
	}
	if q := auth.Query(); q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("nonce") == "" ||
		q.Get("redirect_uri") != b.s.URL+"/auth/callback" {
		t.Fatalf("authorization request without PKCE, nonce or our redirect: %s", p.Location)
	}
	page := get(t, p.Location)
	form := url.Values{"email": {email}}
	for _, m := range regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`).FindAllStringSubmatch(page, -1) {
		form.Set(m[1], htmlUnescape(m[2]))
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.PostForm(b.s.Issuer.URL+"/authorize", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back := resp.Header.Get("Location")
	if resp.StatusCode != 303 || !strings.HasPrefix(back, b.s.URL+"/auth/callback?") {
		t.Fatalf("provider's answer: %d %q", resp.StatusCode, back)
	}
	return strings.TrimPrefix(back, b.s.URL)
}

func get(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// cleared reports whether a Set-Cookie removes the cookie (empty, expired).
func cleared(c *http.Cookie) bool {
	return c != nil && c.Value == "" && (c.MaxAge < 0 || (!c.Expires.IsZero() && c.Expires.Before(time.Now())))
}

func htmlUnescape(s string) string {
	return strings.NewReplacer("&amp;", "&", "&#43;", "+", "&#34;", `"`, "&#39;", "'", "&lt;", "<", "&gt;", ">").Replace(s)
}

func cookieOf(p page, name string) *http.Cookie {
	for _, c := range (&http.Response{Header: p.Header}).Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// TestBrowserSignIn: a page asked for without a session goes through the
// provider (authorization code with PKCE and a nonce) and back to that
// page, with both sessions in HttpOnly, SameSite=Lax cookies; the code
// works once; a callback this browser did not start, or the provider's
// refusal, opens nothing.
func TestBrowserSignIn(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	b := s.browser(t)

	if p := b.get("/app/"); p.Status != 303 || p.Location != "/login?next=%2Fapp%2F" {
		t.Fatalf("GET /app/: %d %q", p.Status, p.Location)
	}
	login := b.get("/login?next=%2Fapp%2F")
	login.mustContain(t, `href="/auth/login?next=%2Fapp%2F"`)
	back := providerSignIn(t, b, "/auth/login?next=%2Fapp%2F", "dana@brand.example")

	// A callback whose state is not the one this browser sent opens nothing.
	forged := regexp.MustCompile(`state=[^&]+`).ReplaceAllString(back, "state=forged")
	if p := b.get(forged); p.Status != 400 || cookieOf(p, "pt_session") != nil {
		t.Fatalf("forged state: %d %v", p.Status, cookieOf(p, "pt_session"))
	}
	// The forged callback used up the login cookie: sign in again.
	back = providerSignIn(t, b, "/auth/login?next=%2Fapp%2F", "dana@brand.example")
	p := b.get(back)
	if p.Status != 303 || p.Location != "/app/" {
		t.Fatalf("callback: %d %q %s", p.Status, p.Location, p.Body)
	}
	for _, name := range []string{"pt_session", "pt_partner_session"} {
		c := cookieOf(p, name)
		if c == nil || c.Value == "" || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Secure {
			t.Fatalf("cookie %s: %+v", name, c)
		}
	}
	if c := cookieOf(p, "pt_login"); !cleared(c) {
		t.Fatalf("the login cookie is not cleared: %+v", c)
	}
	b.get("/app/").mustContain(t, "You have no program yet")
	b.get("/partner/").mustContain(t, "You are not in any program yet")

	// The code works once: a replay (with a fresh login cookie) is refused.
	other := s.browser(t)
	other.get("/auth/login")
	replay := regexp.MustCompile(`state=[^&]+`).ReplaceAllString(back, "state="+loginState(t, other))
	if p := other.get(replay); p.Status != 401 || cookieOf(p, "pt_session") != nil {
		t.Fatalf("replayed code: %d %s", p.Status, p.Body)
	}
	// The provider's refusal is shown on the sign-in page.
	other.get("/auth/login")
	if p := other.get("/auth/callback?error=access_denied&state=" + loginState(t, other)); p.Status != 401 ||
		!strings.Contains(p.Body, "refused the sign-in (access_denied)") {
		t.Fatalf("provider refusal: %d %s", p.Status, p.Body)
	}
}

// loginState reads the state of the sign-in b started from its cookie.
func loginState(t *testing.T, b *browser) string {
	t.Helper()
	u, _ := url.Parse(b.s.URL + "/auth/")
	for _, c := range b.http.Jar.Cookies(u) {
		if c.Name == "pt_login" {
			return strings.SplitN(c.Value, ".", 2)[0]
		}
	}
	t.Fatal("no login cookie")
	return ""
}

// TestSignOut needs the form token and a same-site request; then both
// sessions end at once and the API refuses their tokens.
func TestSignOut(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	w := s.brand(t)
	ptok := s.partnerToken(t, w.OwnerEmail)
	b := s.browser(t).withCookie("pt_session", w.Owner).withCookie("pt_partner_session", ptok)
	home := b.get("/app/")
	csrf := home.csrf(t)

	if p := b.post("/logout", url.Values{}); p.Status != 403 {
		t.Fatalf("sign-out without the form token: %d", p.Status)
	}
	req, _ := http.NewRequest("POST", s.URL+"/logout", strings.NewReader(url.Values{"csrf": {csrf}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if p := b.do(req); p.Status != 403 {
		t.Fatalf("cross-site sign-out: %d", p.Status)
	}
	s.api(t, 200, "GET", "/api/v1/programs", w.Owner, nil) // still signed in

	p := b.post("/logout", url.Values{"csrf": {csrf}})
	if p.Status != 303 || p.Location != "/login" {
		t.Fatalf("sign-out: %d %q", p.Status, p.Location)
	}
	for _, name := range []string{"pt_session", "pt_partner_session"} {
		if c := cookieOf(p, name); !cleared(c) {
			t.Fatalf("cookie %s not cleared: %+v", name, c)
		}
	}
	s.api(t, 401, "GET", "/api/v1/programs", w.Owner, nil)
	s.api(t, 401, "GET", "/api/v1/partner/programs", ptok, nil)
	if p := b.withCookie("pt_session", w.Owner).get("/app/"); p.Status != 303 {
		t.Fatalf("a revoked session's page: %d", p.Status)
	}
}
