package reliability

import (
	"testing"
)

// TestIsolationBrandLinks: the brand's link routes (issue 24) keep
// workspaces apart. A's owner, admin and member reach none of B's links:
// B's listing, a link for B's partner and B's link changes are refused
// with 403 (not a member of B's workspace); B's link or B's partner named
// through A's own program is 404 or 400; A's listing filtered on B's
// partner is empty; a program key is no dashboard token (401). B's rows
// are the same before and after, and B's link still takes clicks.
func TestIsolationBrandLinks(t *testing.T) {
	t.Parallel()
	sc := report(t, "isolation/brand-links")
	st := sharedStack(t)
	e := st.startEdge(t, nil)
	a, b := mustWorld(t, e.client, nil), mustWorld(t, e.client, nil)
	pa, pb := itoa(a.ProgramID), itoa(b.ProgramID)

	// B's owner makes a second link through the brand's route.
	bLink := e.must(t, 201, req{method: "POST", path: "/api/v1/programs/" + pb + "/links", token: b.OwnerToken,
		body: map[string]any{"partner_id": b.PartnerID, "code": "b-brand-" + pb}}).data()
	bLinkID := itoa(num(bLink["id"]))

	users := workspaceUsers(t, e, a, "links")

	before := snapshot(t, st, b.ProgramID)
	p := &prober{t: t, e: e, leaks: []string{b.Code, "b-brand-"}}
	probe := p.probe
	for who, tok := range users {
		// B's program by its own id: not a member of B's workspace.
		for _, r := range []req{
			{method: "GET", path: "/api/v1/programs/" + pb + "/links"},
			{method: "GET", path: "/api/v1/programs/" + pb + "/links?status=active&partner_id=" + itoa(b.PartnerID)},
			{method: "POST", path: "/api/v1/programs/" + pb + "/links", body: map[string]any{"partner_id": b.PartnerID, "code": "stolen-" + pb}},
			{method: "PATCH", path: "/api/v1/programs/" + pb + "/links/" + itoa(b.LinkID), body: map[string]any{"status": "disabled"}},
			{method: "PATCH", path: "/api/v1/programs/" + pb + "/links/" + bLinkID, body: map[string]any{"status": "disabled"}},
		} {
			r.token = tok
			probe(who, r, 403)
		}
		// B's ids through A's own program: no such link, no such partner
		// (a member, who may not write, is refused first).
		write := []int{404}
		invalid := []int{400}
		if who == "member of A" {
			write, invalid = []int{403}, []int{403}
		}
		probe(who, req{method: "PATCH", path: "/api/v1/programs/" + pa + "/links/" + itoa(b.LinkID), token: tok,
			body: map[string]any{"status": "disabled"}}, write...)
		probe(who, req{method: "PATCH", path: "/api/v1/programs/" + pa + "/links/" + bLinkID, token: tok,
			body: map[string]any{"status": "disabled"}}, write...)
		probe(who, req{method: "POST", path: "/api/v1/programs/" + pa + "/links", token: tok,
			body: map[string]any{"partner_id": b.PartnerID, "code": "b-partner-in-a-" + pa}}, invalid...)
		// A's listing filtered on B's partner is empty.
		rep := e.must(t, 200, req{method: "GET", path: "/api/v1/programs/" + pa + "/links?partner_id=" + itoa(b.PartnerID), token: tok})
		if d, _ := rep.Body["data"].([]any); len(d) != 0 {
			t.Errorf("%s: A's listing on B's partner: %s", who, rep.Raw)
		}
	}
	// Keys are not dashboard tokens.
	for _, tok := range []string{a.LiveKey, a.TestKey} {
		probe("A's program key", req{method: "GET", path: "/api/v1/programs/" + pb + "/links", token: tok}, 401)
		probe("A's program key", req{method: "PATCH", path: "/api/v1/programs/" + pb + "/links/" + bLinkID, token: tok,
			body: map[string]any{"status": "disabled"}}, 401)
	}

	if after := snapshot(t, st, b.ProgramID); after != before {
		t.Errorf("B's data changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	// B's links still take clicks: nothing disabled them.
	mustClick(t, e.client, b)
	e.must(t, 200, req{method: "POST", path: "/api/v1/track/click", header: map[string]string{"X-Forwarded-For": nextIP()},
		body: map[string]any{"affiliate_url": "https://brand.example/?aff=b-brand-" + pb}})
	sc.note("%d attempts on B's links by A's owner, admin, member and keys refused; B's rows unchanged", p.refused)
}
