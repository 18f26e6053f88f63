package devissuer_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/partnertrack/partnertrack/ingest/oidc/devissuer"
)

// authQuery is a good authorization request; tests change or delete
// entries.
func authQuery(change func(url.Values)) url.Values {
	v := url.Values{
		"response_type":         {"code"},
		"client_id":             {clientID},
		"redirect_uri":          {redirectURI},
		"scope":                 {"openid email profile"},
		"state":                 {"st-1"},
		"nonce":                 {"n-1"},
		"code_challenge":        {oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier())},
		"code_challenge_method": {"S256"},
	}
	if change != nil {
		change(v)
	}
	return v
}

// TestSignInPage: the page is an accessible form that says it is the
// development provider, under a strict CSP that runs no script.
func TestSignInPage(t *testing.T) {
	b := setup(t, "/dev/oidc")
	p := b.get(t, b.issuerURL+"/authorize?"+authQuery(nil).Encode())
	if p.status != http.StatusOK || !strings.HasPrefix(p.header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET authorize = %d %s", p.status, p.header.Get("Content-Type"))
	}
	for _, want := range []string{
		`<html lang="en">`, `<title>Development sign-in</title>`, `<main>`, `<h1>Development sign-in</h1>`,
		`This is the development sign-in provider.`,
		`<label for="email">Email</label>`, `<input type="email" id="email" name="email" value="" required autocomplete="email"`,
		`<label for="name">Name`, `<input type="text" id="name" name="name"`,
		`<button type="submit">Sign in</button>`,
		`<form method="post" action="/dev/oidc/authorize">`,
		`<input type="hidden" name="state" value="st-1">`,
		`<code>http://127.0.0.1:8080/auth/callback</code>`,
	} {
		if !strings.Contains(p.body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(p.body, "<script") {
		t.Error("page has a script")
	}
	csp := p.header.Get("Content-Security-Policy")
	m := regexp.MustCompile(`style-src 'nonce-([A-Za-z0-9_-]+)'`).FindStringSubmatch(csp)
	if m == nil || !strings.Contains(p.body, `<style nonce="`+m[1]+`">`) || !strings.Contains(csp, "default-src 'none'") ||
		!strings.Contains(csp, "form-action 'self' http://127.0.0.1:8080;") || strings.Contains(csp, "script-src") {
		t.Errorf("CSP = %q", csp)
	}
	if again := b.get(t, b.issuerURL+"/authorize?"+authQuery(nil).Encode()); again.header.Get("Content-Security-Policy") == csp {
		t.Error("the CSP nonce is the same on two pages")
	}
	if p.header.Get("Referrer-Policy") != "no-referrer" || p.header.Get("Cache-Control") != "no-store" {
		t.Errorf("headers = %v", p.header)
	}
}

// TestAuthorizeRefused: a request the provider does not serve gets the
// 400 page with the reason, at GET and at POST (the hidden fields are the
// browser's to change), and sends nobody back.
func TestAuthorizeRefused(t *testing.T) {
	b := setup(t, "")
	for _, tt := range []struct {
		desc   string
		change func(url.Values)
		reason string
	}{
		{"ErrClientID", func(v url.Values) { v.Set("client_id", "other") }, `client_id &#34;other&#34; is not a client of this provider.`},
		{"ErrNoClientID", func(v url.Values) { v.Del("client_id") }, `client_id &#34;&#34; is not a client of this provider.`},
		{"ErrRedirectRelative", func(v url.Values) { v.Set("redirect_uri", "/auth/callback") }, "redirect_uri must be an absolute http or https URL"},
		{"ErrRedirectScheme", func(v url.Values) { v.Set("redirect_uri", "javascript://x/%0aalert(1)") }, "redirect_uri must be an absolute http or https URL"},
		{"ErrRedirectFragment", func(v url.Values) { v.Set("redirect_uri", redirectURI+"#x") }, "redirect_uri must be an absolute http or https URL"},
		{"ErrNoRedirect", func(v url.Values) { v.Del("redirect_uri") }, "redirect_uri must be an absolute http or https URL"},
		{"ErrResponseTypeToken", func(v url.Values) { v.Set("response_type", "token") }, "response_type must be code"},
		{"ErrImplicitWithoutNonce", func(v url.Values) { v.Set("response_type", "id_token"); v.Del("nonce") }, "nonce is required with response_type id_token."},
		{"ErrImplicitInQuery", func(v url.Values) { v.Set("response_type", "id_token"); v.Set("response_mode", "query") }, "response_mode must be fragment"},
		{"ErrNoOpenIDScope", func(v url.Values) { v.Set("scope", "email") }, "scope must include openid."},
		{"ErrNoChallenge", func(v url.Values) { v.Del("code_challenge"); v.Del("code_challenge_method") }, "code_challenge is required"},
		{"ErrChallengePlain", func(v url.Values) { v.Set("code_challenge_method", "plain") }, "code_challenge_method must be S256."},
		{"ErrChallengeNoMethod", func(v url.Values) { v.Del("code_challenge_method") }, "code_challenge_method must be S256."},
		{"ErrChallengeShape", func(v url.Values) { v.Set("code_challenge", "short") }, "code_challenge must be the base64url SHA-256"},
		{"ErrRepeated", func(v url.Values) { v.Add("state", "again") }, "The parameter state is repeated."},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			q := authQuery(tt.change)
			get := b.get(t, b.issuerURL+"/authorize?"+q.Encode())
			q.Set("email", "a@example.com")
			post := b.postForm(t, b.issuerURL+"/authorize", q)
			for _, p := range []page{get, post} {
				if p.status != http.StatusBadRequest || p.loc != "" || !strings.Contains(p.body, "<h1>Sign-in request refused</h1>") ||
					!strings.Contains(p.body, tt.reason) || strings.Contains(p.body, "<form") {
					t.Fatalf("answer = %d %q, want 400 with %q:\n%s", p.status, p.loc, tt.reason, p.body)
				}
				if csp := p.header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'none'") {
					t.Fatalf("CSP = %q", csp)
				}
			}
		})
	}
}

