package reliability

import (
	"strings"
	"testing"
	"time"
)

// TestIsolationCommissionReview: the brand's commission review and audit
// routes (issue 24) keep workspaces apart. A's owner, admin and member
// reach none of B's commissions or audit log: B's listing, its CSV, B's
// audit log and the approval or rejection of B's commissions are refused
// with 403 (not a member of B's workspace); B's commission named through
// A's own program is a 404 (a member, who may not write, is refused
// first); A's listing filtered on B's partner and A's audit log hold
// nothing of B; a program key is no dashboard token (401). B's rows are
// the same before and after.
func TestIsolationCommissionReview(t *testing.T) {
	t.Parallel()
	sc := report(t, "isolation/commission-review")
	st := sharedStack(t)
	e := st.startEdge(t, nil)
	st.startWorker(t, []string{"--queues", "clicks", "--scheduler=false", "--concurrency", "2"}, nil)
	a, b := mustWorld(t, e.client, nil), mustWorld(t, e.client, nil)
	pa, pb := itoa(a.ProgramID), itoa(b.ProgramID)

	// B: two pending commissions, one rejected by B's owner (an audit row).
	clicks := []string{mustClick(t, e.client, a), mustClick(t, e.client, b), mustClick(t, e.client, b)}
	st.waitCount(t, len(clicks), time.Minute, `SELECT count(*) FROM clicks`)
	sale := func(w world, txn, click string) int64 {
		return num(e.must(t, 200, req{method: "POST", path: "/api/v1/track/sale", token: w.LiveKey,
			body: map[string]any{"transaction_id": txn, "amount_cents": 5000, "click_id": click}}).Body["commission_id"])
	}
	sale(a, "txn-a-0", clicks[0])
	bc := []string{itoa(sale(b, "txn-b-0", clicks[1])), itoa(sale(b, "txn-b-1", clicks[2]))}
	e.must(t, 200, req{method: "POST", path: "/api/v1/programs/" + pb + "/commissions/" + bc[1] + "/reject", token: b.OwnerToken,
		body: map[string]any{"reason": "b-reason"}})

	users := workspaceUsers(t, e, a, "review")

	before := snapshot(t, st, b.ProgramID)
	p := &prober{t: t, e: e, leaks: []string{"txn-b-", "b-reason"}}
	probe := p.probe
	reject := map[string]any{"reason": "stolen"}
	for who, tok := range users {
		// B's program by its own id: not a member of B's workspace.
		for _, r := range []req{
			{method: "GET", path: "/api/v1/programs/" + pb + "/commissions"},
			{method: "GET", path: "/api/v1/programs/" + pb + "/commissions?format=csv"},
			{method: "GET", path: "/api/v1/programs/" + pb + "/commissions?status=rejected&partner_id=" + itoa(b.PartnerID)},
			{method: "GET", path: "/api/v1/programs/" + pb + "/audit"},
			{method: "GET", path: "/api/v1/programs/" + pb + "/audit?action=commission.rejected&subject_type=commission"},
			{method: "POST", path: "/api/v1/programs/" + pb + "/commissions/" + bc[0] + "/approve"},
			{method: "POST", path: "/api/v1/programs/" + pb + "/commissions/" + bc[0] + "/reject", body: reject},
		} {
			r.token = tok
			probe(who, r, 403)
		}
		// B's commissions through A's own program: no such commission.
		write := []int{404}
		if who == "member of A" {
			write = []int{403}
		}
		for _, cid := range bc {
			probe(who, req{method: "POST", path: "/api/v1/programs/" + pa + "/commissions/" + cid + "/approve", token: tok}, write...)
			probe(who, req{method: "POST", path: "/api/v1/programs/" + pa + "/commissions/" + cid + "/reject", token: tok, body: reject}, write...)
		}
		// A's listing on B's partner, A's export and A's audit log hold nothing of B.
		rep := e.must(t, 200, req{method: "GET", path: "/api/v1/programs/" + pa + "/commissions?partner_id=" + itoa(b.PartnerID), token: tok})
		if d, _ := rep.Body["data"].([]any); len(d) != 0 {
			t.Errorf("%s: A's listing on B's partner: %s", who, rep.Raw)
		}
		for _, path := range []string{"/api/v1/programs/" + pa + "/commissions?format=csv", "/api/v1/programs/" + pa + "/audit"} {
			rep := e.must(t, 200, req{method: "GET", path: path, token: tok})
			if strings.Contains(string(rep.Raw), "txn-b-") || strings.Contains(string(rep.Raw), "b-reason") {
				t.Errorf("%s: %s shows B's data: %s", who, path, rep.Raw)
			}
		}
	}
	// Keys are not dashboard tokens.
	for _, tok := range []string{a.LiveKey, a.TestKey} {
		probe("A's program key", req{method: "GET", path: "/api/v1/programs/" + pb + "/commissions", token: tok}, 401)
		probe("A's program key", req{method: "GET", path: "/api/v1/programs/" + pb + "/audit", token: tok}, 401)
		probe("A's program key", req{method: "POST", path: "/api/v1/programs/" + pb + "/commissions/" + bc[0] + "/reject", token: tok, body: reject}, 401)
	}

	if after := snapshot(t, st, b.ProgramID); after != before {
		t.Errorf("B's data changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	sc.note("%d attempts on B's commissions and audit log by A's owner, admin, member and keys refused; B's rows unchanged", p.refused)
}
