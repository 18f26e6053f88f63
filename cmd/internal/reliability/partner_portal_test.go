package reliability

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ingest/oidc/testissuer"
	"github.com/partnertrack/partnertrack/notify/mail/mailtest"
)

// TestPartnerUsesThePortal is issue 26's "done when": a partner invited
// by email signs in, accepts, copies a link, sees the click, lead and sale
// it brings with what it earned, and after the hold sees the commission
// approved and a payout the brand created and marked paid, with the email
// received; a brand's own user sees the same numbers in the embedded
// referral widget. Over a running edge and worker, a real Postgres and
// Redis, the in-process OIDC issuer and an in-process SMTP server.
func TestPartnerUsesThePortal(t *testing.T) {
	t.Parallel()
	sc := report(t, "partners/portal")
	st := sharedStack(t)
	smtp := mailtest.Start(t, mailtest.Options{})
	iss := testissuer.New(t)
	env := map[string]string{"SMTP_URL": smtp.URL(), "SMTP_FROM": "Acme Partners <partners@acme.example>",
		"OIDC_ISSUER_URL": iss.URL, "OIDC_CLIENT_ID": testissuer.ClientID}
	e := st.startEdge(t, env)
	st.startWorker(t, nil, env) // every queue and the scheduler (commission approval)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// The brand: a workspace, its owner, a program paying 20 % with no
	// hold, so the scheduler approves commissions at its next run.
	n := itoa(worldCount.Add(1))
	domain := "acme" + n + ".example"
	ws := e.must(t, 201, req{method: "POST", path: "/api/operator/v1/workspaces", token: opToken,
		body: map[string]any{"name": "Acme " + n, "owner_email": "owner" + n + "@acme.example"}}).data()
	programID := num(e.must(t, 201, req{method: "POST", path: "/api/operator/v1/programs", token: opToken,
		body: map[string]any{"workspace_id": num(ws["id"]), "name": "Acme Partners", "domain": domain,
			"commission_type": "percent", "commission_rate": 20, "hold_days": 0}}).data()["id"])
	owner := e.must(t, 201, req{method: "POST", path: "/api/operator/v1/users/" + itoa(num(ws["owner_user_id"])) + "/sessions", token: opToken}).data()["token"].(string)
	secret("dashboard token", owner)
	pid := itoa(programID)
	base := "/api/v1/programs/" + pid
	brand := func(status int, method, path string, body any) reply {
		t.Helper()
		return e.must(t, status, req{method: method, path: base + path, token: owner, body: body})
	}
	brand(200, "PATCH", "/settings", map[string]any{"minimum_payout": 10})
	key := brand(200, "POST", "/api-key", nil).data()["api_key"].(string)
	secret("live key", key)

	// 1. The invite arrives by email; the partner signs in and accepts it
	// with the token of the email's link.
	email := "ana" + n + "@creator.example"
	brand(200, "POST", "/invites", map[string]any{"emails": []string{email}, "message": "Join us"})
	acceptURL := regexp.MustCompile(`/partner/invites/([A-Za-z0-9_-]+)`)
	var inviteToken string
	for _, m := range smtp.Wait(ctx, t, 1) {
		p, err := m.Parse()
		if err != nil {
			t.Fatal(err)
		}
		if got := acceptURL.FindStringSubmatch(p.Text); got != nil {
			inviteToken = got[1]
		}
	}
	if inviteToken == "" {
		t.Fatal("no invite email with an accept link")
	}
	ptok := e.must(t, 200, req{method: "POST", path: "/api/v1/partner/session",
		body: map[string]any{"id_token": iss.Token(t, "ana-"+n, email)}}).data()["token"].(string)
	secret("partner token", ptok)
	partner := func(status int, method, path string, body any) reply {
		t.Helper()
		return e.must(t, status, req{method: method, path: "/api/v1/partner" + path, token: ptok, body: body})
	}
	partner(200, "POST", "/invites/accept", map[string]any{"token": inviteToken})
	programs := partner(200, "GET", "/programs", nil).Body["data"].([]any)
	if len(programs) != 1 || programs[0].(map[string]any)["status"] != "active" {
		t.Fatalf("the partner's programs: %v", programs)
	}

	// 2. The partner copies its link; a visitor clicks it, signs up and
	// buys for 100.00.
	links := partner(200, "GET", "/programs/"+pid+"/links", nil).Body["data"].([]any)
	if len(links) != 1 {
		t.Fatalf("the partner's links: %v", links)
	}
	url := links[0].(map[string]any)["url"].(string)
	if !strings.Contains(url, domain) {
		t.Fatalf("link url %q is not on the program's domain", url)
	}
	click := e.must(t, 200, req{method: "POST", path: "/api/v1/track/click", header: map[string]string{"X-Forwarded-For": nextIP()},
		body: map[string]any{"affiliate_url": url}}).Body["click_id"].(string)
	st.waitCount(t, 1, time.Minute, `SELECT count(*) FROM clicks WHERE program_id = $1`, programID)
	e.must(t, 200, req{method: "POST", path: "/api/v1/track/lead", token: key,
		body: map[string]any{"click_id": click, "customer_key": "cust-" + n, "email": "buyer" + n + "@shop.example"}})
	e.must(t, 200, req{method: "POST", path: "/api/v1/track/sale", token: key,
		body: map[string]any{"transaction_id": "txn-" + n, "amount_cents": 10000, "click_id": click}})

	// 3. The partner sees the click, the lead, the sale and 20.00 earned.
	totals := partner(200, "GET", "/programs/"+pid+"/stats?period=7d", nil).data()["totals"].(map[string]any)
	if num(totals["clicks"]) != 1 || num(totals["leads"]) != 1 || num(totals["conversions"]) != 1 ||
		fmt.Sprint(totals["earnings"].(map[string]any)["USD"]) != "20" {
		t.Fatalf("the partner's stats: %v", totals)
	}
	if b := partner(200, "GET", "/balances", nil); strings.Contains(string(b.Raw), "buyer"+n) {
		t.Fatalf("the partner sees the customer: %s", b)
	}

	// 4. After the hold, the scheduler approves the commission: the
	// partner sees it approved and a balance of 20.00.
	st.waitCount(t, 1, 2*time.Minute, `SELECT count(*) FROM commissions WHERE program_id = $1 AND status = 'approved'`, programID)
	comms := partner(200, "GET", "/commissions", nil).Body["data"].([]any)
	if len(comms) != 1 || comms[0].(map[string]any)["status"] != "approved" {
		t.Fatalf("the partner's commissions: %v", comms)
	}

	// 5. The brand pays: the partner is due, a payout is created and
	// marked paid with the bank's reference.
	due := brand(200, "GET", "/payouts/due", nil).Body["data"].([]any)
	if len(due) != 1 {
		t.Fatalf("due: %v", due)
	}
	created := brand(200, "POST", "/payouts", map[string]any{}).data()["created"].([]any)
	if len(created) != 1 {
		t.Fatalf("payouts created: %v", created)
	}
	payoutID := itoa(num(created[0].(map[string]any)["id"]))
	brand(200, "POST", "/payouts/"+payoutID+"/mark-paid", map[string]any{"external_reference": "BANK-" + n})

	// 6. The partner sees the payout paid, the commission paid out, and
	// receives the email.
	payouts := partner(200, "GET", "/payouts", nil).Body["data"].([]any)
	if len(payouts) != 1 || payouts[0].(map[string]any)["status"] != "paid" {
		t.Fatalf("the partner's payouts: %v", payouts)
	}
	if c := partner(200, "GET", "/commissions", nil); c.Body["data"].([]any)[0].(map[string]any)["status"] != "paid" ||
		strings.Contains(string(c.Raw), "buyer"+n) || strings.Contains(string(c.Raw), "cust-"+n) {
		t.Fatalf("commission after the payout: %s", c)
	}
	for _, b := range partner(200, "GET", "/balances", nil).Body["data"].([]any) {
		if m := b.(map[string]any); fmt.Sprint(m["balance"]) != "0" {
			t.Fatalf("balance after the payout: %v", m)
		}
	}
	var paidMail bool
	for _, m := range smtp.Wait(ctx, t, 2) { // the invite, the payout
		p, err := m.Parse()
		if err != nil {
			t.Fatal(err)
		}
		paidMail = paidMail || (strings.Trim(p.To, "<>") == email && strings.Contains(p.Text, "BANK-"+n))
	}
	if !paidMail {
		t.Fatal("no payout email to the partner")
	}

	// 7. The brand's own user in the embedded widget: enrolled on first
	// open, then a click and a sale on the widget's link show there.
	embed := e.must(t, 201, req{method: "POST", path: base + "/embed-tokens", token: key,
		body: map[string]any{"email": "user" + n + "@acme-customers.example", "name": "Acme User"}}).data()
	page := e.must(t, 200, req{method: "GET", path: pathOf(embed["url"].(string))})
	code := regexp.MustCompile(`[?&]aff=([a-z0-9-]+)`).FindStringSubmatch(string(page.Raw))
	if code == nil {
		t.Fatalf("no referral link in the widget:\n%s", page.Raw)
	}
	click2 := e.must(t, 200, req{method: "POST", path: "/api/v1/track/click", header: map[string]string{"X-Forwarded-For": nextIP()},
		body: map[string]any{"affiliate_url": "https://" + domain + "/?aff=" + code[1]}}).Body["click_id"].(string)
	st.waitCount(t, 2, time.Minute, `SELECT count(*) FROM clicks WHERE program_id = $1`, programID)
	e.must(t, 200, req{method: "POST", path: "/api/v1/track/sale", token: key,
		body: map[string]any{"transaction_id": "txn-embed-" + n, "amount_cents": 5000, "click_id": click2}})
	page = e.must(t, 200, req{method: "GET", path: pathOf(embed["url"].(string))})
	for _, want := range []string{`<dd id="clicks">1</dd>`, `<dd id="conversions">1</dd>`, `data-currency="USD">`} {
		if !strings.Contains(string(page.Raw), want) {
			t.Fatalf("the widget does not show %s:\n%s", want, page.Raw)
		}
	}
	sc.note("invite → sign-in → accept → click, lead, sale (20.00 earned) → approved → payout paid (email received); widget user enrolled and shown 1 click, 1 conversion")
}

// pathOf is the path and query of an absolute URL the edge answered with.
func pathOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		panic(err)
	}
	return u.RequestURI()
}
