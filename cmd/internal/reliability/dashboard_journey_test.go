package reliability

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/cmd/internal/proc"
	"github.com/partnertrack/partnertrack/ingest/oidc/testissuer"
)

// loopbackEdge starts an edge on a known loopback port, so that its
// PUBLIC_BASE_URL (the OIDC redirect) is where the browser reaches it,
// and a worker beside it (clicks to Postgres, the scheduler). extra adds
// to the environment of both.
func loopbackEdge(t *testing.T, st *stack, extra map[string]string) (*edge, string) {
	t.Helper()
	port, err := proc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	env := map[string]string{"LISTEN_ADDR": addr, "PUBLIC_BASE_URL": "http://" + addr}
	for k, v := range extra {
		env[k] = v
	}
	e := st.startEdge(t, env)
	st.startWorker(t, nil, env)
	return e, "http://" + addr
}

// TestBrandJourney is issue 27's brand journey in headless Chromium,
// signed in as `make run` signs in (DEV_SIGNIN=1, the edge's own
// development provider): a new user creates a program, sets its payout
// minimum and makes its key, invites a partner, gives an enrolled partner
// a link, sees the link's click arrive on the overview chart, approves
// one commission and rejects another with a reason, then pays the
// partner and marks the payout paid. axe-core checks every page; every
// page seen is checked again at 360 px; screenshots are saved.
func TestBrandJourney(t *testing.T) {
	t.Parallel()
	sc := report(t, "dashboard/brand-journey")
	st := sharedStack(t)
	e, base := loopbackEdge(t, st, map[string]string{"DEV_SIGNIN": "1"})
	shots := screenshotDir(t)
	browser := headless(t)
	n := itoa(worldCount.Add(1))
	domain := "shop" + n + ".example"

	// 1. Sign in with the development provider: a new user has no program.
	brand := newPerson(t, browser, base, shots)
	brand.open("/login")
	brand.shot("01-sign-in")
	brand.signIn("/app/", "founder"+n+"@shop.example")
	brand.sees("You have no program yet")

	// 2. Create the program; its overview opens.
	brand.set("name", "Shop "+n+" Partners")
	brand.set("domain", domain)
	brand.set("commission_rate", "20")
	brand.submit("Create program")
	brand.sees("Program Shop "+n+" Partners created", "Readiness")
	programPath := strings.TrimPrefix(brand.location(), base)
	programID := num(json.Number(regexp.MustCompile(`/app/programs/(\d+)`).FindStringSubmatch(programPath)[1]))
	pid := itoa(programID)
	app := "/app/programs/" + pid

	// 3. Settings: a payout minimum of 10.00, then the live key, shown once.
	brand.open(app + "/settings")
	brand.set("minimum_payout", "10")
	brand.submit("Save settings")
	brand.open(app + "/settings")
	brand.shot("07-settings")
	brand.submit("Regenerate live key")
	key := brand.eval(`document.getElementById('secret-once').value`)
	secret("live key", key)
	if !strings.HasPrefix(key, "aff_") {
		t.Fatalf("the key page shows %q", key)
	}

	// 4. Invite a partner by email: the invite is listed.
	brand.open(app + "/partners")
	brand.set("invite-emails", "ana"+n+"@creator.example")
	brand.submit("Send invitations")
	brand.sees("Invited 1", "ana"+n+"@creator.example")

	// 5. A partner the operator enrolled gets a link on the links page.
	partnerID := num(e.must(t, 201, req{method: "POST", path: "/api/operator/v1/programs/" + pid + "/partners", token: opToken,
		body: map[string]any{"email": "ben" + n + "@creator.example", "name": "Ben " + n}}).data()["id"])
	brand.open(app + "/links")
	brand.eval(fmt.Sprintf(`document.getElementById('link-partner').value = '%d'; ''`, partnerID))
	code := "ben-" + n
	brand.set("link-code", code)
	brand.submit("Create link")
	brand.sees("Link " + code + " created")
	if url := brand.eval(`document.querySelector('.copy-row input').value`); !strings.HasPrefix(url, "https://"+domain) {
		t.Fatalf("the link to share is %q", url)
	}
	brand.shot("05-links")

	// 6. A visitor clicks the link: the overview's chart and totals show it
	// once the worker has stored it.
	click := e.must(t, 200, req{method: "POST", path: "/api/v1/track/click", header: map[string]string{"X-Forwarded-For": nextIP()},
		body: map[string]any{"affiliate_url": "https://" + domain + "/?aff=" + code}}).Body["click_id"].(string)
	brand.waitFor(app, time.Minute, "1 click", func() bool {
		return brand.eval(`document.querySelector('dl.metrics span[data-count]').getAttribute('data-count')`) == "1"
	})
	brand.audit()
	if pts := brand.eval(`String(document.querySelectorAll('svg.chart polyline').length)`); pts == "0" {
		t.Fatal("the overview has no chart line")
	}

	// 7. Two customers buy (the program pays on each customer's first
	// sale): one commission approved, the other rejected with a reason.
	click2 := e.must(t, 200, req{method: "POST", path: "/api/v1/track/click", header: map[string]string{"X-Forwarded-For": nextIP()},
		body: map[string]any{"affiliate_url": "https://" + domain + "/?aff=" + code}}).Body["click_id"].(string)
	for i, c := range []string{click, click2} {
		e.must(t, 200, req{method: "POST", path: "/api/v1/track/sale", token: key,
			body: map[string]any{"transaction_id": fmt.Sprintf("txn-%s-%d", n, i), "amount_cents": 10000 / (i + 1), "click_id": c}})
	}
	brand.open(app + "/commissions")
	ids := strings.Fields(brand.eval(`[...document.querySelectorAll('form.review-reject')].map(f => f.action.match(/commissions\/(\d+)\/reject/)[1]).join(' ')`))
	if len(ids) != 2 {
		t.Fatalf("pending commissions on the page: %v", ids)
	}
	brand.shot("03-commissions")
	approved, rejected := ids[0], ids[1]
	brand.submit("Approve commission " + approved)
	brand.set("reason-"+rejected, "Self-referral")
	brand.submit("Reject commission " + rejected)
	brand.sees("rejected")
	st.waitCount(t, 1, 10*time.Second, `SELECT count(*) FROM commissions WHERE id = $1 AND status = 'rejected' AND reason = 'Self-referral'`, num(json.Number(rejected)))

	// 8. The partner is due what was approved: a payout, marked paid.
	brand.open(app + "/payouts")
	brand.sees("Ben " + n)
	brand.submit("Create payouts for every due partner")
	payout := brand.eval(`document.querySelector('input[id^="ref-"]').id.slice(4)`)
	brand.set("ref-"+payout, "BANK-"+n)
	brand.submit("Mark payout " + payout + " paid")
	brand.sees("BANK-"+n, "paid")
	brand.shot("04-payouts")
	st.waitCount(t, 1, 10*time.Second, `SELECT count(*) FROM payouts WHERE id = $1 AND status = 'paid'`, num(json.Number(payout)))

	brand.open(app)
	brand.shot("02-overview")
	brand.open(app + "/partners")
	brand.shot("06-partners")
	brand.open(app + "/events")
	brand.narrow()
	sc.note("dev sign-in → program created → minimum set, key made → partner invited → link made → click on the chart → commission approved, one rejected with a reason → payout created and paid; axe clean on %d pages, none wider than 360 px", len(brand.seen))
}