// TestAuthorizePost: a bad email shows the form again with the message
// tied to the field and makes no code; a good one goes back to the
// redirect_uri with its own query kept.
func TestAuthorizePost(t *testing.T) {
	b := setup(t, "")

	t.Run("ErrBadEmail", func(t *testing.T) {
		for _, email := range []string{"", "not-an-email", "a@", "Name <a@example.com>"} {
			v := authQuery(nil)
			v.Set("email", email)
			v.Set("name", "Kept Name")
			p := b.postForm(t, b.issuerURL+"/authorize", v)
			if p.status != http.StatusBadRequest || p.loc != "" {
				t.Fatalf("email %q: %d %q", email, p.status, p.loc)
			}
			for _, want := range []string{
				`aria-invalid="true" aria-describedby="email-error"`,
				`<p class="error" id="email-error">Enter an email address, like name@example.com.</p>`,
				`value="Kept Name"`,
				`<input type="hidden" name="state" value="st-1">`,
				`<h1>Development sign-in</h1>`,
			} {
				if !strings.Contains(p.body, want) {
					t.Errorf("email %q: page lacks %s", email, want)
				}
			}
		}
	})
	t.Run("ErrLongName", func(t *testing.T) {
		v := authQuery(nil)
		v.Set("email", "a@example.com")
		v.Set("name", strings.Repeat("é", 201))
		p := b.postForm(t, b.issuerURL+"/authorize", v)
		if p.status != http.StatusBadRequest || !strings.Contains(p.body, `aria-describedby="name-error"`) ||
			strings.Contains(p.body, `email-error`) {
			t.Fatalf("%d:\n%s", p.status, p.body)
		}
	})
	t.Run("OKKeepsRedirectQuery", func(t *testing.T) {
		v := authQuery(func(v url.Values) { v.Set("redirect_uri", "https://app.example/cb?tenant=a%20b&x=1") })
		v.Set("email", "a@example.com")
		p := b.postForm(t, b.issuerURL+"/authorize", v)
		if p.status != http.StatusSeeOther || !strings.HasPrefix(p.loc, "https://app.example/cb?tenant=a%20b&x=1&code=") ||
			!strings.HasSuffix(p.loc, "&state=st-1") {
			t.Fatalf("%d %q", p.status, p.loc)
		}
	})
	t.Run("OKWithoutState", func(t *testing.T) {
		v := authQuery(func(v url.Values) { v.Del("state") })
		v.Set("email", "a@example.com")
		p := b.postForm(t, b.issuerURL+"/authorize", v)
		u, err := url.Parse(p.loc)
		if p.status != http.StatusSeeOther || err != nil || u.Query().Get("code") == "" || u.Query().Has("state") {
			t.Fatalf("%d %q", p.status, p.loc)
		}
	})
}

