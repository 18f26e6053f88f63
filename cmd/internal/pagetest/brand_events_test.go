package pagetest

import (
	"fmt"
	"html"
	"strings"
	"testing"
	"time"
)

// TestBrandEventsPage: the page lists the spec's event listing as the API
// pages it, with next and previous links that keep the filters; a bad
// date is the API's message next to its field; another brand sees none.
func TestBrandEventsPage(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	w := s.brand(t)
	ana := s.seller(t, w, "ana")
	start := time.Now().Add(-time.Hour)
	for i := 0; i < 12; i++ {
		s.click(t, w, ana, start.Add(time.Duration(i)*time.Minute))
	}
	s.sale(t, w, ana, "txn-e1", 12345)
	b := s.browser(t).withCookie("pt_session", w.Owner)
	path := fmt.Sprintf("/app/programs/%d/events", w.ProgramID)

	page := b.get(path)
	if page.Status != 200 {
		t.Fatalf("events: %d %s", page.Status, page.Body)
	}
	// 13 clicks and the conversion, 10 a page, newest first.
	page.mustContain(t, "<h1>Events</h1>", `aria-current="page">Events`, "Page 1 of 2",
		`<span class="status">conversion</span>`, `data-amount="123.45" data-currency="USD">123.45 USD`)
	if n := strings.Count(page.Body, "<tr>") - 1; n != 10 {
		t.Fatalf("%d rows on page 1, want 10", n)
	}
	next := html.UnescapeString(regexpFind(t, page.Body, `<a href="([^"]+)" rel="next">`))
	p2 := b.get(next)
	if p2.Status != 200 || !strings.Contains(p2.Body, "Page 2 of 2") || strings.Contains(p2.Body, `rel="next"`) {
		t.Fatalf("page 2 (%s): %d", next, p2.Status)
	}
	if n := strings.Count(p2.Body, "<tr>") - 1; n != 4 {
		t.Fatalf("%d rows on page 2, want 4", n)
	}
	prev := html.UnescapeString(regexpFind(t, p2.Body, `<a href="([^"]+)" rel="prev">`))
	if prev != path+"?page=1" {
		t.Fatalf("previous link %q", prev)
	}

	t.Run("OK filters kept in the page links", func(t *testing.T) {
		p := b.get(path + "?eventType=click&pageSize=5")
		p.mustContain(t, "Page 1 of 3", `<option value="click" selected>`)
		if strings.Contains(p.Body, `<span class="status">conversion</span>`) {
			t.Fatal("the click filter lists the conversion")
		}
		next := html.UnescapeString(regexpFind(t, p.Body, `<a href="([^"]+)" rel="next">`))
		if next != path+"?eventType=click&page=2&pageSize=5" {
			t.Fatalf("next link %q", next)
		}
	})
	t.Run("ErrBadDate", func(t *testing.T) {
		p := b.get(path + "?dateFrom=31%2F02%2F2026")
		if p.Status != 400 {
			t.Fatalf("bad date: %d", p.Status)
		}
		p.mustContain(t, `<p class="field-error" id="f-from-err">dateFrom must be an ISO 8601 date or date-time</p>`,
			`value="31/02/2026" placeholder="2026-03-01" autocomplete="off" aria-invalid="true" aria-describedby="f-from-err"`)
		if strings.Contains(p.Body, "<tbody>") {
			t.Fatal("a refused filter still lists events")
		}
		p = b.get(path + "?dateFrom=2026-03-02&dateTo=2026-03-01")
		p.mustContain(t, `<p class="field-error" id="f-from-err">dateFrom must not be later than dateTo</p>`)
	})
	t.Run("ErrOtherBrand", func(t *testing.T) {
		other := s.brand(t)
		s.browser(t).withCookie("pt_session", other.Owner).get(path).mustBeRefused(t, "txn-e1", "conversion")
	})
}
