package pagetest

import (
	"fmt"
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

// TestBrandWithTwoWorkspacesChoosesOne: an owner of two workspaces gets a
// workspace select, and the program goes in the one chosen.
func TestBrandWithTwoWorkspacesChoosesOne(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	a, b := s.brand(t), s.brand(t)
	// A's owner is made an admin of B's workspace too.
	var bWorkspace, aUser int64
	if err := s.DB.QueryRow(`SELECT workspace_id FROM programs WHERE id = $1`, b.ProgramID).Scan(&bWorkspace); err != nil {
		t.Fatal(err)
	}
	if err := s.DB.QueryRow(`SELECT id FROM users WHERE email = $1`, a.OwnerEmail).Scan(&aUser); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB.Exec(`INSERT INTO memberships (workspace_id, user_id, role) VALUES ($1, $2, 'admin')`, bWorkspace, aUser); err != nil {
		t.Fatal(err)
	}
	br := s.browser(t).withCookie("pt_session", a.Owner)
	home := br.get("/app/")
	home.mustContain(t, `<select id="workspace_id" name="workspace_id">`, fmt.Sprintf(`<option value="%d"`, bWorkspace))
	p := br.post("/app/programs", url.Values{"csrf": {home.csrf(t)}, "workspace_id": {fmt.Sprint(bWorkspace)}, "name": {"Second"},
		"domain": {"second.example"}, "commission_type": {"percent"}, "commission_rate": {"10"}, "currency": {"USD"}})
	if p.Status != 303 {
		t.Fatalf("create: %d %s", p.Status, p.Body)
	}
	if n := s.count(t, `SELECT count(*) FROM programs WHERE domain = 'second.example' AND workspace_id = $1`, bWorkspace); n != 1 {
		t.Fatalf("programs in the chosen workspace: %d", n)
	}
}

// TestOverviewWithoutReadiness: past the readiness route's limit (30 a
// minute per token) the overview still shows its numbers and says why
// the checklist is missing.
func TestOverviewWithoutReadiness(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	w := s.brand(t)
	for i := 0; i < 30; i++ {
		s.api(t, 200, "GET", fmt.Sprintf("/api/v1/programs/%d/readiness", w.ProgramID), w.Owner, nil)
	}
	p := s.browser(t).withCookie("pt_session", w.Owner).get(fmt.Sprintf("/app/programs/%d", w.ProgramID))
	if p.Status != 200 {
		t.Fatalf("overview: %d %s", p.Status, p.Body)
	}
	p.mustContain(t, "The readiness checklist is not shown", "<svg class=\"chart\"")
}
