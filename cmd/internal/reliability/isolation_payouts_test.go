package reliability

import (
	"strings"
	"testing"

	"github.com/partnertrack/partnertrack/ingest/oidc/testissuer"
)

// TestIsolationPayouts: payouts and payout methods (issue 26) keep
// workspaces and partners apart. A's owner, admin and member reach none
// of B's payouts: B's listing, CSV, due list, payout run and the marks
// of B's payout are refused with 403; B's payout named through A's own
// program is a 404 (a member, who may not write, is refused first). A's
// partner sees none of B's payouts, cannot ask for a payout in B's
// program (404) and never sees B's partner's payout method; dashboard
// tokens open no partner route and partner tokens no brand route (401).
// B's rows and B's partner's payout method are the same before and after.
func TestIsolationPayouts(t *testing.T) {
	t.Parallel()
	sc := report(t, "isolation/payouts")
	st := sharedStack(t)
	iss := testissuer.New(t)
	e := st.startEdge(t, map[string]string{"OIDC_ISSUER_URL": iss.URL, "OIDC_CLIENT_ID": testissuer.ClientID})
	st.startWorker(t, []string{"--queues", "clicks", "--scheduler=false", "--concurrency", "2"}, nil)
	a, b := mustWorld(t, e.client, nil), mustWorld(t, e.client, nil)
	pa, pb := itoa(a.ProgramID), itoa(b.ProgramID)
	approvedBalance(t, st, e, a, 1, "iso-payout-a")
	approvedBalance(t, st, e, b, 1, "iso-payout-b")
	emailOf := func(id int64) string {
		var s string
		st.db.QueryRow(`SELECT email FROM partners WHERE id = $1`, id).Scan(&s)
		return s
	}
	partnerA := signInPartnerAt(t, e, iss, "iso-payout-a", emailOf(a.PartnerID))
	partnerB := signInPartnerAt(t, e, iss, "iso-payout-b", emailOf(b.PartnerID))

	// B: a payout method, a paid payout with its reference.
	e.must(t, 200, req{method: "PUT", path: "/api/v1/partner/payout-method", token: partnerB,
		body: map[string]any{"method": "paypal", "details": map[string]any{"email": "b-secret@paypal.example"}}})
	run := e.must(t, 200, req{method: "POST", path: "/api/v1/programs/" + pb + "/payouts", token: b.OwnerToken}).data()
	bp := itoa(num(run["created"].([]any)[0].(map[string]any)["id"]))
	e.must(t, 200, req{method: "POST", path: "/api/v1/programs/" + pb + "/payouts/" + bp + "/mark-paid", token: b.OwnerToken,
		body: map[string]any{"external_reference": "b-ref-secret"}})

	users := workspaceUsers(t, e, a, "payouts")
	methodOf := func(id int64) string {
		var s string
		st.db.QueryRow(`SELECT method || sealed || masked::text FROM payout_methods WHERE partner_id = $1`, id).Scan(&s)
		return s
	}
	before, methodBefore := snapshot(t, st, b.ProgramID), methodOf(b.PartnerID)
	p := &prober{t: t, e: e, leaks: []string{"b-ref-secret", "b-secret@paypal.example", "b***@paypal.example", emailOf(b.PartnerID)}}
	probe := p.probe
	paid := map[string]any{"external_reference": "stolen"}
	failed := map[string]any{"reason": "stolen"}
	for who, tok := range users {
		for _, r := range []req{
			{method: "GET", path: "/api/v1/programs/" + pb + "/payouts"},
			{method: "GET", path: "/api/v1/programs/" + pb + "/payouts?format=csv"},
			{method: "GET", path: "/api/v1/programs/" + pb + "/payouts/due"},
			{method: "POST", path: "/api/v1/programs/" + pb + "/payouts"},
			{method: "POST", path: "/api/v1/programs/" + pb + "/payouts", body: map[string]any{"partner_ids": []int64{b.PartnerID}}},
			{method: "POST", path: "/api/v1/programs/" + pb + "/payouts/" + bp + "/mark-processing"},
			{method: "POST", path: "/api/v1/programs/" + pb + "/payouts/" + bp + "/mark-paid", body: paid},
			{method: "POST", path: "/api/v1/programs/" + pb + "/payouts/" + bp + "/mark-failed", body: failed},
		} {
			r.token = tok
			probe(who, r, 403)
		}
		write := []int{404}
		if who == "member of A" {
			write = []int{403}
		}
		probe(who, req{method: "POST", path: "/api/v1/programs/" + pa + "/payouts/" + bp + "/mark-processing", token: tok}, write...)
		probe(who, req{method: "POST", path: "/api/v1/programs/" + pa + "/payouts/" + bp + "/mark-failed", token: tok, body: failed}, write...)
		// A's run naming B's partner pays nothing of B.
		if who != "member of A" {
			probe(who, req{method: "POST", path: "/api/v1/programs/" + pa + "/payouts", token: tok,
				body: map[string]any{"partner_ids": []int64{b.PartnerID}}}, 200)
		}
		// A's listing on B's partner holds nothing.
		probe(who, req{method: "GET", path: "/api/v1/programs/" + pa + "/payouts?partner_id=" + itoa(b.PartnerID), token: tok}, 200)
		// A dashboard token is no partner token.
		probe(who, req{method: "GET", path: "/api/v1/partner/payouts", token: tok}, 401)
		probe(who, req{method: "GET", path: "/api/v1/partner/payout-method", token: tok}, 401)
	}
	// A's partner: its own payouts only, nothing in B's program, no method of B's.
	probe("partner of A", req{method: "GET", path: "/api/v1/partner/payouts", token: partnerA}, 200)
	probe("partner of A", req{method: "POST", path: "/api/v1/partner/programs/" + pb + "/payouts", token: partnerA}, 404)
	probe("partner of A", req{method: "POST", path: "/api/v1/partner/programs/" + pb + "/payouts", token: partnerA, body: map[string]any{"amount": 1}}, 404)
	probe("partner of A", req{method: "GET", path: "/api/v1/partner/payout-method", token: partnerA}, 404)
	probe("partner of A", req{method: "DELETE", path: "/api/v1/partner/payout-method", token: partnerA}, 404)
	// A partner token is no dashboard token.
	for _, path := range []string{"/api/v1/programs/" + pb + "/payouts", "/api/v1/programs/" + pa + "/payouts", "/api/v1/programs/" + pb + "/payouts/due"} {
		probe("partner of A", req{method: "GET", path: path, token: partnerA}, 401)
	}
	probe("partner of A", req{method: "POST", path: "/api/v1/programs/" + pb + "/payouts/" + bp + "/mark-failed", token: partnerA, body: failed}, 401)
	// Program keys are neither.
	for _, tok := range []string{a.LiveKey, a.TestKey} {
		probe("A's program key", req{method: "GET", path: "/api/v1/programs/" + pb + "/payouts", token: tok}, 401)
		probe("A's program key", req{method: "GET", path: "/api/v1/partner/payouts", token: tok}, 401)
	}
	rep := e.must(t, 200, req{method: "GET", path: "/api/v1/partner/payouts", token: partnerA})
	if strings.Contains(string(rep.Raw), "\"id\":"+bp+",") {
		t.Errorf("partner of A lists B's payout: %s", rep.Raw)
	}

	if after := snapshot(t, st, b.ProgramID); after != before {
		t.Errorf("B's data changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if after := methodOf(b.PartnerID); after != methodBefore {
		t.Errorf("B's partner's payout method changed")
	}
	sc.note("%d attempts on B's payouts and payout method by A's owner, admin, member, partner and keys refused; B's rows unchanged", p.refused)
}
