package reliability

import (
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ingest/oidc/testissuer"
)

// signInPartnerAt signs the partner of email in at the edge through the
// test issuer and returns its partner token.
func signInPartnerAt(t *testing.T, e *edge, iss *testissuer.Issuer, sub, email string) string {
	t.Helper()
	tok := e.must(t, 200, req{method: "POST", path: "/api/v1/partner/session",
		body: map[string]any{"id_token": iss.Token(t, sub, email)}}).data()["token"].(string)
	secret("partner token", tok)
	return tok
}

// approvedBalance gives w's partner approved commissions through the
// edge (sales on fresh clicks, approved by the brand) and returns the
// program balance they make, in minor units.
func approvedBalance(t *testing.T, st *stack, e *edge, w world, n int, tag string) int64 {
	t.Helper()
	clicks := make([]string, n)
	for i := range clicks {
		clicks[i] = mustClick(t, e.client, w)
	}
	st.waitCount(t, n, time.Minute, `SELECT count(*) FROM clicks WHERE program_id = $1`, w.ProgramID)
	for i, click := range clicks {
		cid := num(e.must(t, 200, req{method: "POST", path: "/api/v1/track/sale", token: w.LiveKey,
			body: map[string]any{"transaction_id": tag + "-" + itoa(int64(i)), "amount_cents": 50000, "click_id": click}}).Body["commission_id"])
		e.must(t, 200, req{method: "POST", path: "/api/v1/programs/" + itoa(w.ProgramID) + "/commissions/" + itoa(cid) + "/approve", token: w.OwnerToken})
	}
	var bal int64
	if err := st.db.QueryRow(`SELECT COALESCE(SUM(amount_minor), 0) FROM balance_entries WHERE partner_id = $1 AND program_id = $2`,
		w.PartnerID, w.ProgramID).Scan(&bal); err != nil {
		t.Fatal(err)
	}
	return bal
}

// TestRacePayouts: 20 payout requests for one partner at the same moment,
// the brand's runs and the partner's own requests mixed, through the real
// edge. Exactly one payout is made, of the whole approved balance; the
// balance is exactly 0 after it; the payout entries sum to minus the
// payout; every other call answers without a payout (a run that skips
// the partner, or the partner's 409 nothing to pay).
func TestRacePayouts(t *testing.T) {
	t.Parallel()
	sc := report(t, "race/payouts")
	st := sharedStack(t)
	iss := testissuer.New(t)
	e := st.startEdge(t, map[string]string{"OIDC_ISSUER_URL": iss.URL, "OIDC_CLIENT_ID": testissuer.ClientID})
	st.startWorker(t, []string{"--queues", "clicks", "--scheduler=false", "--concurrency", "2"}, nil)
	w := mustWorld(t, e.client, nil) // 20% of 500.00: 100.00 a sale
	bal := approvedBalance(t, st, e, w, 3, "race-payout")
	if bal != 30000 {
		t.Fatalf("approved balance %d, want 30000", bal)
	}
	var email string
	st.db.QueryRow(`SELECT email FROM partners WHERE id = $1`, w.PartnerID).Scan(&email)
	ptok := signInPartnerAt(t, e, iss, "race-partner", email)

	const callers = 20
	reps := make([]reply, callers)
	together(callers, func(i int) {
		r := req{method: "POST", path: "/api/v1/programs/" + itoa(w.ProgramID) + "/payouts", token: w.OwnerToken}
		if i%2 == 1 {
			r = req{method: "POST", path: "/api/v1/partner/programs/" + itoa(w.ProgramID) + "/payouts", token: ptok}
		}
		rep, err := e.call(r)
		if err != nil {
			t.Errorf("caller %d: %v", i, err)
		}
		reps[i] = rep
	})
	var answers tally
	made := 0
	for i, rep := range reps {
		answers.add(rep.Status)
		switch {
		case i%2 == 0 && rep.Status == 200:
			made += len(rep.data()["created"].([]any))
		case i%2 == 1 && rep.Status == 201:
			made++
		case i%2 == 1 && rep.Status == 409:
		default:
			t.Errorf("caller %d: %s", i, rep)
		}
	}
	if made != 1 {
		t.Errorf("%d payouts made by the answers, want 1 (%s)", made, &answers)
	}
	if n := st.count(t, `SELECT count(*) FROM payouts WHERE partner_id = $1`, w.PartnerID); n != 1 {
		t.Fatalf("%d payouts stored, want 1", n)
	}
	var amount, after, entries int64
	st.db.QueryRow(`SELECT amount_minor FROM payouts WHERE partner_id = $1`, w.PartnerID).Scan(&amount)
	st.db.QueryRow(`SELECT COALESCE(SUM(amount_minor), 0) FROM balance_entries WHERE partner_id = $1 AND program_id = $2`,
		w.PartnerID, w.ProgramID).Scan(&after)
	st.db.QueryRow(`SELECT COALESCE(SUM(amount_minor), 0) FROM balance_entries WHERE partner_id = $1 AND kind = 'payout'`,
		w.PartnerID).Scan(&entries)
	if amount != bal || after != 0 || entries != -bal {
		t.Fatalf("payout %d, balance after %d, payout entries %d; want %d, 0, %d", amount, after, entries, bal, -bal)
	}
	sc.note("%d concurrent payout calls (brand runs and partner requests): one payout of the whole %d, balance 0 after (%s)",
		callers, bal, &answers)
}