// TestRoutes: the issuer answers only below its issuer URL's path, and
// each endpoint only to its methods.
func TestRoutes(t *testing.T) {
	b := setup(t, "/dev/oidc")
	for _, tt := range []struct {
		desc, method, path string
		status             int
	}{
		{"OKDiscovery", "GET", "/dev/oidc/.well-known/openid-configuration", 200},
		{"OKKeys", "GET", "/dev/oidc/keys", 200},
		{"OKOtherRoute", "GET", "/other", 200},
		{"ErrKeysAtRoot", "GET", "/keys", 404},
		{"ErrSiblingPrefix", "GET", "/dev/oidcx/keys", 404},
		{"ErrUnknown", "GET", "/dev/oidc/userinfo", 404},
		{"ErrTokenGet", "GET", "/dev/oidc/token", 405},
		{"ErrKeysPost", "POST", "/dev/oidc/keys", 405},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, b.server.URL+tt.path, nil)
			res, err := b.browser.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != tt.status {
				t.Fatalf("%s %s = %d, want %d", tt.method, tt.path, res.StatusCode, tt.status)
			}
		})
	}
}

// TestImplicitFlow: the CLI login page's flow (response_type id_token)
// signs in on the same page and comes back with the id_token and the
// state in the fragment; the token carries the nonce and verifies.
func TestImplicitFlow(t *testing.T) {
	b := setup(t, "/dev/oidc")
	q := authQuery(func(v url.Values) {
		v.Set("response_type", "id_token")
		v.Set("response_mode", "fragment")
		v.Del("code_challenge")
		v.Del("code_challenge_method")
	})
	if p := b.get(t, b.issuerURL+"/authorize?"+q.Encode()); p.status != 200 || !strings.Contains(p.body, "<form") {
		t.Fatalf("sign-in page: %d", p.status)
	}
	q.Set("email", "cli@example.com")
	p := b.postForm(t, b.issuerURL+"/authorize", q)
	back, err := url.Parse(p.loc)
	if p.status != http.StatusSeeOther || err != nil || !strings.HasPrefix(p.loc, redirectURI+"#") {
		t.Fatalf("answer: %d %q", p.status, p.loc)
	}
	frag, _ := url.ParseQuery(back.Fragment)
	if frag.Get("state") != "st-1" || back.RawQuery != "" {
		t.Fatalf("fragment: %q, query %q", back.Fragment, back.RawQuery)
	}
	tok, err := b.verifier().Verify(context.Background(), frag.Get("id_token"))
	if err != nil {
		t.Fatal(err)
	}
	if tok.Nonce != "n-1" || tok.Subject != devissuer.Subject("cli@example.com") {
		t.Fatalf("token: nonce %q sub %q", tok.Nonce, tok.Subject)
	}
}
