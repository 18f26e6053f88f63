package reliability

import (
	"strings"
	"testing"
)

// TestIsolationAgentKeys: an agent key is confined to its workspace and
// its scopes. It lists its workspace's programs only; another workspace's
// program is neither read nor changed (404 or 403) and stays as it was; a
// key without programs:write cannot update (403 naming the scope); a
// program key, a dashboard token or the operator token is not an agent
// key (401).
func TestIsolationAgentKeys(t *testing.T) {
	t.Parallel()
	sc := report(t, "isolation/agent-keys")
	st := sharedStack(t)
	e := st.startEdge(t, nil)
	a, b := mustWorld(t, e.client, nil), mustWorld(t, e.client, nil)
	agentKey := func(w world, scopes ...string) string {
		k := e.must(t, 201, req{method: "POST", path: "/api/operator/v1/agent-keys", token: opToken,
			body: map[string]any{"workspace_id": w.WorkspaceID, "scopes": scopes}}).data()["key"].(string)
		secret("agent key", k)
		return k
	}
	rw, ro := agentKey(a, "programs:read", "programs:write"), agentKey(a, "programs:read")
	before := snapshot(t, st, b.ProgramID)
	pa, pb := itoa(a.ProgramID), itoa(b.ProgramID)

	list := e.must(t, 200, req{method: "GET", path: "/api/agent/v1/programs", token: rw})
	if strings.Contains(string(list.Raw), b.Code) || strings.Contains(string(list.Raw), `"id":`+pb+`,`) || !strings.Contains(string(list.Raw), `"id":`+pa) {
		t.Errorf("A's agent key lists: %s", list.Raw)
	}
	refused := 0
	for _, tc := range []struct {
		desc string
		r    req
		want []int
	}{
		{"read B's program", req{method: "GET", path: "/api/agent/v1/programs/" + pb, token: rw}, []int{403, 404}},
		{"update B's program", req{method: "PATCH", path: "/api/agent/v1/programs/" + pb, token: rw, body: map[string]any{"name": "Taken"}}, []int{403, 404}},
		{"update without programs:write", req{method: "PATCH", path: "/api/agent/v1/programs/" + pa, token: ro, body: map[string]any{"name": "x"}}, []int{403}},
		{"a program key", req{method: "GET", path: "/api/agent/v1/programs", token: a.LiveKey}, []int{401}},
		{"a dashboard token", req{method: "GET", path: "/api/agent/v1/programs", token: a.OwnerToken}, []int{401}},
		{"the operator token", req{method: "GET", path: "/api/agent/v1/programs", token: opToken}, []int{401}},
		{"a made-up agent key", req{method: "GET", path: "/api/agent/v1/programs", token: "agt_" + strings.Repeat("x", 32)}, []int{401}},
	} {
		rep, err := e.call(tc.r)
		if err != nil || !containsInt(tc.want, rep.Status) {
			t.Errorf("%s: %v %v, want one of %v", tc.desc, rep, err, tc.want)
			continue
		}
		if tc.desc == "update without programs:write" && !strings.Contains(string(rep.Raw), "programs:write") {
			t.Errorf("%s: the 403 does not name the scope: %s", tc.desc, rep.Raw)
		}
		refused++
	}
	if after := snapshot(t, st, b.ProgramID); after != before {
		t.Errorf("B's data changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	sc.note("%d attempts of A's agent keys outside their workspace and scopes refused; B unchanged", refused)
}

func containsInt(list []int, n int) bool {
	for _, x := range list {
		if x == n {
			return true
		}
	}
	return false
}
