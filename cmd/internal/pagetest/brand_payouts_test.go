package pagetest

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// TestBrandPaysPartnersOnThePage: the page lists the partners due what
// the API says; the create form makes their payouts; mark-paid moves a
// payout to paid, and a mark-paid without a reference shows the API's
// message next to the field and changes nothing; the CSV is the owner's,
// a member gets the API's refusal; another brand sees none of it.
func TestBrandPaysPartnersOnThePage(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	w := s.brand(t)
	ana, ben := s.seller(t, w, "ana"), s.seller(t, w, "ben")
	for _, c := range []int64{s.sale(t, w, ana, "txn-a", 50000), s.sale(t, w, ben, "txn-b", 30000)} { // 100.00 and 60.00
		s.api(t, 200, "POST", fmt.Sprintf("/api/v1/programs/%d/commissions/%d/approve", w.ProgramID, c), w.Owner, nil)
	}
	b := s.browser(t).withCookie("pt_session", w.Owner)
	path := fmt.Sprintf("/app/programs/%d/payouts", w.ProgramID)

	page := b.get(path)
	if page.Status != 200 {
		t.Fatalf("payouts: %d %s", page.Status, page.Body)
	}
	page.mustContain(t, "<h2 id=\"due-h\">Due for a payout</h2>", `data-amount="100" data-currency="USD">100.00 USD`,
		`data-amount="60" data-currency="USD">60.00 USD`, fmt.Sprintf(`name="partner_ids" value="%d"`, ana.PartnerID), "not set")
	csrf := page.csrf(t)

	t.Run("ErrNothingTicked", func(t *testing.T) {
		p := b.post(path, url.Values{"csrf": {csrf}, "scope": {"selected"}})
		if p.Status != 400 {
			t.Fatalf("nothing ticked: %d", p.Status)
		}
		p.mustContain(t, `<p class="field-error" id="partner_ids-err">Tick the partners to pay`)
		if n := len(s.apiBody(t, 200, "GET", fmt.Sprintf("/api/v1/programs/%d/payouts", w.ProgramID), w.Owner, nil)["data"].([]any)); n != 0 {
			t.Fatalf("a refused form made %d payouts", n)
		}
	})
	var payoutID int64
	t.Run("OK create for the ticked partner", func(t *testing.T) {
		p := b.post(path, url.Values{"csrf": {csrf}, "scope": {"selected"}, "partner_ids": {fmt.Sprint(ana.PartnerID)}})
		if p.Status != 303 || p.Location != path {
			t.Fatalf("create: %d %q %s", p.Status, p.Location, p.Body)
		}
		p = b.get(path)
		p.mustContain(t, "1 payout created.", "Mark payout", "ben")
		payoutID = regexpInt(t, p.Body, `action="/app/programs/\d+/payouts/(\d+)/mark-paid"`)
		if st := s.payoutStatus(t, w, payoutID); st != "pending" {
			t.Fatalf("new payout is %s", st)
		}
	})
	t.Run("ErrMarkPaidWithoutReference", func(t *testing.T) {
		p := b.post(fmt.Sprintf("%s/%d/mark-paid", path, payoutID), url.Values{"csrf": {csrf}, "external_reference": {""}})
		if p.Status != 400 {
			t.Fatalf("mark-paid without reference: %d", p.Status)
		}
		errID := fmt.Sprintf("ref-paid-%d-err", payoutID)
		p.mustContain(t, fmt.Sprintf(`<p class="field-error" id="%s">external_reference must be a string of 1 to 200 characters</p>`, errID),
			fmt.Sprintf(`aria-invalid="true" aria-describedby="%s"`, errID))
		if st := s.payoutStatus(t, w, payoutID); st != "pending" {
			t.Fatalf("a refused mark-paid changed the payout: %s", st)
		}
	})
	t.Run("OK mark processing then paid", func(t *testing.T) {
		if p := b.post(fmt.Sprintf("%s/%d/mark-processing", path, payoutID), url.Values{"csrf": {csrf}}); p.Status != 303 {
			t.Fatalf("mark-processing: %d %s", p.Status, p.Body)
		}
		if st := s.payoutStatus(t, w, payoutID); st != "processing" {
			t.Fatalf("payout is %s, want processing", st)
		}
		p := b.post(fmt.Sprintf("%s/%d/mark-paid", path, payoutID), url.Values{"csrf": {csrf}, "external_reference": {"PAYPAL-778"}})
		if p.Status != 303 {
			t.Fatalf("mark-paid: %d %s", p.Status, p.Body)
		}
		if st := s.payoutStatus(t, w, payoutID); st != "paid" {
			t.Fatalf("payout is %s, want paid", st)
		}
		p = b.get(path)
		p.mustContain(t, fmt.Sprintf("Payout %d marked paid.", payoutID), "ref PAYPAL-778")
		// A paid payout has no more steps; a late form is the API's refusal in its row.
		p = b.post(fmt.Sprintf("%s/%d/mark-failed", path, payoutID), url.Values{"csrf": {csrf}, "reason": {"bounced"}})
		if p.Status != 409 || !strings.Contains(p.Body, `<p class="form-error" role="alert">payout is already paid`) {
			t.Fatalf("mark-failed after paid: %d %s", p.Status, p.Body)
		}
	})
	t.Run("OK CSV for the owner", func(t *testing.T) {
		p := b.get(path + "/csv")
		if p.Status != 200 || !strings.HasPrefix(p.Header.Get("Content-Type"), "text/csv") ||
			!strings.Contains(p.Header.Get("Content-Disposition"), "attachment") {
			t.Fatalf("csv: %d %v", p.Status, p.Header)
		}
		if !strings.HasPrefix(p.Body, "recipient_email,amount,currency") || !strings.Contains(p.Body, ana.Email) {
			t.Fatalf("csv:\n%s", p.Body)
		}
	})
	t.Run("ErrCSVForAMember", func(t *testing.T) {
		mb := s.browser(t).withCookie("pt_session", s.member(t, w, "member"))
		p := mb.get(path + "/csv")
		if p.Status != 403 || strings.Contains(p.Body, ana.Email) {
			t.Fatalf("member csv: %d", p.Status)
		}
		p.mustContain(t, "Only a workspace owner or admin can export payouts")
	})
	t.Run("ErrOtherBrand", func(t *testing.T) {
		other := s.brand(t)
		ob := s.browser(t).withCookie("pt_session", other.Owner)
		ob.get(path).mustBeRefused(t, ana.Email, "ben")
		ob.get(path+"/csv").mustBeRefused(t, ana.Email)
		oc := ob.get(fmt.Sprintf("/app/programs/%d/payouts", other.ProgramID)).csrf(t)
		ob.post(path, url.Values{"csrf": {oc}, "scope": {"all"}}).mustBeRefused(t)
		due := s.apiBody(t, 200, "GET", fmt.Sprintf("/api/v1/programs/%d/payouts/due", w.ProgramID), w.Owner, nil)["data"].([]any)
		if len(due) != 1 {
			t.Fatalf("another brand's form changed the due list: %v", due)
		}
	})
	t.Run("OK create for every due partner", func(t *testing.T) {
		p := b.post(path, url.Values{"csrf": {csrf}, "scope": {"all"}})
		if p.Status != 303 {
			t.Fatalf("create all: %d %s", p.Status, p.Body)
		}
		b.get(path).mustContain(t, "1 payout created.", "No partner is due a payout")
	})
}

// payoutStatus reads a payout's status through the payouts API.
func (s *stack) payoutStatus(t *testing.T, w brandWorld, id int64) string {
	t.Helper()
	body := s.apiBody(t, 200, "GET", fmt.Sprintf("/api/v1/programs/%d/payouts?pageSize=100", w.ProgramID), w.Owner, nil)
	for _, p := range body["data"].([]any) {
		if m := p.(map[string]any); jsonInt(m["id"]) == id {
			return m["status"].(string)
		}
	}
	t.Fatalf("payout %d not listed", id)
	return ""
}

func regexpInt(t *testing.T, body, expr string) int64 {
	t.Helper()
	var n int64
	fmt.Sscan(regexpFind(t, body, expr), &n)
	return n
}
