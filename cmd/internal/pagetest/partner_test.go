package pagetest

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// TestPartnerPagesNeedASession: without a session every partner page
// redirects to the sign-in page, which brings the person back.
func TestPartnerPagesNeedASession(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	b := s.browser(t)
	for _, path := range []string{"/partner/", "/partner/programs/1", "/app/", "/app/programs/1"} {
		p := b.get(path)
		if p.Status != 303 || p.Location != "/login?next="+url.QueryEscape(path) {
			t.Fatalf("GET %s: %d %q", path, p.Status, p.Location)
		}
	}
	// A form without a session goes to sign-in, without a return path.
	if p := b.post("/partner/invites/1/accept", url.Values{}); p.Status != 303 || p.Location != "/login" {
		t.Fatalf("POST without session: %d %q", p.Status, p.Location)
	}
	// A revoked or unknown token is a session the API refuses: the cookie
	// is dropped and the page asks to sign in.
	p := b.withCookie("pt_partner_session", "pt_partner_unknown").get("/partner/")
	if p.Status != 303 || !strings.HasPrefix(p.Location, "/login") {
		t.Fatalf("unknown token: %d %q", p.Status, p.Location)
	}
}

// TestPartnerAcceptsAnInviteOnThePage: the brand invites by API; the
// partner sees the invite on its home page and accepts it with the form,
// which needs the page's form token.
func TestPartnerAcceptsAnInviteOnThePage(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	w := s.brand(t)
	email := "ana@creator.example"
	s.api(t, 200, "POST", fmt.Sprintf("/api/v1/programs/%d/invites", w.ProgramID), w.Owner, map[string]any{"emails": []string{email}})
	b := s.browser(t).withCookie("pt_partner_session", s.partnerToken(t, email))

	home := b.get("/partner/")
	if home.Status != 200 {
		t.Fatalf("home: %d %s", home.Status, home.Body)
	}
	home.mustContain(t, "Invitations", "Accept invite to Brand")
	csp := home.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self' 'nonce-") || strings.Contains(csp, "unsafe-inline") {
		t.Fatalf("CSP: %q", csp)
	}
	action := regexpFind(t, home.Body, `action="(/partner/invites/\d+/accept)"`)

	// Without the form token, or with another's, nothing changes.
	if p := b.post(action, url.Values{}); p.Status != 403 {
		t.Fatalf("no csrf: %d", p.Status)
	}
	if p := b.post(action, url.Values{"csrf": {"forged"}}); p.Status != 403 {
		t.Fatalf("forged csrf: %d", p.Status)
	}
	if p := b.get("/partner/"); !strings.Contains(p.Body, "Accept invite to") {
		t.Fatal("the invite went away without a valid form")
	}

	p := b.post(action, url.Values{"csrf": {home.csrf(t)}})
	if p.Status != 303 || p.Location != "/partner/" {
		t.Fatalf("accept: %d %q %s", p.Status, p.Location, p.Body)
	}
	home = b.get("/partner/")
	home.mustContain(t, "Invite accepted", fmt.Sprintf(`href="/partner/programs/%d"`, w.ProgramID))
	if strings.Contains(home.Body, "Accept invite to") {
		t.Fatal("the invite is still open")
	}

	prog := b.get(fmt.Sprintf("/partner/programs/%d", w.ProgramID))
	prog.mustContain(t, "Your links", "<svg class=\"chart\"", "20% of the first sale")
}
