package pagetest

import (
	"fmt"
	"html"
	"net/url"
	"strings"
	"testing"

	"github.com/partnertrack/partnertrack/ledger"
)

// TestBrandLinksPage: the links page lists the program's links with their
// URL to copy; its form creates a link for a partner (a code already used
// is the API's refusal next to the code, and nothing is created); each
// link is disabled and enabled again from its row.
func TestBrandLinksPage(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	w := s.brand(t)
	ana := s.enroll(t, w, "Ana Creator", "ana@creator.example")
	first := s.brandLink(t, w, ana, "ana-first")
	b := s.browser(t).withCookie("pt_session", w.Owner)
	base := fmt.Sprintf("/app/programs/%d", w.ProgramID)
	linksAPI := fmt.Sprintf("/api/v1/programs/%d/links", w.ProgramID)

	p := b.get(base + "/links")
	if p.Status != 200 {
		t.Fatalf("links: %d %s", p.Status, p.Body)
	}
	p.mustContain(t, "<h1>Links</h1>", "<code>ana-first</code>", "Ana Creator",
		fmt.Sprintf(`<option value="%d">Ana Creator (ana@creator.example)</option>`, ana),
		fmt.Sprintf(`<label for="url-%d" class="visually-hidden">URL of link ana-first</label>`, first),
		fmt.Sprintf(`data-copy="#url-%d" hidden>Copy</button>`, first),
		"Disable link ana-first", `<span data-count="0">0</span>`)
	url0 := regexpFind(t, p.Body, fmt.Sprintf(`id="url-%d" value="([^"]+)"`, first))
	if !strings.Contains(url0, "ana-first") {
		t.Fatalf("link URL %q", url0)
	}

	// The code is taken: refused next to the code, nothing created.
	bad := b.submit(p, base+"/links", url.Values{"partner_id": {fmt.Sprint(ana)}, "code": {"ana-first"}})
	if bad.Status != 409 {
		t.Fatalf("duplicate code: %d %s", bad.Status, bad.Body)
	}
	bad.mustContain(t, `<p class="field-error" id="link-code-err">`+ledger.MsgLinkCodeTaken+`</p>`,
		`id="link-code" name="code" value="ana-first" maxlength="64" autocomplete="off" aria-invalid="true" aria-describedby="link-code-err"`,
		fmt.Sprintf(`<option value="%d" selected>`, ana))
	bad = b.submit(p, base+"/links", url.Values{"partner_id": {fmt.Sprint(ana)}, "code": {"no spaces"}})
	if bad.Status != 400 {
		t.Fatalf("bad code: %d %s", bad.Status, bad.Body)
	}
	bad.mustContain(t, `<p class="field-error" id="link-code-err">`+html.EscapeString(ledger.MsgLinkCode)+`</p>`)
	if n := len(s.brandList(t, w, linksAPI)); n != 1 {
		t.Fatalf("%d links after refused forms", n)
	}

	// A new code is created and listed.
	r := b.submit(p, base+"/links", url.Values{"partner_id": {fmt.Sprint(ana)}, "code": {"ana-winter"}})
	if r.Status != 303 || r.Location != base+"/links" {
		t.Fatalf("create: %d %q %s", r.Status, r.Location, r.Body)
	}
	p = b.get(base + "/links")
	p.mustContain(t, "Link ana-winter created.", "<code>ana-winter</code>", "Disable link ana-winter")

	// Disable the first link, then enable it again.
	r = b.submit(p, fmt.Sprintf("%s/links/%d/status", base, first), url.Values{"status": {"disabled"}})
	if r.Status != 303 {
		t.Fatalf("disable: %d %s", r.Status, r.Body)
	}
	p = b.get(base + "/links")
	p.mustContain(t, "Link ana-first disabled.", `<span class="status bad">disabled</span>`, "Enable link ana-first")
	statusOf := func(code string) any {
		for _, l := range s.brandList(t, w, linksAPI) {
			if l["code"] == code {
				return l["status"]
			}
		}
		return nil
	}
	if st := statusOf("ana-first"); st != "disabled" {
		t.Fatalf("ana-first is %v", st)
	}
	if r := b.submit(p, fmt.Sprintf("%s/links/%d/status", base, first), url.Values{"status": {"active"}}); r.Status != 303 {
		t.Fatalf("enable: %d %s", r.Status, r.Body)
	}
	if st := statusOf("ana-first"); st != "active" {
		t.Fatalf("ana-first is %v after enabling", st)
	}
	b.get(base+"/links").mustContain(t, "Link ana-first enabled.", "Disable link ana-first")
}

// TestBrandLinksWithoutPartners: a program with no partner offers no link
// form but says what to do first.
func TestBrandLinksWithoutPartners(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	w := s.brand(t)
	p := s.browser(t).withCookie("pt_session", w.Owner).get(fmt.Sprintf("/app/programs/%d/links", w.ProgramID))
	if p.Status != 200 {
		t.Fatalf("links: %d %s", p.Status, p.Body)
	}
	p.mustContain(t, "invite partners</a> first", "No link yet.")
	if strings.Contains(p.Body, `name="code"`) {
		t.Fatal("a link form without partners")
	}
}
