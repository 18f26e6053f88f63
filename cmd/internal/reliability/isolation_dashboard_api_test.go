package reliability

import (
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/notify/webhooktest"
)

// TestIsolationDashboardAPI: the web dashboard's API (issue 27) keeps
// workspaces apart. B's owner sends a test event, which the real worker
// delivers to B's receiver, signed, and B's delivery log shows. A's
// owner, admin and member reach none of it: B's readiness, B's delivery
// log and a test event to B's endpoint are refused with 403 (not a member
// of B's workspace); B's endpoint named through A's own program is a 404
// (a member, who may not use webhooks, is refused first); a program in
// B's workspace is a 404; A's program list holds none of B's. Keys are no
// dashboard tokens (401). B's rows are the same before and after, no
// other program appeared in B's workspace, and B's receiver got nothing
// more.
func TestIsolationDashboardAPI(t *testing.T) {
	t.Parallel()
	sc := report(t, "isolation/dashboard-api")
	st := sharedStack(t)
	st.extra = map[string]string{"WEBHOOK_ALLOW_PRIVATE_TARGETS": "true"} // the receiver listens on loopback
	e := st.startEdge(t, nil)
	worker := st.startWorker(t, []string{"--queues", "webhooks", "--scheduler=false", "--concurrency", "2"}, nil)
	a, b := mustWorld(t, e.client, nil), mustWorld(t, e.client, nil)
	pa, pb := itoa(a.ProgramID), itoa(b.ProgramID)

	// B: an endpoint on a receiver, and a test event delivered to it.
	rcv := webhooktest.NewReceiver(t)
	created := e.must(t, 201, req{method: "POST", path: "/api/v1/programs/" + pb + "/webhooks", token: b.OwnerToken,
		body: map[string]any{"url": rcv.URL + "/b-hook-secret-path", "events": []string{"sale.created"}}}).data()
	bHook, bSecret := itoa(num(created["id"])), created["secret"].(string)
	secret("webhook signing secret", bSecret)
	queued := e.must(t, 202, req{method: "POST", path: "/api/v1/programs/" + pb + "/webhooks/" + bHook + "/test", token: b.OwnerToken}).data()
	st.waitCount(t, 1, time.Minute, `SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1 AND message_id = $2 AND status_code = 200`,
		num(created["id"]), queued["message_id"])
	got := rcv.Requests()
	if len(got) != 1 || got[0].ID() != queued["message_id"] {
		t.Fatalf("receiver got %d requests; worker log:\n%s", len(got), worker.Logs.Text())
	}
	if err := webhooktest.Verify(bSecret, got[0].Header, got[0].Body, time.Now()); err != nil || !strings.Contains(string(got[0].Body), `"type":"webhook.test"`) {
		t.Fatalf("test event %s: %v", got[0].Body, err)
	}
	log := e.must(t, 200, req{method: "GET", path: "/api/v1/programs/" + pb + "/webhooks/" + bHook + "/deliveries", token: b.OwnerToken})
	if !strings.Contains(string(log.Raw), `"status":"succeeded"`) || !strings.Contains(string(log.Raw), queued["message_id"].(string)) {
		t.Fatalf("B's delivery log: %s", log.Raw)
	}
	bWorkspace := itoa(b.WorkspaceID)

	users := workspaceUsers(t, e, a, "dashapi")
	before := snapshot(t, st, b.ProgramID)
	bPrograms := st.count(t, `SELECT count(*) FROM programs WHERE workspace_id = $1`, b.WorkspaceID)
	bOutbox := st.count(t, `SELECT count(*) FROM outbox WHERE payload->>'endpoint_id' = $1`, bHook)
	p := &prober{t: t, e: e, leaks: []string{"b-hook-secret-path", queued["message_id"].(string), b.Code, b.OwnerEmail}}
	probe := p.probe
	newProgram := map[string]any{"name": "Stolen", "domain": "stolen.example", "commission_type": "percent", "commission_rate": 10,
		"workspace_id": b.WorkspaceID}
	for who, tok := range users {
		// B's program by its own id: not a member of B's workspace.
		for _, r := range []req{
			{method: "GET", path: "/api/v1/programs/" + pb + "/readiness"},
			{method: "GET", path: "/api/v1/programs/" + pb + "/webhooks/" + bHook + "/deliveries"},
			{method: "GET", path: "/api/v1/programs/" + pb + "/webhooks/" + bHook + "/deliveries?limit=100"},
			{method: "POST", path: "/api/v1/programs/" + pb + "/webhooks/" + bHook + "/test"},
		} {
			r.token = tok
			probe(who, r, 403)
		}
		// B's endpoint through A's own program: no such endpoint (a
		// member may not use webhooks at all).
		hookWant := []int{404}
		if who == "member of A" {
			hookWant = []int{403}
		}
		probe(who, req{method: "GET", path: "/api/v1/programs/" + pa + "/webhooks/" + bHook + "/deliveries", token: tok}, hookWant...)
		probe(who, req{method: "POST", path: "/api/v1/programs/" + pa + "/webhooks/" + bHook + "/test", token: tok}, hookWant...)
		// B's program read alone: 404, as a program that does not exist.
		probe(who, req{method: "GET", path: "/api/v1/programs/" + pb, token: tok}, 404)
		if rep := e.must(t, 200, req{method: "GET", path: "/api/v1/programs/" + pa, token: tok}); itoa(num(rep.data()["id"])) != pa {
			t.Errorf("%s: A's program %s", who, rep.Raw)
		}
		// A program in B's workspace: no such workspace for A's users.
		probe(who, req{method: "POST", path: "/api/v1/programs", token: tok, body: newProgram}, 404)
		// A's list holds A's program and none of B's.
		rep := e.must(t, 200, req{method: "GET", path: "/api/v1/programs", token: tok})
		list, _ := rep.Body["data"].([]any)
		if len(list) != 1 || itoa(num(list[0].(map[string]any)["id"])) != pa {
			t.Errorf("%s: program list %s", who, rep.Raw)
		}
		p.probe(who, req{method: "GET", path: "/api/v1/programs", token: tok}, 200)
		// A's own readiness is A's.
		if rep := e.must(t, 200, req{method: "GET", path: "/api/v1/programs/" + pa + "/readiness", token: tok}); itoa(num(rep.Body["program_id"])) != pa {
			t.Errorf("%s: A's readiness %s", who, rep.Raw)
		}
	}
	// Keys are not dashboard tokens.
	for _, tok := range []string{a.LiveKey, a.TestKey} {
		for _, r := range []req{
			{method: "GET", path: "/api/v1/programs"},
			{method: "GET", path: "/api/v1/programs/" + pb},
			{method: "POST", path: "/api/v1/programs", body: newProgram},
			{method: "GET", path: "/api/v1/programs/" + pb + "/readiness"},
			{method: "GET", path: "/api/v1/programs/" + pb + "/webhooks/" + bHook + "/deliveries"},
			{method: "POST", path: "/api/v1/programs/" + pb + "/webhooks/" + bHook + "/test"},
		} {
			r.token = tok
			probe("A's program key", r, 401)
		}
	}

	if after := snapshot(t, st, b.ProgramID); after != before {
		t.Errorf("B's data changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if n := st.count(t, `SELECT count(*) FROM programs WHERE workspace_id = $1`, b.WorkspaceID); n != bPrograms {
		t.Errorf("B's workspace %s holds %d programs, %d before", bWorkspace, n, bPrograms)
	}
	if n := st.count(t, `SELECT count(*) FROM outbox WHERE payload->>'endpoint_id' = $1`, bHook); n != bOutbox {
		t.Errorf("B's endpoint has %d outbox messages, %d before", n, bOutbox)
	}
	if n := len(rcv.Requests()); n != 1 {
		t.Errorf("B's receiver got %d requests, 1 before", n)
	}
	sc.note("B's test event delivered by the worker, signed, and logged; %d attempts on B's readiness, delivery log, test event and workspace by A's owner, admin, member and keys refused; B's rows unchanged", p.refused)
}
