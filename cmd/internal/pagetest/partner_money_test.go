package pagetest

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// moneyWorld is a brand program (20 % of a sale, no hold, a minimum
// payout of 10.00 USD) with a partner enrolled by invite whose link
// brought a sale of 100.00 USD: one pending commission of 20.00 USD.
type moneyWorld struct {
	brandWorld
	Key          string // the program's API key
	PartnerEmail string
	Partner      string // the partner's session token
	PartnerID    int64
	CommissionID int64
	ProgramName  string
}

func (s *stack) moneyWorld(t *testing.T) moneyWorld {
	t.Helper()
	w := moneyWorld{brandWorld: s.brand(t)}
	prog := fmt.Sprintf("/api/v1/programs/%d", w.ProgramID)
	s.api(t, 200, "PATCH", prog+"/settings", w.Owner, map[string]any{"minimum_payout": 10})
	w.Key = s.api(t, 200, "POST", prog+"/api-key", w.Owner, nil)["api_key"].(string)

	w.PartnerEmail = fmt.Sprintf("ana%d@creator.example", w.ProgramID)
	s.api(t, 200, "POST", prog+"/invites", w.Owner, map[string]any{"emails": []string{w.PartnerEmail}})
	w.Partner, w.PartnerID = s.partnerSession(t, w.PartnerEmail)
	invites := s.apiList(t, "/api/v1/partner/invites", w.Partner)
	if len(invites) != 1 {
		t.Fatalf("invites: %v", invites)
	}
	s.api(t, 200, "POST", fmt.Sprintf("/api/v1/partner/invites/%d/accept", jsonInt(invites[0]["id"])), w.Partner, nil)

	progs := s.apiList(t, "/api/v1/partner/programs", w.Partner)
	if len(progs) != 1 {
		t.Fatalf("programs: %v", progs)
	}
	w.ProgramName = progs[0]["name"].(string)
	links := s.apiList(t, fmt.Sprintf("/api/v1/partner/programs/%d/links", w.ProgramID), w.Partner)
	if len(links) != 1 {
		t.Fatalf("links: %v", links)
	}
	click := s.apiBody(t, 200, "POST", "/api/v1/track/click", "", map[string]any{"affiliate_url": links[0]["url"]})["click_id"]
	s.apiBody(t, 200, "POST", "/api/v1/track/sale", w.Key, map[string]any{
		"transaction_id": fmt.Sprintf("txn-%d", w.ProgramID), "amount_cents": 10000, "click_id": click})
	comms := s.apiList(t, "/api/v1/partner/commissions", w.Partner)
	if len(comms) != 1 || comms[0]["status"] != "pending" {
		t.Fatalf("commissions after the sale: %v", comms)
	}
	w.CommissionID = jsonInt(comms[0]["id"])
	return w
}

// approve is the brand approving the world's commission.
func (w moneyWorld) approve(t *testing.T, s *stack) {
	t.Helper()
	s.api(t, 200, "POST", fmt.Sprintf("/api/v1/programs/%d/commissions/%d/approve", w.ProgramID, w.CommissionID), w.Owner, nil)
}

// partnerSession signs a partner in through the API and returns its
// token and id.
func (s *stack) partnerSession(t *testing.T, email string) (string, int64) {
	t.Helper()
	d := s.api(t, 200, "POST", "/api/v1/partner/session", "", map[string]any{"id_token": s.Issuer.Token(t, "sub-"+email, email)})
	return d["token"].(string), jsonInt(d["partner"].(map[string]any)["id"])
}

// apiList GETs a list of the API and returns its data.
func (s *stack) apiList(t *testing.T, path, token string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, v := range s.apiBody(t, 200, "GET", path, token, nil)["data"].([]any) {
		out = append(out, v.(map[string]any))
	}
	return out
}

