package pagetest

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// TestBrandReviewsCommissionsOnThePage: the page lists what the review
// API holds; approve and reject change it; a reject without a reason shows
// the API's message next to the reason field and changes nothing; the
// filters and the CSV go through the API; another brand sees a 404.
func TestBrandReviewsCommissionsOnThePage(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	w := s.brand(t)
	ana := s.seller(t, w, "ana")
	c1 := s.sale(t, w, ana, "txn-c1", 10000) // 20% → 20.00
	c2 := s.sale(t, w, ana, "txn-c2", 4017)  // 8.03
	b := s.browser(t).withCookie("pt_session", w.Owner)
	path := fmt.Sprintf("/app/programs/%d/commissions", w.ProgramID)

	page := b.get(path)
	if page.Status != 200 {
		t.Fatalf("commissions: %d %s", page.Status, page.Body)
	}
	page.mustContain(t, "<h1>Commissions</h1>", `aria-current="page">Commissions`, "txn-c1", "txn-c2",
		`data-amount="20" data-currency="USD">20.00 USD`, `data-amount="8.03" data-currency="USD">8.03 USD`,
		fmt.Sprintf("Approve commission %d", c1), fmt.Sprintf("Reject commission %d", c2), "Download CSV")
	csrf := page.csrf(t)

	t.Run("ErrRejectWithoutReason", func(t *testing.T) {
		p := b.post(fmt.Sprintf("%s/%d/reject", path, c2), url.Values{"csrf": {csrf}, "reason": {"  "}})
		if p.Status != 400 {
			t.Fatalf("reject without reason: %d", p.Status)
		}
		errID := fmt.Sprintf("reason-reject-%d-err", c2)
		p.mustContain(t, fmt.Sprintf(`<p class="field-error" id="%s">reason must be a string of 1 to 500 characters</p>`, errID),
			fmt.Sprintf(`id="reason-%d" name="reason"`, c2), fmt.Sprintf(`aria-invalid="true" aria-describedby="%s"`, errID))
		if st := s.commissionStatus(t, w, c2); st != "pending" {
			t.Fatalf("a refused reject changed the commission: %s", st)
		}
	})
	t.Run("OK approve", func(t *testing.T) {
		p := b.post(fmt.Sprintf("%s/%d/approve?status=pending", path, c1), url.Values{"csrf": {csrf}})
		if p.Status != 303 || p.Location != path+"?status=pending" {
			t.Fatalf("approve: %d %q %s", p.Status, p.Location, p.Body)
		}
		if st := s.commissionStatus(t, w, c1); st != "approved" {
			t.Fatalf("approved commission is %s", st)
		}
		// The redirect keeps the filter: only c2 is still pending.
		p = b.get(p.Location)
		p.mustContain(t, fmt.Sprintf("Commission %d approved.", c1), "txn-c2")
		if strings.Contains(p.Body, "txn-c1") {
			t.Fatal("the pending filter lists the approved commission")
		}
	})
	t.Run("ErrApproveTwice", func(t *testing.T) {
		p := b.post(fmt.Sprintf("%s/%d/approve", path, c1), url.Values{"csrf": {csrf}})
		if p.Status != 409 {
			t.Fatalf("approve twice: %d", p.Status)
		}
		p.mustContain(t, `<p class="form-error" role="alert">only a pending commission can be approved; this commission is approved</p>`)
	})
	t.Run("OK reject with reason", func(t *testing.T) {
		p := b.post(fmt.Sprintf("%s/%d/reject", path, c2), url.Values{"csrf": {csrf}, "reason": {"Self-referral"}})
		if p.Status != 303 || p.Location != path {
			t.Fatalf("reject: %d %q %s", p.Status, p.Location, p.Body)
		}
		if st := s.commissionStatus(t, w, c2); st != "rejected" {
			t.Fatalf("rejected commission is %s", st)
		}
		b.get(path).mustContain(t, fmt.Sprintf("Commission %d rejected.", c2), "Self-referral")
	})
	t.Run("ErrBadFilter", func(t *testing.T) {
		p := b.get(path + "?dateFrom=yesterday")
		if p.Status != 400 {
			t.Fatalf("bad filter: %d", p.Status)
		}
		p.mustContain(t, `<p class="field-error" id="f-from-err">dateFrom must be`, `name="dateFrom" value="yesterday" aria-invalid="true"`)
	})
	t.Run("OK CSV with the filters", func(t *testing.T) {
		p := b.get(path + "/csv?status=rejected")
		if p.Status != 200 || !strings.HasPrefix(p.Header.Get("Content-Type"), "text/csv") ||
			!strings.Contains(p.Header.Get("Content-Disposition"), "attachment") {
			t.Fatalf("csv: %d %v", p.Status, p.Header)
		}
		lines := strings.Split(strings.TrimSpace(p.Body), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "id,created_at,status") || !strings.Contains(lines[1], "txn-c2") {
			t.Fatalf("csv of rejected commissions:\n%s", p.Body)
		}
	})
	t.Run("ErrOtherBrand", func(t *testing.T) {
		other := s.brand(t)
		ob := s.browser(t).withCookie("pt_session", other.Owner)
		ob.get(path).mustBeRefused(t, "txn-c1")
		ob.get(path+"/csv").mustBeRefused(t, "txn-c1")
		oc := ob.get(fmt.Sprintf("/app/programs/%d/commissions", other.ProgramID)).csrf(t)
		c3 := s.sale(t, w, ana, "txn-c3", 1000)
		for _, verb := range []string{"approve", "reject"} {
			ob.post(fmt.Sprintf("%s/%d/%s", path, c3, verb), url.Values{"csrf": {oc}, "reason": {"x"}}).mustBeRefused(t, "txn-c3")
		}
		if st := s.commissionStatus(t, w, c3); st != "pending" {
			t.Fatalf("another brand changed the commission: %s", st)
		}
	})
}
