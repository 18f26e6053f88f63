package pagetest

import (
	"fmt"
	"html"
	"net/url"
	"strings"
	"testing"
)

// TestBrandOverviewShowsThePerformance: the overview shows what the
// performance API holds: the totals with their trends, revenue of each
// currency apart, the two charts, and the top partners and links.
func TestBrandOverviewShowsThePerformance(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	w := s.brand(t)
	ana := s.enroll(t, w, "Ana Creator", "ana@creator.example")
	link := s.brandLink(t, w, ana, "ana-summer")
	// Today's numbers of the program, as the rollup triggers keep them:
	// 1234 clicks and 7 leads on Ana's link, 3 sales of 456.78 USD and one
	// of 10.00 EUR (a currency the program does not count in).
	if _, err := s.DB.Exec(`INSERT INTO rollup_traffic_daily (program_id, day, partner_id, link_id, clicks, visitors, leads)
		VALUES ($1, (now() AT TIME ZONE 'UTC')::date, $2, $3, 1234, 900, 7)`, w.ProgramID, ana, link); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB.Exec(`INSERT INTO rollup_sales_daily (program_id, day, partner_id, link_id, currency, conversions, revenue_minor, commission_minor)
		VALUES ($1, (now() AT TIME ZONE 'UTC')::date, $2, $3, 'USD', 3, 45678, 9136),
		       ($1, (now() AT TIME ZONE 'UTC')::date, $2, $3, 'EUR', 1, 1000, 200)`, w.ProgramID, ana, link); err != nil {
		t.Fatal(err)
	}
	// The program-wide rows of the day (migration 00023), as the triggers
	// keep them beside the per-link rows.
	if _, err := s.DB.Exec(`INSERT INTO rollup_visitors_daily (program_id, day, clicks, visitors, leads)
		VALUES ($1, (now() AT TIME ZONE 'UTC')::date, 1234, 900, 7)`, w.ProgramID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB.Exec(`INSERT INTO rollup_program_sales_daily (program_id, day, currency, conversions, revenue_minor, commission_minor)
		VALUES ($1, (now() AT TIME ZONE 'UTC')::date, 'USD', 3, 45678, 9136),
		       ($1, (now() AT TIME ZONE 'UTC')::date, 'EUR', 1, 1000, 200)`, w.ProgramID); err != nil {
		t.Fatal(err)
	}
	b := s.browser(t).withCookie("pt_session", w.Owner)

	p := b.get(fmt.Sprintf("/app/programs/%d", w.ProgramID))
	if p.Status != 200 {
		t.Fatalf("overview: %d %s", p.Status, p.Body)
	}
	p.mustContain(t,
		`<strong aria-current="page">Last 30 days</strong>`, `href="?period=7d"`, `href="?period=90d"`,
		`<span data-count="1234">1,234</span>`, `<span data-count="7">7</span>`, `<span data-count="4">4</span>`,
		// Nothing in the previous 30 days: every trend is new.
		"new vs previous 30 days",
		"Revenue (USD)", `data-amount="456.78" data-currency="USD">456.78 USD`,
		"Revenue (EUR)", `data-amount="10" data-currency="EUR">10.00 EUR`,
		"Commission (USD)", "91.36 USD", "Commission (EUR)", "2.00 EUR",
		"Average order (USD)", "152.26 USD",
		`aria-labelledby="activity-t"`, "Clicks, leads and conversions per day",
		`aria-labelledby="revenue-t"`, "Revenue per day in USD",
		"Top partners", "Ana Creator", "ana@creator.example",
		"Top links", "<code>ana-summer</code>",
	)
	// Sums in different currencies are never added up.
	if strings.Contains(p.Body, "466.78") {
		t.Fatal("USD and EUR revenue summed")
	}
	// The trailing slash is the same page (the tabs link there).
	if p := b.get(fmt.Sprintf("/app/programs/%d/", w.ProgramID)); p.Status != 200 || !strings.Contains(p.Body, "Ana Creator") {
		t.Fatalf("overview with a slash: %d", p.Status)
	}

	// Another window: the link marks it, the numbers are the API's.
	p = b.get(fmt.Sprintf("/app/programs/%d?period=7d", w.ProgramID))
	p.mustContain(t, `<strong aria-current="page">Last 7 days</strong>`, "new vs previous 7 days", `<span data-count="1234">1,234</span>`)
}

// TestBrandOverviewOfAnEmptyProgram: a program without numbers shows
// zeros, the charts and what to do next, not an error.
func TestBrandOverviewOfAnEmptyProgram(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	w := s.brand(t)
	p := s.browser(t).withCookie("pt_session", w.Owner).get(fmt.Sprintf("/app/programs/%d", w.ProgramID))
	if p.Status != 200 {
		t.Fatalf("overview: %d %s", p.Status, p.Body)
	}
	p.mustContain(t, `<span data-count="0">0</span>`, "0.00 USD", `<svg class="chart"`,
		"No partner has numbers in this period yet", "No link has numbers in this period yet")

	// The readiness checklist says what the readiness API says, gate by
	// gate, with the next step of each gate that does not pass.
	ready := s.apiBody(t, 200, "GET", fmt.Sprintf("/api/v1/programs/%d/readiness", w.ProgramID), w.Owner, nil)
	gates := ready["gates"].(map[string]any)
	labels := map[string]string{"profile": "Program profile", "economics": "Commission terms",
		"payout": "Sales reach partnertrack", "tracking": "Tracking", "live": "Live test"}
	words := map[string]string{"pass": "ok", "fail": "not ok", "unknown": "not checked yet"}
	for id, label := range labels {
		status := gates[id].(map[string]any)["status"].(string)
		p.mustContain(t, "<strong>"+label+"</strong>: "+words[status])
	}
	if gates["payout"].(map[string]any)["status"] != "fail" || gates["tracking"].(map[string]any)["status"] != "fail" {
		t.Fatalf("a new program's readiness: %v", gates)
	}
	p.mustContain(t, "Configuring: sales or tracking do not reach partnertrack yet.",
		"Next: Connect Stripe, or send your sales from your server to the sale endpoint.",
		"Sales arrive at the sale endpoint: "+gates["payout"].(map[string]any)["endpoint"].(string),
		html.EscapeString(gates["tracking"].(map[string]any)["detail"].(string)),
		"Next: Install the tracker snippet on your site, or send events with the API key.",
		fmt.Sprintf(`<a href="/app/programs/%d/settings">Open settings</a>`, w.ProgramID))
}

// TestBrandPagesOfAnotherBrandAreNotFound: another brand's owner gets a
// 404 page for every page and form of the program, learns nothing of it,
// and changes nothing.
func TestBrandPagesOfAnotherBrandAreNotFound(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	w, other := s.brand(t), s.brand(t)
	ana := s.enroll(t, w, "Ana Creator", "ana@creator.example")
	link := s.brandLink(t, w, ana, "ana-link")
	b := s.browser(t).withCookie("pt_session", other.Owner)
	mine := b.get(fmt.Sprintf("/app/programs/%d/links", other.ProgramID)) // a page of theirs, for its form token
	if mine.Status != 200 {
		t.Fatalf("own links page: %d %s", mine.Status, mine.Body)
	}
	base := fmt.Sprintf("/app/programs/%d", w.ProgramID)
	for _, path := range []string{base, base + "/", base + "/partners", base + "/links", base + "/links?page=2"} {
		p := b.get(path)
		if p.Status != 404 {
			t.Fatalf("GET %s: %d, want 404", path, p.Status)
		}
		if strings.Contains(p.Body, "Ana Creator") || strings.Contains(p.Body, "ana-link") || strings.Contains(p.Body, "Partners</h1>") {
			t.Fatalf("GET %s shows the other brand's data:\n%s", path, p.Body)
		}
	}
	forms := map[string]url.Values{
		fmt.Sprintf("%s/partners/%d/status", base, ana): {"status": {"suspended"}},
		fmt.Sprintf("%s/links/%d/status", base, link):   {"status": {"disabled"}},
		base + "/links":   {"partner_id": {fmt.Sprint(ana)}, "code": {"stolen"}},
		base + "/invites": {"emails": {"mallory@evil.example"}},
		base + "/groups":  {"name": {"Evil"}},
	}
	for path, form := range forms {
		p := b.submit(mine, path, form)
		if p.Status != 403 && p.Status != 404 {
			t.Fatalf("POST %s: %d, want a refusal:\n%s", path, p.Status, p.Body)
		}
	}
	// Nothing changed: the partner and link are active, no link, invite
	// or group was added.
	own := s.browser(t).withCookie("pt_session", w.Owner)
	links := own.get(base + "/links")
	links.mustContain(t, "Disable link ana-link")
	if strings.Contains(links.Body, "stolen") {
		t.Fatal("another brand created a link")
	}
	partners := own.get(base + "/partners")
	partners.mustContain(t, "Suspend Ana Creator", "No open invite.")
	if strings.Contains(partners.Body, "Evil") {
		t.Fatal("another brand created a group")
	}
}
