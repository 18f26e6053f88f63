package pagetest

import (
	"net/url"
	"strings"
	"testing"
)

// TestBrandCreatesAProgramOnThePage: a signed-in user with no workspace
// sees the invitation to create a program; a refused form shows the
// API's message next to its field and stores nothing; a good one creates
// the program (and its workspace) and lands on its overview; the list
// then shows it, and another brand's programs never.
func TestBrandCreatesAProgramOnThePage(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	other := s.brand(t)
	// A user of no workspace: a fresh sign-in through the API.
	tok := s.api(t, 200, "POST", "/api/v1/auth/session", "", map[string]any{"id_token": s.Issuer.Token(t, "sub-new", "new@brand.example")})["token"].(string)
	b := s.browser(t).withCookie("pt_session", tok)

	home := b.get("/app/")
	home.mustContain(t, "You have no program yet", "New program")
	if strings.Contains(home.Body, other.Domain) {
		t.Fatal("another brand's program is listed")
	}
	csrf := home.csrf(t)

	bad := b.post("/app/programs", url.Values{"csrf": {csrf}, "name": {"Acme"}, "domain": {"acme.example"},
		"commission_type": {"percent"}, "commission_rate": {"101"}, "currency": {"USD"}})
	if bad.Status != 400 {
		t.Fatalf("refused form: %d %s", bad.Status, bad.Body)
	}
	bad.mustContain(t, `id="commission_rate-err"`, `aria-invalid="true" aria-describedby="commission_rate-err"`, `value="101"`)
	if n := s.count(t, `SELECT count(*) FROM programs WHERE domain = 'acme.example'`); n != 0 {
		t.Fatalf("a refused form stored %d programs", n)
	}

	ok := b.post("/app/programs", url.Values{"csrf": {csrf}, "name": {"Acme"}, "domain": {"acme.example"},
		"commission_type": {"percent"}, "commission_rate": {"20"}, "currency": {"USD"}, "hold_days": {"0"}})
	if ok.Status != 303 || !strings.HasPrefix(ok.Location, "/app/programs/") {
		t.Fatalf("create: %d %q %s", ok.Status, ok.Location, ok.Body)
	}
	home = b.get("/app/")
	home.mustContain(t, "Program Acme created", ">Acme</a>", "acme.example", "owner")

	// Another brand does not see it.
	if p := s.browser(t).withCookie("pt_session", other.Owner).get("/app/"); strings.Contains(p.Body, "acme.example") {
		t.Fatal("another brand sees the new program")
	}
}