// TestPartnerCommissionsPage: the partner's commission shows with its
// program, status and amount; the filters narrow it; a filter the API
// refuses shows its message next to the field; another partner sees none
// of it.
func TestPartnerCommissionsPage(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	w := s.moneyWorld(t)
	b := s.browser(t).withCookie("pt_partner_session", w.Partner)
	progName := w.ProgramName

	p := b.get("/partner/commissions")
	if p.Status != 200 {
		t.Fatalf("commissions: %d %s", p.Status, p.Body)
	}
	p.mustContain(t, "<h1>Your commissions</h1>", `aria-current="page">Commissions`, "1 commission</h2>",
		fmt.Sprintf("<td>%d</td><td>%s</td>", w.CommissionID, progName), `<span class="status">pending</span>`,
		`<span data-amount="20" data-currency="USD">20.00 USD</span>`,
		fmt.Sprintf(`<option value="%d">%s</option>`, w.ProgramID, progName))

	// Filters: by status and program, kept in the form.
	p = b.get("/partner/commissions?status=approved")
	p.mustContain(t, "No commission matches", `<option value="approved" selected>`)
	if strings.Contains(p.Body, "20.00 USD") {
		t.Fatal("an approved filter shows the pending commission")
	}
	p = b.get(fmt.Sprintf("/partner/commissions?status=pending&program_id=%d", w.ProgramID))
	p.mustContain(t, "20.00 USD", fmt.Sprintf(`<option value="%d" selected>`, w.ProgramID))

	// After the brand approves it, the page says so.
	w.approve(t, s)
	b.get("/partner/commissions?status=approved").mustContain(t, `<span class="status">approved</span>`, "20.00 USD")

	// Filters the API refuses: its message, next to the field, as a 400.
	for _, tc := range []struct{ desc, query, field, msg string }{
		{"BadStatus", "status=lost", "status", "status must be one of: pending, approved, paid, reversed, refunded, rejected"},
		{"BadProgram", "program_id=abc", "program_id", "program_id must be a positive integer"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			p := b.get("/partner/commissions?" + tc.query)
			if p.Status != 400 {
				t.Fatalf("%s: %d", tc.query, p.Status)
			}
			p.mustContain(t, fmt.Sprintf(`<p class="field-error" id="%s-err">%s</p>`, tc.field, tc.msg),
				fmt.Sprintf(`id="%s" name="%s" aria-invalid="true" aria-describedby="%s-err"`, tc.field, tc.field, tc.field))
		})
	}
	if p := b.get("/partner/commissions?page=0"); p.Status != 400 || !strings.Contains(p.Body, `<p class="form-error" role="alert">page must be a positive integer</p>`) {
		t.Fatalf("page=0: %d %s", p.Status, p.Body)
	}

	// Pages: 25 a page; the links keep the filters.
	links := s.apiList(t, fmt.Sprintf("/api/v1/partner/programs/%d/links", w.ProgramID), w.Partner)
	for i := range 25 {
		click := s.apiBody(t, 200, "POST", "/api/v1/track/click", "", map[string]any{"affiliate_url": links[0]["url"]})["click_id"]
		s.apiBody(t, 200, "POST", "/api/v1/track/sale", w.Key, map[string]any{
			"transaction_id": fmt.Sprintf("txn-more-%d", i), "amount_cents": 1000 + i, "click_id": click})
	}
	p = b.get("/partner/commissions?status=pending")
	p.mustContain(t, `<span data-count="25">25</span> commissions</h2>`)
	if strings.Contains(p.Body, "Next page") {
		t.Fatal("pages for 25 commissions")
	}
	p = b.get("/partner/commissions")
	p.mustContain(t, `<span data-count="26">26</span> commissions</h2>`, "Page 1 of 2",
		`<a href="/partner/commissions?page=2" rel="next">Next page</a>`)
	if strings.Contains(p.Body, "20.00 USD") {
		t.Fatal("the oldest commission is on the first page")
	}
	p = b.get(fmt.Sprintf("/partner/commissions?page=2&program_id=%d", w.ProgramID))
	p.mustContain(t, "Page 2 of 2", "20.00 USD", fmt.Sprintf(`<a href="/partner/commissions?page=1&amp;program_id=%d" rel="prev">Previous page</a>`, w.ProgramID))
	if strings.Contains(p.Body, "Next page") {
		t.Fatal("a next page after the last")
	}

	// Another partner, in another brand's program, sees none of it, even
	// when it filters on this program.
	other := s.brand(t)
	email := "bo@creator.example"
	s.api(t, 200, "POST", fmt.Sprintf("/api/v1/programs/%d/invites", other.ProgramID), other.Owner, map[string]any{"emails": []string{email}})
	bo := s.browser(t).withCookie("pt_partner_session", s.partnerToken(t, email))
	for _, path := range []string{"/partner/commissions", fmt.Sprintf("/partner/commissions?program_id=%d", w.ProgramID)} {
		p := bo.get(path)
		if p.Status != 200 || strings.Contains(p.Body, progName) || strings.Contains(p.Body, "20.00 USD") {
			t.Fatalf("another partner's %s: %d %s", path, p.Status, p.Body)
		}
		p.mustContain(t, "No commission matches")
	}
}

