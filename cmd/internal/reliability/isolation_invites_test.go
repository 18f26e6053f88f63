package reliability

import (
	"strings"
	"testing"
)

// TestIsolationInvites: the invite, application and public page routes
// (issue 24) keep workspaces apart. A's owner, admin and member reach
// none of B's invites or applications: every brand route on B's program
// is refused with 403 (not a member of B's workspace); B's invite and
// application ids through A's own program are 404 (a member, who may not
// write, is refused first with 403); B's partner named in partner_ids of
// A's invite is skipped without its email, and B's group is a 400; A's
// listings show nothing of B's; program keys are no dashboard tokens
// (401). B's public page tells no ids, workspace or key. B's rows are the
// same before and after.
func TestIsolationInvites(t *testing.T) {
	t.Parallel()
	sc := report(t, "isolation/invites-applications")
	st := sharedStack(t)
	e := st.startEdge(t, nil)
	a, b := mustWorld(t, e.client, nil), mustWorld(t, e.client, nil)
	pa, pb := itoa(a.ProgramID), itoa(b.ProgramID)

	// B publishes its page, invites a partner and receives an application
	// on its public page.
	e.must(t, 200, req{method: "PATCH", path: "/api/v1/programs/" + pb + "/settings", token: b.OwnerToken,
		body: map[string]any{"slug": "brand-b-" + pb}})
	const bInvitee, bApplicant = "b-invitee@isolation.example", "b-applicant@isolation.example"
	inv := e.must(t, 200, req{method: "POST", path: "/api/v1/programs/" + pb + "/invites", token: b.OwnerToken,
		body: map[string]any{"emails": []string{bInvitee}}}).data()
	bInvite := itoa(num(inv["invited"].([]any)[0].(map[string]any)["id"]))
	e.must(t, 202, req{method: "POST", path: "/api/v1/public/programs/brand-b-" + pb + "/applications",
		header: map[string]string{"X-Forwarded-For": nextIP()}, body: map[string]any{"name": "B applicant", "email": bApplicant}})
	apps := e.must(t, 200, req{method: "GET", path: "/api/v1/programs/" + pb + "/applications", token: b.OwnerToken})
	bApp := itoa(num(apps.Body["data"].([]any)[0].(map[string]any)["id"]))
	var bGroup int64
	if err := st.db.QueryRow(`SELECT id FROM partner_groups WHERE program_id = $1 AND is_default`, b.ProgramID).Scan(&bGroup); err != nil {
		t.Fatal(err)
	}

	users := workspaceUsers(t, e, a, "invites")

	before := snapshot(t, st, b.ProgramID)
	p := &prober{t: t, e: e, leaks: []string{bInvitee, bApplicant}}
	probe := p.probe
	for who, tok := range users {
		for _, r := range []req{
			{method: "POST", path: "/api/v1/programs/" + pb + "/invites", body: map[string]any{"emails": []string{"x@a.example"}}},
			{method: "GET", path: "/api/v1/programs/" + pb + "/invites"},
			{method: "GET", path: "/api/v1/programs/" + pb + "/invites?status=pending&pageSize=100"},
			{method: "POST", path: "/api/v1/programs/" + pb + "/invites/" + bInvite + "/resend"},
			{method: "DELETE", path: "/api/v1/programs/" + pb + "/invites/" + bInvite},
			{method: "GET", path: "/api/v1/programs/" + pb + "/applications"},
			{method: "GET", path: "/api/v1/programs/" + pb + "/applications?status=pending"},
			{method: "POST", path: "/api/v1/programs/" + pb + "/applications/" + bApp + "/approve", body: map[string]any{}},
			{method: "POST", path: "/api/v1/programs/" + pb + "/applications/" + bApp + "/reject", body: map[string]any{"reason": "x"}},
		} {
			r.token = tok
			probe(who, r, 403)
		}
		// B's ids through A's own program.
		notFound, invalid := []int{404}, []int{400}
		if who == "member of A" {
			notFound, invalid = []int{403}, []int{403}
		}
		probe(who, req{method: "POST", path: "/api/v1/programs/" + pa + "/invites/" + bInvite + "/resend", token: tok}, notFound...)
		probe(who, req{method: "DELETE", path: "/api/v1/programs/" + pa + "/invites/" + bInvite, token: tok}, notFound...)
		probe(who, req{method: "POST", path: "/api/v1/programs/" + pa + "/applications/" + bApp + "/approve", token: tok, body: map[string]any{}}, notFound...)
		probe(who, req{method: "POST", path: "/api/v1/programs/" + pa + "/applications/" + bApp + "/reject", token: tok, body: map[string]any{}}, notFound...)
		probe(who, req{method: "POST", path: "/api/v1/programs/" + pa + "/invites", token: tok,
			body: map[string]any{"emails": []string{"g@a.example"}, "group_id": bGroup}}, invalid...)
		// B's partner named by id in A's invite: skipped, its email untold.
		if who != "member of A" {
			d := e.must(t, 200, req{method: "POST", path: "/api/v1/programs/" + pa + "/invites", token: tok,
				body: map[string]any{"partner_ids": []int64{b.PartnerID}}}).data()
			skipped, _ := d["skipped"].([]any)
			if len(d["invited"].([]any)) != 0 || len(skipped) != 1 || skipped[0].(map[string]any)["email"] != nil ||
				skipped[0].(map[string]any)["reason"] != "unknown_partner" {
				t.Errorf("%s: B's partner in A's invite: %v", who, d)
			}
			p.refused++
		}
		// A's listings hold nothing of B's.
		for _, path := range []string{"/api/v1/programs/" + pa + "/invites?pageSize=100", "/api/v1/programs/" + pa + "/applications?pageSize=100"} {
			rep := e.must(t, 200, req{method: "GET", path: path, token: tok})
			if d, _ := rep.Body["data"].([]any); len(d) != 0 {
				t.Errorf("%s: A's listing %s: %s", who, path, rep.Raw)
			}
		}
	}
	for _, tok := range []string{a.LiveKey, a.TestKey} {
		probe("A's program key", req{method: "GET", path: "/api/v1/programs/" + pb + "/invites", token: tok}, 401)
		probe("A's program key", req{method: "GET", path: "/api/v1/programs/" + pb + "/applications", token: tok}, 401)
		probe("A's program key", req{method: "POST", path: "/api/v1/programs/" + pb + "/applications/" + bApp + "/approve", token: tok, body: map[string]any{}}, 401)
	}
	// B's public page: its terms, nothing private.
	page := e.must(t, 200, req{method: "GET", path: "/api/v1/public/programs/brand-b-" + pb, header: map[string]string{"X-Forwarded-For": nextIP()}})
	raw := string(page.Raw)
	for _, private := range []string{`"id"`, `"workspace_id"`, `"program_id"`, `"api_token_masked"`, b.LiveKey, b.OwnerEmail, bApplicant, bInvitee} {
		if strings.Contains(raw, private) {
			t.Errorf("B's public page shows %s: %s", private, raw)
		}
	}

	if after := snapshot(t, st, b.ProgramID); after != before {
		t.Errorf("B's data changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	sc.note("%d attempts on B's invites and applications by A's owner, admin, member and keys refused; B's rows unchanged", p.refused)
}