// TestPartnerJourney is issue 27's partner journey in headless Chromium,
// signed in with the test issuer: the brand (through the API) invites the
// partner, who accepts on the page, copies the link, sees its click and
// sale in the stats chart, stores a payout method, requests a payout of
// the approved commission, sees it paid after the brand marks it, and
// reads the notification.
func TestPartnerJourney(t *testing.T) {
	t.Parallel()
	sc := report(t, "dashboard/partner-journey")
	st := sharedStack(t)
	iss := testissuer.New(t)
	e, base := loopbackEdge(t, st, map[string]string{"OIDC_ISSUER_URL": iss.URL, "OIDC_CLIENT_ID": testissuer.ClientID})
	shots := screenshotDir(t)
	browser := headless(t)
	w := mustWorld(t, e.client, map[string]any{"hold_days": 30})
	pid := itoa(w.ProgramID)
	owner := func(status int, method, path string, body any) reply {
		t.Helper()
		return e.must(t, status, req{method: method, path: "/api/v1/programs/" + pid + path, token: w.OwnerToken, body: body})
	}
	owner(200, "PATCH", "/settings", map[string]any{"minimum_payout": 10})
	email := "cleo" + itoa(w.ProgramID) + "@creator.example"
	owner(200, "POST", "/invites", map[string]any{"emails": []string{email}, "message": "Welcome aboard"})

	// 1. Sign in with the test issuer, accept the invite.
	partner := newPerson(t, browser, base, shots)
	partner.signIn("/partner/", email)
	partner.sees("Invitations", "Welcome aboard")
	partner.shot("10-partner-invite")
	partner.submit("Accept invite to " + programName(t, e, w))
	partner.sees("Invite accepted")

	// 2. The program page: the link to copy.
	partner.open("/partner/programs/" + pid)
	link := partner.eval(`document.querySelector('input[id^="link-"]').value`)
	if !strings.Contains(link, "aff=") {
		t.Fatalf("the partner's link: %q", link)
	}

	// 3. A click and a sale on the link show in the stats.
	click := e.must(t, 200, req{method: "POST", path: "/api/v1/track/click", header: map[string]string{"X-Forwarded-For": nextIP()},
		body: map[string]any{"affiliate_url": link}}).Body["click_id"].(string)
	st.waitCount(t, 1, time.Minute, `SELECT count(*) FROM clicks WHERE click_id = $1`, click)
	e.must(t, 200, req{method: "POST", path: "/api/v1/track/sale", token: w.LiveKey,
		body: map[string]any{"transaction_id": "txn-p-" + pid, "amount_cents": 10000, "click_id": click}})
	partner.waitFor("/partner/programs/"+pid+"?period=7d", time.Minute, "1 click and 1 conversion", func() bool {
		return partner.eval(`[...document.querySelectorAll('dl.metrics span[data-count]')].map(s => s.getAttribute('data-count')).join(',')`) == "1,0,1"
	})
	partner.audit()
	partner.shot("11-partner-program")

	// 4. The brand approves the commission: the partner sees it, stores a
	// payout method and requests the approved 20.00.
	comm := owner(200, "GET", "/commissions", nil).Body["data"].([]any)
	owner(200, "POST", fmt.Sprintf("/commissions/%d/approve", num(comm[0].(map[string]any)["id"])), nil)
	partner.open("/partner/commissions")
	partner.sees("approved")
	partner.shot("12-partner-commissions")
	partner.open("/partner/payouts")
	partner.eval(`document.getElementById('pm-method').value = 'paypal'; ''`)
	partner.set("pm-paypal_email", "cleo@paypal.example")
	partner.submit("Save payout method")
	partner.sees("PayPal")
	partner.submit("Request payout from " + programName(t, e, w) + " in USD")
	partner.sees("pending")

	// 5. The brand pays; the partner sees the payout paid and the notice.
	payouts := owner(200, "GET", "/payouts", nil).Body["data"].([]any)
	payoutID := num(payouts[0].(map[string]any)["id"])
	owner(200, "POST", fmt.Sprintf("/payouts/%d/mark-paid", payoutID), map[string]any{"external_reference": "PP-" + pid})
	partner.open("/partner/payouts")
	partner.sees("paid", "PP-"+pid)
	partner.shot("13-partner-payouts")
	partner.waitFor("/partner/notifications", time.Minute, "the payout notice", func() bool {
		return strings.Contains(partner.text("main"), "Unread")
	})
	partner.audit()
	partner.shot("14-partner-notifications")
	partner.submit("Mark all read")
	partner.open("/partner/")
	partner.narrow()
	sc.note("test-issuer sign-in → invite accepted → link copied → click and sale in the stats → commission approved → payout method stored, payout requested → paid, notice read; axe clean on %d pages, none wider than 360 px", len(partner.seen))
}

// programName reads the world's program name through the owner's API.
func programName(t *testing.T, e *edge, w world) string {
	t.Helper()
	for _, p := range e.must(t, 200, req{method: "GET", path: "/api/v1/programs", token: w.OwnerToken}).Body["data"].([]any) {
		if m := p.(map[string]any); num(m["id"]) == w.ProgramID {
			return m["name"].(string)
		}
	}
	t.Fatalf("program %d not among the owner's", w.ProgramID)
	return ""
}