// TestPartnerRequestsAPayout is the money path on the payouts page: a
// pending commission shows as pending; once approved, the balance has a
// "Request payout" form; the API's refusal below the program's minimum
// shows next to the amount and stores nothing; a request of the whole
// balance makes a pending payout, which the brand marks paid with its
// reference. Another partner sees none of it and cannot ask for it.
func TestPartnerRequestsAPayout(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	w := s.moneyWorld(t)
	b := s.browser(t).withCookie("pt_partner_session", w.Partner)
	progName := w.ProgramName
	action := fmt.Sprintf("/partner/payouts/programs/%d/request", w.ProgramID)

	p := b.get("/partner/payouts")
	if p.Status != 200 {
		t.Fatalf("payouts: %d %s", p.Status, p.Body)
	}
	p.mustContain(t, "<h1>Your payouts</h1>", `aria-current="page">Payouts`,
		`<td>`+progName+`</td><td class="num"><span data-amount="0" data-currency="USD">0.00 USD</span></td><td class="num"><span data-amount="20" data-currency="USD">20.00 USD</span></td>`,
		"No payout yet.")
	if strings.Contains(p.Body, `action="`+action+`"`) {
		t.Fatal("a request form without an approved balance")
	}

	w.approve(t, s)
	p = b.get("/partner/payouts")
	p.mustContain(t, `action="`+action+`"`, "Request payout from "+progName+" in USD", "whole approved balance of <span data-amount=\"20\"")
	csrf := p.csrf(t)
	amountID := fmt.Sprintf("amount-request-%d-usd", w.ProgramID)

	// Refusals: the API's message next to the amount of this form, the
	// amount kept, nothing stored.
	for _, tc := range []struct{ desc, amount, msg string }{
		{"BelowMinimum", "5", "amount is below the program&#39;s minimum payout of 10.00 USD"},
		{"NotANumber", "ten", "amount must be a positive number in major units of the currency, exact to its minor unit"},
		{"AboveBalance", "25.00", "amount exceeds the approved balance in this program and currency, which is 20.00 USD"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			p := b.post(action, url.Values{"csrf": {csrf}, "currency": {"USD"}, "amount": {tc.amount}})
			if p.Status < 400 || p.Status > 499 {
				t.Fatalf("amount %q: %d %s", tc.amount, p.Status, p.Body)
			}
			p.mustContain(t, fmt.Sprintf(`<p class="field-error" id="%s-err">%s</p>`, amountID, tc.msg),
				fmt.Sprintf(`id="%s" name="amount" value="%s" autocomplete="off" aria-invalid="true" aria-describedby="%s-err"`, amountID, tc.amount, amountID))
			if got := s.apiList(t, "/api/v1/partner/payouts", w.Partner); len(got) != 0 {
				t.Fatalf("a refused request stored a payout: %v", got)
			}
		})
	}
	// Without the form token nothing is asked.
	if p := b.post(action, url.Values{"currency": {"USD"}}); p.Status != 403 {
		t.Fatalf("no csrf: %d", p.Status)
	}

	// Another partner sees neither balance nor payouts, and its request
	// on this program is the API's 404, with nothing stored.
	bo := s.browser(t).withCookie("pt_partner_session", s.partnerToken(t, "bo@creator.example"))
	op := bo.get("/partner/payouts")
	op.mustContain(t, "No balance yet.", "No payout yet.")
	if strings.Contains(op.Body, progName) {
		t.Fatalf("another partner sees the program:\n%s", op.Body)
	}
	if p := bo.post(action, url.Values{"csrf": {op.csrf(t)}, "currency": {"USD"}}); p.Status != 404 {
		t.Fatalf("another partner's request: %d %s", p.Status, p.Body)
	}
	if got := s.apiList(t, "/api/v1/partner/payouts", w.Partner); len(got) != 0 {
		t.Fatalf("another partner's request stored a payout: %v", got)
	}

	// The whole balance: a pending payout, the balance down to zero.
	p = b.post(action, url.Values{"csrf": {csrf}, "currency": {"USD"}, "amount": {""}})
	if p.Status != 303 || p.Location != "/partner/payouts" {
		t.Fatalf("request: %d %q %s", p.Status, p.Location, p.Body)
	}
	payouts := s.apiList(t, "/api/v1/partner/payouts", w.Partner)
	if len(payouts) != 1 {
		t.Fatalf("payouts: %v", payouts)
	}
	payoutID := jsonInt(payouts[0]["id"])
	p = b.get("/partner/payouts")
	p.mustContain(t, fmt.Sprintf("Payout %d of 20.00 USD requested from %s.", payoutID, progName),
		fmt.Sprintf("<td>%d</td>\n  <td>%s</td>\n  <td><span class=\"status\">pending</span>", payoutID, progName), "by you")
	if strings.Contains(p.Body, `action="`+action+`"`) {
		t.Fatal("a request form with the balance paid out")
	}

	// The brand pays it: the page shows it paid, with the reference, and
	// the commission paid by it.
	s.api(t, 200, "POST", fmt.Sprintf("/api/v1/programs/%d/payouts/%d/mark-paid", w.ProgramID, payoutID), w.Owner,
		map[string]any{"external_reference": "BANK-2024-001"})
	b.get("/partner/payouts").mustContain(t, `<span class="status">paid</span>`, `<span class="mono">BANK-2024-001</span>`)
	b.get("/partner/commissions").mustContain(t, `<span class="status">paid</span>`, fmt.Sprintf("(payout %d)", payoutID))
	if strings.Contains(bo.get("/partner/payouts").Body, "BANK-2024-001") {
		t.Fatal("another partner sees the payout")
	}
}

