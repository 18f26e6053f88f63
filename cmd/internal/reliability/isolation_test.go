package reliability

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ingest/oidc/testissuer"
	"github.com/partnertrack/partnertrack/ledger/stripetest"
)

// snapshot renders everything stored about a program: every row of every
// table with a program_id column, in full, in id order.
func snapshot(t *testing.T, st *stack, programID int64) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := st.db.QueryContext(ctx, `SELECT c.table_name FROM information_schema.columns c
		JOIN pg_class k ON k.relname = c.table_name AND NOT k.relispartition
		WHERE c.table_schema = 'public' AND c.column_name = 'program_id' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		tables = append(tables, n)
	}
	rows.Close()
	tables = append(tables, "programs")
	var b strings.Builder
	for _, tbl := range tables {
		col := "program_id"
		if tbl == "programs" {
			col = "id"
		}
		var js *string
		q := fmt.Sprintf(`SELECT json_agg(row_to_json(x) ORDER BY row_to_json(x)::text)::text FROM %s x WHERE %s = $1`, tbl, col)
		if err := st.db.QueryRowContext(ctx, q, programID).Scan(&js); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if js != nil {
			fmt.Fprintf(&b, "%s: %s\n", tbl, *js)
		}
	}
	return b.String()
}

// TestIsolationProgramKeys: program A's key (and its test key) reaches
// nothing of program B on any route: B's sales and clicks and customers
// cannot be sold, refunded or led; A's readiness, analytics and CLI
// status count A's events only; calls naming B's program are refused.
// Everything stored about B is the same, row for row, before and after.
func TestIsolationProgramKeys(t *testing.T) {
	t.Parallel()
	sc := report(t, "isolation/program-keys")
	st := sharedStack(t)
	const secret = "whsec_reliability_isolation"
	e := st.startEdge(t, map[string]string{"STRIPE_WEBHOOK_SECRET": secret})
	st.startWorker(t, []string{"--queues", "clicks", "--scheduler=false", "--concurrency", "2"}, nil)
	a, b := mustWorld(t, e.client, nil), mustWorld(t, e.client, nil)

	// A: 2 clicks, 1 lead, 1 sale. B: 4 clicks, 2 leads, 3 sales (one refunded).
	aClicks := []string{mustClick(t, e.client, a), mustClick(t, e.client, a)}
	var bClicks []string
	for i := 0; i < 4; i++ {
		bClicks = append(bClicks, mustClick(t, e.client, b))
	}
	st.waitCount(t, 6, time.Minute, `SELECT count(*) FROM clicks`)
	lead := func(w world, click, key string) {
		e.must(t, 200, req{method: "POST", path: "/api/v1/track/lead", token: w.LiveKey,
			body: map[string]any{"click_id": click, "customer_key": key}, header: map[string]string{"X-Forwarded-For": nextIP()}})
	}
	sale := func(w world, txn, click string) {
		e.must(t, 200, req{method: "POST", path: "/api/v1/track/sale", token: w.LiveKey,
			body: map[string]any{"transaction_id": txn, "amount_cents": 5000, "click_id": click}})
	}
	lead(a, aClicks[0], "a-user")
	sale(a, "txn-a", aClicks[0])
	lead(b, bClicks[0], "b-user-0")
	lead(b, bClicks[1], "b-user-1")
	for i := 0; i < 3; i++ {
		sale(b, fmt.Sprintf("txn-b-%d", i), bClicks[i])
	}
	e.must(t, 200, req{method: "POST", path: "/api/v1/track/refund", token: b.LiveKey,
		body: map[string]any{"transaction_id": "txn-b-2", "refund_amount_cents": 1000, "refund_id": "b-r1"}})
	before := snapshot(t, st, b.ProgramID)

	type attempt struct {
		desc   string
		r      req
		status int
		check  func(reply) bool // more to check of the answer (nil: nothing)
	}
	msg := func(m string) func(reply) bool {
		return func(r reply) bool { return r.errObj()["message"] == m }
	}
	newClick := mustClick(t, e.client, a)
	attempts := []attempt{
		{"refund of B's sale", req{method: "POST", path: "/api/v1/track/refund", token: a.LiveKey,
			body: map[string]any{"transaction_id": "txn-b-0"}}, 404, msg("Sale not found for transaction_id")},
		{"partial refund of B's sale", req{method: "POST", path: "/api/v1/track/refund", token: a.LiveKey,
			body: map[string]any{"transaction_id": "txn-b-1", "refund_amount_cents": 100, "refund_id": "x"}}, 404, nil},
		{"refund of B's sale with A's test key", req{method: "POST", path: "/api/v1/track/refund", token: a.TestKey,
			body: map[string]any{"transaction_id": "txn-b-0"}}, 200, func(r reply) bool { return r.Body["test"] == true }},
		{"sale on B's click", req{method: "POST", path: "/api/v1/track/sale", token: a.LiveKey,
			body: map[string]any{"transaction_id": "iso-1", "amount_cents": 100, "click_id": bClicks[3]}}, 400,
			msg("No affiliate attribution found for this customer in this program")},
		{"sale on B's customer key", req{method: "POST", path: "/api/v1/track/sale", token: a.LiveKey,
			body: map[string]any{"transaction_id": "iso-2", "amount_cents": 100, "customer_key": "b-user-0"}}, 400, nil},
		{"sale naming B's program", req{method: "POST", path: "/api/v1/track/sale", token: a.LiveKey,
			body: map[string]any{"transaction_id": "iso-3", "amount_cents": 100, "click_id": newClick,
				"additional_data": map[string]any{"program_id": b.ProgramID}}}, 403, msg("program_id does not match the API key")},
		{"test sale naming B's program", req{method: "POST", path: "/api/v1/track/sale", token: a.TestKey,
			body: map[string]any{"amount_cents": 100, "additional_data": map[string]any{"program_id": b.ProgramID, "test_mode": true}}}, 403, nil},
		// The transaction id is unique across programs (the spec): the 409
		// names B's sale id, and nothing of B changes.
		{"sale reusing B's transaction id", req{method: "POST", path: "/api/v1/track/sale", token: a.LiveKey,
			body: map[string]any{"transaction_id": "txn-b-0", "amount_cents": 100, "click_id": newClick}}, 409, nil},
		{"server lead on B's click", req{method: "POST", path: "/api/v1/track/lead", token: a.LiveKey,
			body: map[string]any{"click_id": bClicks[2], "customer_key": "intruder"}}, 400, msg("Customer does not belong to this program")},
		{"server lead on B's settled customer", req{method: "POST", path: "/api/v1/track/lead", token: a.LiveKey,
			body: map[string]any{"click_id": bClicks[0], "customer_key": "b-user-0"}}, 400, nil},
		{"server lead on B's customer key", req{method: "POST", path: "/api/v1/track/lead", token: a.LiveKey,
			body: map[string]any{"customer_key": "b-user-1"}}, 400, nil},
		{"lead naming B's program", req{method: "POST", path: "/api/v1/track/lead", token: a.LiveKey,
			body: map[string]any{"click_id": aClicks[1], "program_id": b.ProgramID}}, 403, nil},
		{"test lead naming B's program", req{method: "POST", path: "/api/v1/track/lead", token: a.LiveKey,
			body: map[string]any{"click_id": aClicks[1], "additional_data": map[string]any{"test_mode": true, "program_id": b.ProgramID}}}, 403, nil},
		{"test click naming B's program", req{method: "POST", path: "/api/v1/track/click", token: a.LiveKey,
			body: map[string]any{"affiliate_url": "https://b.example/?aff=" + b.Code, "additional_data": map[string]any{"test_mode": true, "program_id": b.ProgramID}}}, 403, nil},
		{"test click with A's test key on B's link", req{method: "POST", path: "/api/v1/track/click", token: a.TestKey,
			body: map[string]any{"affiliate_url": "https://b.example/?aff=" + b.Code, "additional_data": map[string]any{"program_id": b.ProgramID}}}, 403, nil},
		{"CLI status of B", req{method: "GET", path: "/api/v1/cli/status?program_id=" + itoa(b.ProgramID), token: a.LiveKey}, 403, nil},
		{"CLI test event in B", req{method: "POST", path: "/api/v1/cli/test-event", token: a.LiveKey,
			body: map[string]any{"event_type": "sale", "program_id": b.ProgramID}}, 403, nil},
		{"CLI chain in B", req{method: "POST", path: "/api/v1/cli/test-event", token: a.LiveKey,
			body: map[string]any{"type": "chain", "program_id": itoa(b.ProgramID)}}, 403, nil},
		{"B's event listing with A's key", req{method: "GET", path: "/api/tracking/events/" + itoa(b.ProgramID), token: a.LiveKey}, 401, nil},
		{"B's settings with A's key", req{method: "GET", path: "/api/v1/programs/" + itoa(b.ProgramID) + "/settings", token: a.LiveKey}, 401, nil},
		{"B's key regenerated with A's key", req{method: "POST", path: "/api/v1/programs/" + itoa(b.ProgramID) + "/api-key", token: a.LiveKey}, 401, nil},
		{"B's brand webhook signed with A's secret", stripeTo(t, "/webhooks/stripe/"+itoa(b.ProgramID), "whsec_a_program_secret"), 400, nil},
	}
	// A's processor webhook secret, for the last attempt.
	e.must(t, 200, req{method: "PATCH", path: "/api/v1/programs/" + itoa(a.ProgramID) + "/settings", token: a.OwnerToken,
		body: map[string]any{"stripe_webhook_secret": "whsec_a_program_secret"}})
	e.must(t, 200, req{method: "PATCH", path: "/api/v1/programs/" + itoa(b.ProgramID) + "/settings", token: b.OwnerToken,
		body: map[string]any{"stripe_webhook_secret": "whsec_b_program_secret"}})
	before = snapshot(t, st, b.ProgramID)
	refused := 0
	for _, at := range attempts {
		at.r.header = map[string]string{"X-Forwarded-For": nextIP()}
		rep, err := e.call(at.r)
		if err != nil {
			t.Errorf("%s: %v", at.desc, err)
			continue
		}
		if rep.Status != at.status || (at.check != nil && !at.check(rep)) {
			t.Errorf("%s: %s, want %d", at.desc, rep, at.status)
			continue
		}
		if strings.Contains(string(rep.Raw), b.LiveKey) || strings.Contains(string(rep.Raw), "b-user") || strings.Contains(string(rep.Raw), b.Code) {
			t.Errorf("%s: the answer shows B's data: %s", at.desc, rep.Raw)
		}
		refused++
	}

	// A's own reads count A's events only (its third click stored first).
	st.waitCount(t, 7, time.Minute, `SELECT count(*) FROM clicks`)
	ready := e.must(t, 200, req{method: "GET", path: "/api/v1/programs/me/readiness", token: a.LiveKey}).Body
	counts, _ := ready["counts_24h"].(map[string]any)
	if ready["program_id"] != float64(a.ProgramID) || counts["clicks"] != 3.0 || counts["leads"] != 1.0 || counts["sales"] != 1.0 {
		t.Errorf("A's readiness: %v", ready)
	}
	src := e.must(t, 200, req{method: "GET", path: "/api/v1/programs/me/analytics/sources", token: a.LiveKey}).data()
	totals, _ := src["totals"].(map[string]any)
	if src["program_id"] != float64(a.ProgramID) || totals["clicks"] != 3.0 || totals["sales"] != 1.0 {
		t.Errorf("A's analytics: %v", src)
	}
	status := e.must(t, 200, req{method: "GET", path: "/api/v1/cli/status", token: a.LiveKey}).data()
	if status["program_id"] != float64(a.ProgramID) {
		t.Errorf("A's CLI status: %v", status)
	}
	// B's key still works: nothing regenerated it.
	e.must(t, 200, req{method: "GET", path: "/api/v1/cli/status", token: b.LiveKey})

	after := snapshot(t, st, b.ProgramID)
	if after != before {
		t.Errorf("B's data changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	sc.counts(0, 0)
	sc.note("%d attempts of A's keys on B refused; B's rows unchanged", refused)
}

// stripeTo is a signed Stripe delivery to path.
func stripeTo(t *testing.T, path, secret string) req {
	t.Helper()
	payload := stripetest.CheckoutCompleted("acct_1Isolation").Payload()
	return req{method: "POST", path: path, body: payload,
		header: map[string]string{"Stripe-Signature": stripetest.Sign(payload, secret, time.Now())}}
}

// TestIsolationWorkspaces: a dashboard user of workspace A (owner, admin
// or member) sees and changes nothing of workspace B: B's event listing,
// settings and key are refused with 403, B's rows and key stay as they
// were; the CLI token of A's owner lists A's programs only and cannot
// create a program for B's workspace. A user of no workspace sees
// nothing at all.
func TestIsolationWorkspaces(t *testing.T) {
	t.Parallel()
	sc := report(t, "isolation/workspaces")
	st := sharedStack(t)
	iss := testissuer.New(t)
	e := st.startEdge(t, map[string]string{"OIDC_ISSUER_URL": iss.URL, "OIDC_CLIENT_ID": testissuer.ClientID})
	a, b := mustWorld(t, e.client, nil), mustWorld(t, e.client, nil)
	mustClick(t, e.client, b)

	users := map[string]string{"owner of A": a.OwnerToken}
	for _, role := range []string{"admin", "member"} {
		uid := num(e.must(t, 201, req{method: "POST", path: "/api/operator/v1/workspaces/" + itoa(a.WorkspaceID) + "/members", token: opToken,
			body: map[string]any{"email": role + "@a.example", "role": role}}).data()["user_id"])
		users[role+" of A"] = e.must(t, 201, req{method: "POST", path: "/api/operator/v1/users/" + itoa(uid) + "/sessions", token: opToken}).data()["token"].(string)
		secret("dashboard token", users[role+" of A"])
	}
	// A user of no workspace: signed in through the provider.
	users["user of no workspace"] = e.must(t, 200, req{method: "POST", path: "/api/v1/auth/session",
		body: map[string]any{"id_token": iss.Token(t, "stranger", "stranger@nowhere.example")}}).data()["token"].(string)
	secret("dashboard token", users["user of no workspace"])

	// B's owner registers a brand webhook; its secret must never show up
	// in any log, and A's people must not reach it.
	hook := e.must(t, 201, req{method: "POST", path: "/api/v1/programs/" + itoa(b.ProgramID) + "/webhooks", token: b.OwnerToken,
		body: map[string]any{"url": "https://93.184.216.34/hooks/partnertrack", "events": []string{"sale.created"}}}).data()
	secret("webhook secret", hook["secret"].(string))
	hookID := itoa(num(hook["id"]))

	before := snapshot(t, st, b.ProgramID)
	pb := itoa(b.ProgramID)
	refused := 0
	for who, tok := range users {
		for _, r := range []req{
			{method: "GET", path: "/api/v1/programs/" + pb + "/webhooks"},
			{method: "POST", path: "/api/v1/programs/" + pb + "/webhooks", body: map[string]any{"url": "https://93.184.216.35/steal", "events": []string{"sale.created"}}},
			{method: "DELETE", path: "/api/v1/programs/" + pb + "/webhooks/" + hookID},
			{method: "GET", path: "/api/v1/programs/" + pb + "/notifications"},
			{method: "GET", path: "/api/tracking/events/" + pb},
			{method: "GET", path: "/api/tracking/events/" + pb + "?eventType=click&pageSize=100"},
			{method: "GET", path: "/api/v1/programs/" + pb + "/settings"},
			{method: "PATCH", path: "/api/v1/programs/" + pb + "/settings", body: map[string]any{"name": "Taken over", "commission_rate": 99}},
			{method: "POST", path: "/api/v1/programs/" + pb + "/api-key"},
			{method: "POST", path: "/api/v1/programs/" + pb + "/api-key", body: map[string]any{"mode": "test"}},
		} {
			r.token = tok
			rep, err := e.call(r)
			if err != nil || rep.Status != 403 {
				t.Errorf("%s: %s %s: %v %v, want 403", who, r.method, r.path, rep, err)
				continue
			}
			if strings.Contains(string(rep.Raw), b.Code) || strings.Contains(string(rep.Raw), "Program "+pb) ||
				strings.Contains(string(rep.Raw), "93.184.216.34") {
				t.Errorf("%s: %s %s shows B's data: %s", who, r.method, r.path, rep.Raw)
			}
			refused++
		}
	}
	// A's own listing works for A's members.
	for _, who := range []string{"owner of A", "admin of A", "member of A"} {
		e.must(t, 200, req{method: "GET", path: "/api/tracking/events/" + itoa(a.ProgramID), token: users[who]})
	}
	// The CLI: A's owner lists A's programs only, and cannot create one in B's workspace.
	cli := mustCLIToken(t, e, iss, a.OwnerEmail)
	progs := e.must(t, 200, req{method: "GET", path: "/api/v1/cli/programs", token: cli})
	if strings.Contains(string(progs.Raw), b.Code) || strings.Contains(string(progs.Raw), `"id":`+pb+`,`) {
		t.Errorf("A's CLI lists B's program: %s", progs.Raw)
	}
	rep := e.must(t, 403, req{method: "POST", path: "/api/v1/cli/init", token: cli, body: map[string]any{
		"advertiser_id": b.WorkspaceID, "name": "Intruder", "domain": "intruder.example", "commission_type": "percent", "commission_rate": 10}})
	if rep.errObj()["message"] != "advertiser_id does not match the authenticated account" {
		t.Errorf("CLI init for B's workspace: %s", rep)
	}
	refused++
	// B's key was not regenerated.
	e.must(t, 200, req{method: "GET", path: "/api/v1/cli/status", token: b.LiveKey})
	if after := snapshot(t, st, b.ProgramID); after != before {
		t.Errorf("B's data changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	sc.note("%d attempts by A's owner, admin and member, and by a user of no workspace, refused with 403; B's rows unchanged", refused)
}
