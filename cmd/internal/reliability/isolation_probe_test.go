package reliability

import (
	"strings"
	"testing"
)

// workspaceUsers returns dashboard tokens of w's owner and of an admin and
// a member added to w's workspace, by who they are ("owner of A", "admin
// of A", "member of A"); tag keeps their emails apart from other tests'.
func workspaceUsers(t *testing.T, e *edge, w world, tag string) map[string]string {
	t.Helper()
	users := map[string]string{"owner of A": w.OwnerToken}
	for _, role := range []string{"admin", "member"} {
		uid := num(e.must(t, 201, req{method: "POST", path: "/api/operator/v1/workspaces/" + itoa(w.WorkspaceID) + "/members", token: opToken,
			body: map[string]any{"email": role + "-" + tag + itoa(w.ProgramID) + "@a.example", "role": role}}).data()["user_id"])
		users[role+" of A"] = e.must(t, 201, req{method: "POST", path: "/api/operator/v1/users/" + itoa(uid) + "/sessions", token: opToken}).data()["token"].(string)
		secret("dashboard token", users[role+" of A"])
	}
	return users
}

// prober sends the calls another workspace must be refused: each must get
// one of the statuses wanted and show none of leaks (B's own values);
// refused counts those that did.
type prober struct {
	t       *testing.T
	e       *edge
	leaks   []string
	refused int
}

func (p *prober) probe(who string, r req, want ...int) {
	p.t.Helper()
	rep, err := p.e.call(r)
	if err != nil || !containsInt(want, rep.Status) {
		p.t.Errorf("%s: %s %s: %v %v, want one of %v", who, r.method, r.path, rep, err, want)
		return
	}
	raw := string(rep.Raw)
	for _, leak := range p.leaks {
		if strings.Contains(raw, leak) {
			p.t.Errorf("%s: %s %s shows B's data (%q): %s", who, r.method, r.path, leak, raw)
		}
	}
	p.refused++
}