// TestPartnerSetsAPayoutMethod: a bad IBAN or email shows the API's
// message next to its field and stores nothing; a good one is shown
// masked; the method can change and be removed. Another partner sees
// none of it.
func TestPartnerSetsAPayoutMethod(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	tok, _ := s.partnerSession(t, "ana@creator.example")
	b := s.browser(t).withCookie("pt_partner_session", tok)
	noMethod := func(t *testing.T) {
		t.Helper()
		s.apiBody(t, 404, "GET", "/api/v1/partner/payout-method", tok, nil)
	}

	p := b.get("/partner/payouts")
	if p.Status != 200 {
		t.Fatalf("payouts: %d %s", p.Status, p.Body)
	}
	p.mustContain(t, "No payout method on file", "<legend>Bank transfer</legend>", "<legend>PayPal</legend>", "<legend>Wise</legend>",
		`<label for="pm-iban">IBAN (optional)</label>`, `<label for="pm-paypal_email">PayPal email</label>`)
	csrf := p.csrf(t)

	bank := url.Values{"csrf": {csrf}, "method": {"bank_transfer"}, "account_holder": {"Ana Example"}, "country": {"DE"},
		"iban": {"DE89 3704 0044 0532 0130 01"}, "paypal_email": {"ignored@example.com"}}
	for _, tc := range []struct {
		desc   string
		change url.Values
		field  string
		msg    string
	}{
		{"BadIBAN", nil, "iban", "details.iban must be a valid IBAN"},
		{"NoAccount", url.Values{"iban": {""}}, "iban", "details.iban or details.account_number is required for bank_transfer"},
		{"BadCountry", url.Values{"iban": {"DE89370400440532013000"}, "country": {"Germany"}}, "country", "details.country must be an ISO 3166 alpha-2 country code"},
		{"NoHolder", url.Values{"iban": {"DE89370400440532013000"}, "account_holder": {""}}, "account_holder", "details.account_holder is required for bank_transfer"},
		{"BadPayPalEmail", url.Values{"method": {"paypal"}, "paypal_email": {"not an email"}}, "paypal_email", "details.email must be one email address"},
		{"NoWiseEmail", url.Values{"method": {"wise"}}, "wise_email", "details.email is required for wise"},
		{"BadMethod", url.Values{"method": {"cheque"}}, "method", "method must be one of: bank_transfer, paypal, wise"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			form := url.Values{}
			for k, v := range bank {
				form[k] = v
			}
			for k, v := range tc.change {
				form[k] = v
			}
			p := b.post("/partner/payouts/method", form)
			if p.Status != 400 {
				t.Fatalf("%d %s", p.Status, p.Body)
			}
			p.mustContain(t, fmt.Sprintf(`<p class="field-error" id="pm-%s-err">%s</p>`, tc.field, tc.msg),
				fmt.Sprintf(`id="pm-%s" name="%s"`, tc.field, tc.field), fmt.Sprintf(`aria-invalid="true" aria-describedby="pm-%s-err`, tc.field),
			)
			// What was sent stays in the form.
			if tc.field != "method" {
				p.mustContain(t, fmt.Sprintf(`<option value="%s" selected>`, form.Get("method")))
			}
			if strings.Count(p.Body, `class="field-error"`) != 1 {
				t.Fatalf("more than one field error:\n%s", p.Body)
			}
			if tc.field != "account_holder" {
				p.mustContain(t, `name="account_holder" value="Ana Example"`)
			}
			noMethod(t)
		})
	}

	// A good IBAN: saved, shown masked, never in full.
	good := url.Values{"csrf": {csrf}, "method": {"bank_transfer"}, "account_holder": {"Ana Example"}, "country": {"de"},
		"iban": {"DE89 3704 0044 0532 0130 00"}, "swift_bic": {"cobadeffxxx"}}
	if p := b.post("/partner/payouts/method", good); p.Status != 303 || p.Location != "/partner/payouts" {
		t.Fatalf("save: %d %q %s", p.Status, p.Location, p.Body)
	}
	p = b.get("/partner/payouts")
	p.mustContain(t, "Payout method saved: Bank transfer.", "by <strong>Bank transfer</strong>",
		"<dt>Account holder</dt><dd>Ana Example</dd>", "<dt>Country of the account</dt><dd>DE</dd>",
		"<dt>IBAN</dt><dd>IBAN •••• 3000</dd>", "<dt>SWIFT/BIC</dt><dd>COBADEFFXXX</dd>",
		`<option value="bank_transfer" selected>`, "Remove payout method")
	if strings.Contains(p.Body, "DE89370400440532013000") || strings.Contains(p.Body, "0532 0130") {
		t.Fatal("the page shows the whole IBAN")
	}

	// Another partner sees none of it.
	other := s.browser(t).withCookie("pt_partner_session", s.partnerToken(t, "bo@creator.example"))
	if op := other.get("/partner/payouts"); !strings.Contains(op.Body, "No payout method on file") || strings.Contains(op.Body, "Ana Example") {
		t.Fatalf("another partner's payouts page:\n%s", op.Body)
	}

	// Wise instead: the email, masked.
	if p := b.post("/partner/payouts/method", url.Values{"csrf": {csrf}, "method": {"wise"}, "wise_email": {"Ana@Creator.example"}}); p.Status != 303 {
		t.Fatalf("wise: %d %s", p.Status, p.Body)
	}
	b.get("/partner/payouts").mustContain(t, "by <strong>Wise</strong>", "<dt>Email</dt><dd>a***@creator.example</dd>")

	// Removed: none on file, in the page and the API.
	if p := b.post("/partner/payouts/method/delete", url.Values{"csrf": {csrf}}); p.Status != 303 {
		t.Fatalf("delete: %d %s", p.Status, p.Body)
	}
	b.get("/partner/payouts").mustContain(t, "Payout method removed.", "No payout method on file")
	noMethod(t)
	// Removing what is not there is the API's 404, as a page.
	if p := b.post("/partner/payouts/method/delete", url.Values{"csrf": {csrf}}); p.Status != 404 || !strings.Contains(p.Body, "no payout method on file") {
		t.Fatalf("delete again: %d %s", p.Status, p.Body)
	}
}
