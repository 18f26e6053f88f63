package reliability

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ingest/oidc/testissuer"
)

// TestIsolationPortal: the partner API (issue 26) keeps partners apart
// and never tells a customer's identity. Partners X and Y are both
// partners of brand A's program; Y is also invited to brand B's program,
// has a link with clicks, a lead and a sale of a customer with an email
// and a customer key, an approved commission and an in-app notification.
// X's token reaches none of Y's invites (by id or by the email's token),
// none of B's program (not enrolled: 404) and none of Y's notifications;
// X's own listings (programs, invites, links, stats, commissions,
// balances, notifications) hold nothing of Y's; X's read-all leaves Y's
// notification unread. No answer of any partner route, X's or Y's own,
// contains the customer's email or key. Dashboard and partner tokens
// open none of each other's routes. B's rows are the same before and
// after.
func TestIsolationPortal(t *testing.T) {
	t.Parallel()
	sc := report(t, "isolation/partner-portal")
	st := sharedStack(t)
	iss := testissuer.New(t)
	e := st.startEdge(t, map[string]string{"OIDC_ISSUER_URL": iss.URL, "OIDC_CLIENT_ID": testissuer.ClientID})
	a, b := mustWorld(t, e.client, nil), mustWorld(t, e.client, nil)
	pa, pb := itoa(a.ProgramID), itoa(b.ProgramID)
	tag := pa + "-" + pb
	xEmail, yEmail := "x-portal-"+tag+"@creator.example", "y-portal-"+tag+"@creator.example"
	const customerKey, customerEmail = "cust-portal-secret-key", "portal.customer@secret.example"

	// X and Y in A's program; Y with a link of its own.
	enroll := func(email, name string) int64 {
		return num(e.must(t, 201, req{method: "POST", path: "/api/operator/v1/programs/" + pa + "/partners", token: opToken,
			body: map[string]any{"email": email, "name": name}}).data()["id"])
	}
	enroll(xEmail, "Xena")
	yID := enroll(yEmail, "Yuri")
	y := a
	y.PartnerID, y.Code = yID, "y-portal-"+tag
	y.LinkID = num(e.must(t, 201, req{method: "POST", path: "/api/operator/v1/programs/" + pa + "/links", token: opToken,
		body: map[string]any{"partner_id": yID, "code": y.Code}}).data()["id"])

	// Y's customer: a click, a lead with the customer's email and key, a
	// sale, its commission approved by A's owner.
	click := mustClick(t, e.client, y)
	e.must(t, 200, req{method: "POST", path: "/api/v1/track/lead", token: a.LiveKey,
		body: map[string]any{"click_id": click, "customer_key": customerKey, "email": customerEmail}})
	sale := e.must(t, 200, req{method: "POST", path: "/api/v1/track/sale", token: a.LiveKey,
		body: map[string]any{"transaction_id": "txn-portal-" + tag, "amount_cents": 4321, "customer_key": customerKey}})
	commission := itoa(num(sale.Body["commission_id"]))
	e.must(t, 200, req{method: "POST", path: "/api/v1/programs/" + pa + "/commissions/" + commission + "/approve", token: a.OwnerToken})

	// B invites Y.
	inv := e.must(t, 200, req{method: "POST", path: "/api/v1/programs/" + pb + "/invites", token: b.OwnerToken,
		body: map[string]any{"emails": []string{yEmail}}}).data()
	yInvite := itoa(num(inv["invited"].([]any)[0].(map[string]any)["id"]))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var acceptURL string
	if err := st.db.QueryRowContext(ctx, `SELECT payload->'data'->>'accept_url' FROM outbox
		WHERE task_type = 'email:send' AND payload->>'to' = $1 ORDER BY id DESC LIMIT 1`, yEmail).Scan(&acceptURL); err != nil {
		t.Fatal(err)
	}
	yToken := acceptURL[strings.LastIndex(acceptURL, "/")+1:]
	secret("invite token", yToken)

	// Y's in-app notification (the notifications worker's row).
	var yNote int64
	if err := st.db.QueryRowContext(ctx, `INSERT INTO notifications (outbox_id, partner_id, kind, title, body, data)
		VALUES ($1, $2, 'commission.refunded', 'Y portal note', 'for Y only', '{}') RETURNING id`,
		9_000_000_000+yID, yID).Scan(&yNote); err != nil {
		t.Fatal(err)
	}

	signIn := func(sub, email string) string {
		tok := e.must(t, 200, req{method: "POST", path: "/api/v1/partner/session",
			body: map[string]any{"id_token": iss.Token(t, sub, email)}}).data()["token"].(string)
		secret("partner token", tok)
		return tok
	}
	x, yTok := signIn("x-"+tag, xEmail), signIn("y-"+tag, yEmail)

	// Every partner answer is checked for the customer's identity.
	customer := func(who string, rep reply) {
		t.Helper()
		for _, s := range []string{customerKey, customerEmail} {
			if strings.Contains(string(rep.Raw), s) {
				t.Errorf("%s: an answer of the partner API shows the customer (%q): %s", who, s, rep.Raw)
			}
		}
	}

	before := snapshot(t, st, b.ProgramID)
	p := &prober{t: t, e: e, leaks: []string{yEmail, y.Code, "Y portal note", "Yuri", customerKey, customerEmail}}
	for _, r := range []req{
		{method: "POST", path: "/api/v1/partner/invites/" + yInvite + "/accept"},
		{method: "POST", path: "/api/v1/partner/invites/" + yInvite + "/decline"},
		{method: "POST", path: "/api/v1/partner/invites/accept", body: map[string]any{"token": yToken}},
		{method: "GET", path: "/api/v1/partner/programs/" + pb + "/links"},
		{method: "POST", path: "/api/v1/partner/programs/" + pb + "/links", body: map[string]any{"code": "x-steal-" + tag}},
		{method: "GET", path: "/api/v1/partner/programs/" + pb + "/stats?period=all"},
		{method: "POST", path: "/api/v1/partner/notifications/" + itoa(yNote) + "/read"},
	} {
		r.token = x
		p.probe("partner X", r, 404)
	}
	// Tokens of the other kinds open no partner route, and a partner
	// token no brand route.
	for who, tok := range map[string]string{"A's owner": a.OwnerToken, "A's live key": a.LiveKey} {
		p.probe(who, req{method: "GET", path: "/api/v1/partner/commissions", token: tok}, 401)
		p.probe(who, req{method: "GET", path: "/api/v1/partner/programs", token: tok}, 401)
	}
	for _, r := range []req{
		{method: "GET", path: "/api/v1/programs/" + pa + "/partners"},
		{method: "GET", path: "/api/v1/programs/" + pa + "/commissions"},
		{method: "GET", path: "/api/v1/programs/" + pa + "/links"},
	} {
		r.token = x
		p.probe("partner X on a brand route", r, 401)
	}

	// X's own answers: nothing of Y's, nothing of the customer.
	for _, path := range []string{
		"/api/v1/partner/programs", "/api/v1/partner/invites", "/api/v1/partner/programs/" + pa + "/links",
		"/api/v1/partner/programs/" + pa + "/stats?period=all", "/api/v1/partner/commissions?pageSize=100",
		"/api/v1/partner/balances", "/api/v1/partner/notifications",
	} {
		p.probe("partner X's own", req{method: "GET", path: path, token: x}, 200)
	}
	if rep := e.must(t, 200, req{method: "GET", path: "/api/v1/partner/commissions", token: x}); len(rep.Body["data"].([]any)) != 0 {
		t.Errorf("X lists commissions: %s", rep.Raw)
	}
	if rep := e.must(t, 200, req{method: "GET", path: "/api/v1/partner/invites", token: x}); len(rep.Body["data"].([]any)) != 0 {
		t.Errorf("X lists invites: %s", rep.Raw)
	}
	// Y's sale is in the shared program's rollups and balance; X's numbers
	// there hold none of it (Y's own answers below show it is there).
	money := func(tok string) (conversions float64, balance string) {
		t.Helper()
		st := e.must(t, 200, req{method: "GET", path: "/api/v1/partner/programs/" + pa + "/stats?period=all", token: tok}).data()
		conversions, _ = st["totals"].(map[string]any)["conversions"].(float64)
		rows, _ := e.must(t, 200, req{method: "GET", path: "/api/v1/partner/balances", token: tok}).Body["data"].([]any)
		for _, r := range rows {
			if m := r.(map[string]any); num(m["program"].(map[string]any)["id"]) == a.ProgramID {
				balance = fmt.Sprint(m["balance"])
			}
		}
		return conversions, balance
	}
	if c, bal := money(x); c != 0 || bal != "0" {
		t.Errorf("X's numbers in A's program: %v conversions, balance %s", c, bal)
	}
	if c, bal := money(yTok); c != 1 || bal == "0" || bal == "" {
		t.Errorf("Y's numbers in A's program: %v conversions, balance %s", c, bal)
	}
	e.must(t, 200, req{method: "POST", path: "/api/v1/partner/notifications/read-all", token: x})
	if n := st.count(t, `SELECT count(*) FROM notifications WHERE id = $1 AND read_at IS NULL`, yNote); n != 1 {
		t.Errorf("X's read-all marked Y's notification read")
	}

	// Y's own answers show Y's rows, and still never the customer.
	yGot := map[string]string{}
	for _, path := range []string{
		"/api/v1/partner/programs", "/api/v1/partner/invites", "/api/v1/partner/programs/" + pa + "/links",
		"/api/v1/partner/programs/" + pa + "/stats?period=all", "/api/v1/partner/commissions?pageSize=100",
		"/api/v1/partner/balances", "/api/v1/partner/notifications",
	} {
		rep := e.must(t, 200, req{method: "GET", path: path, token: yTok})
		customer("partner Y", rep)
		yGot[path] = string(rep.Raw)
	}
	if !strings.Contains(yGot["/api/v1/partner/programs/"+pa+"/links"], y.Code) ||
		!strings.Contains(yGot["/api/v1/partner/commissions?pageSize=100"], `"id":`+commission+`,`) ||
		!strings.Contains(yGot["/api/v1/partner/invites"], `"id":`+yInvite+`,`) ||
		!strings.Contains(yGot["/api/v1/partner/notifications"], "Y portal note") {
		t.Errorf("Y does not see its own rows: %v", yGot)
	}

	if after := snapshot(t, st, b.ProgramID); after != before {
		t.Errorf("B's data changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	sc.note("%d calls of partner X on partner Y's invites, notifications and B's program refused; no partner answer shows Y's rows or the customer's email or key", p.refused)
}
