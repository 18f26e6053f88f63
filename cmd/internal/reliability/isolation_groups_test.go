package reliability

import (
	"testing"
)

// TestIsolationGroups: the group routes and the partner PATCH (issue 24)
// keep workspaces apart. A's owner, admin and member reach none of B's
// groups or partners: B's group listing, a group created in B, B's group
// and partner changes are refused with 403 (not a member of B's
// workspace); B's group or partner named through A's own program is a 404,
// and B's group given as A's partner's group_id a 400; A's partner listing
// filtered on B's group is empty; a program key is no dashboard token
// (401). B's rows are the same before and after, and B's link still takes
// clicks (nothing suspended its partner).
func TestIsolationGroups(t *testing.T) {
	t.Parallel()
	sc := report(t, "isolation/groups")
	st := sharedStack(t)
	e := st.startEdge(t, nil)
	a, b := mustWorld(t, e.client, nil), mustWorld(t, e.client, nil)
	pa, pb := itoa(a.ProgramID), itoa(b.ProgramID)

	// B's owner makes a group of its own; B's default group is the other.
	bGroupID := num(e.must(t, 201, req{method: "POST", path: "/api/v1/programs/" + pb + "/groups", token: b.OwnerToken,
		body: map[string]any{"name": "B VIP " + pb, "commission_rate": 20}}).data()["id"])
	bGroup := itoa(bGroupID)
	bDefault := itoa(int64(st.count(t, `SELECT id FROM partner_groups WHERE program_id = $1 AND is_default`, b.ProgramID)))

	users := workspaceUsers(t, e, a, "groups")

	before := snapshot(t, st, b.ProgramID)
	p := &prober{t: t, e: e, leaks: []string{"B VIP", b.Code}}
	probe := p.probe
	for who, tok := range users {
		// B's program by its own id: not a member of B's workspace.
		for _, r := range []req{
			{method: "GET", path: "/api/v1/programs/" + pb + "/groups"},
			{method: "POST", path: "/api/v1/programs/" + pb + "/groups", body: map[string]any{"name": "stolen"}},
			{method: "PATCH", path: "/api/v1/programs/" + pb + "/groups/" + bGroup, body: map[string]any{"commission_rate": 99}},
			{method: "PATCH", path: "/api/v1/programs/" + pb + "/groups/" + bDefault, body: map[string]any{"name": "stolen"}},
			{method: "PATCH", path: "/api/v1/programs/" + pb + "/partners/" + itoa(b.PartnerID), body: map[string]any{"status": "suspended"}},
			{method: "PATCH", path: "/api/v1/programs/" + pb + "/partners/" + itoa(b.PartnerID), body: map[string]any{"group_id": bGroupID}},
		} {
			r.token = tok
			probe(who, r, 403)
		}
		// B's ids through A's own program: no such group, no such partner,
		// not a group of A (a member, who may not write, is refused first).
		write, invalid := []int{404}, []int{400}
		if who == "member of A" {
			write, invalid = []int{403}, []int{403}
		}
		probe(who, req{method: "PATCH", path: "/api/v1/programs/" + pa + "/groups/" + bGroup, token: tok,
			body: map[string]any{"commission_rate": 99}}, write...)
		probe(who, req{method: "PATCH", path: "/api/v1/programs/" + pa + "/groups/" + bDefault, token: tok,
			body: map[string]any{"name": "stolen"}}, write...)
		probe(who, req{method: "PATCH", path: "/api/v1/programs/" + pa + "/partners/" + itoa(b.PartnerID), token: tok,
			body: map[string]any{"status": "suspended"}}, write...)
		probe(who, req{method: "PATCH", path: "/api/v1/programs/" + pa + "/partners/" + itoa(a.PartnerID), token: tok,
			body: map[string]any{"group_id": bGroupID}}, invalid...)
		// A's listing filtered on B's group is empty.
		rep := e.must(t, 200, req{method: "GET", path: "/api/v1/programs/" + pa + "/partners?group_id=" + bGroup, token: tok})
		if d, _ := rep.Body["data"].([]any); len(d) != 0 {
			t.Errorf("%s: A's listing on B's group: %s", who, rep.Raw)
		}
	}
	// Keys are not dashboard tokens.
	for _, tok := range []string{a.LiveKey, a.TestKey} {
		probe("A's program key", req{method: "GET", path: "/api/v1/programs/" + pb + "/groups", token: tok}, 401)
		probe("A's program key", req{method: "PATCH", path: "/api/v1/programs/" + pb + "/partners/" + itoa(b.PartnerID), token: tok,
			body: map[string]any{"status": "suspended"}}, 401)
	}

	if after := snapshot(t, st, b.ProgramID); after != before {
		t.Errorf("B's data changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	// B's partner still takes clicks: nothing suspended it.
	mustClick(t, e.client, b)
	sc.note("%d attempts on B's groups and partners by A's owner, admin, member and keys refused; B's rows unchanged", p.refused)
}
