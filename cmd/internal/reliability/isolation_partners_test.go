package reliability

import (
	"strings"
	"testing"
)

// TestIsolationProgramPartners: a dashboard user of workspace A (owner or
// member) reads nothing of workspace B's partners: B's listing, its CSV
// export and B's partner are refused with 403, and B's partner read
// through A's own program is a 404; A's listing and export show A's
// partner only. B's rows stay as they were.
func TestIsolationProgramPartners(t *testing.T) {
	t.Parallel()
	sc := report(t, "isolation/program-partners")
	st := sharedStack(t)
	e := st.startEdge(t, nil)
	a, b := mustWorld(t, e.client, nil), mustWorld(t, e.client, nil)
	mustClick(t, e.client, b)

	uid := num(e.must(t, 201, req{method: "POST", path: "/api/operator/v1/workspaces/" + itoa(a.WorkspaceID) + "/members", token: opToken,
		body: map[string]any{"email": "member@partners-a.example", "role": "member"}}).data()["user_id"])
	member := e.must(t, 201, req{method: "POST", path: "/api/operator/v1/users/" + itoa(uid) + "/sessions", token: opToken}).data()["token"].(string)
	secret("dashboard token", member)
	users := map[string]string{"owner of A": a.OwnerToken, "member of A": member}

	before := snapshot(t, st, b.ProgramID)
	pa, pb, bPartner := itoa(a.ProgramID), itoa(b.ProgramID), itoa(b.PartnerID)
	refused := 0
	for who, tok := range users {
		for _, tc := range []struct {
			path   string
			status int
		}{
			{"/api/v1/programs/" + pb + "/partners", 403},
			{"/api/v1/programs/" + pb + "/partners?format=csv", 403},
			{"/api/v1/programs/" + pb + "/partners?q=partner&pageSize=100", 403},
			{"/api/v1/programs/" + pb + "/partners/" + bPartner, 403},
			{"/api/v1/programs/" + pa + "/partners/" + bPartner, 404},
		} {
			rep, err := e.call(req{method: "GET", path: tc.path, token: tok})
			if err != nil || rep.Status != tc.status {
				t.Errorf("%s: GET %s: %v %v, want %d", who, tc.path, rep, err, tc.status)
				continue
			}
			if strings.Contains(string(rep.Raw), b.Code) || strings.Contains(string(rep.Raw), `"id":`+bPartner+`,`) {
				t.Errorf("%s: GET %s shows B's data: %s", who, tc.path, rep.Raw)
			}
			refused++
		}
		// A's own listing and export hold A's partner only.
		list := e.must(t, 200, req{method: "GET", path: "/api/v1/programs/" + pa + "/partners", token: tok})
		rows, _ := list.Body["data"].([]any)
		if len(rows) != 1 || num(rows[0].(map[string]any)["id"]) != a.PartnerID {
			t.Errorf("%s: A's listing: %s", who, list.Raw)
		}
		csv := e.must(t, 200, req{method: "GET", path: "/api/v1/programs/" + pa + "/partners?format=csv", token: tok})
		if lines := strings.Split(strings.TrimSpace(string(csv.Raw)), "\n"); len(lines) != 2 ||
			!strings.HasPrefix(lines[1], itoa(a.PartnerID)+",") {
			t.Errorf("%s: A's export: %s", who, csv.Raw)
		}
	}
	if after := snapshot(t, st, b.ProgramID); after != before {
		t.Errorf("B's data changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	sc.note("%d reads of B's partners by A's owner and member refused (403, or 404 through A's program); B's rows unchanged", refused)
}
