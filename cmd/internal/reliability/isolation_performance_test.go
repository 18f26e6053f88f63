package reliability

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestIsolationPerformance: the performance endpoint (issue 25) keeps
// workspaces apart. B's program has rollup rows (written directly: the
// numbers must not leak, however they were counted). A's owner and
// member asking for B's program, with every period, groupBy and a custom
// window, are refused with 403 (not a member of B's workspace); a program
// key is no dashboard token (401); A's own answer holds nothing of B's
// numbers, partners or links.
func TestIsolationPerformance(t *testing.T) {
	t.Parallel()
	sc := report(t, "isolation/performance")
	st := sharedStack(t)
	e := st.startEdge(t, nil)
	a, b := mustWorld(t, e.client, nil), mustWorld(t, e.client, nil)
	pa, pb := itoa(a.ProgramID), itoa(b.ProgramID)

	// B's numbers today (UTC, B's timezone): a marker count no other test
	// writes, a partner and a link of B.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := st.db.ExecContext(ctx, `
		INSERT INTO rollup_traffic_daily (program_id, day, partner_id, link_id, clicks, visitors, leads)
		VALUES ($1, (now() AT TIME ZONE 'UTC')::date, $2, $3, 987654, 4321, 77)`, b.ProgramID, b.PartnerID, b.LinkID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.db.ExecContext(ctx, `
		INSERT INTO rollup_sales_daily (program_id, day, partner_id, link_id, currency, conversions, revenue_minor, commission_minor)
		VALUES ($1, (now() AT TIME ZONE 'UTC')::date, $2, $3, 'USD', 5, 123456789, 2345678)`, b.ProgramID, b.PartnerID, b.LinkID); err != nil {
		t.Fatal(err)
	}
	// And B's program-wide rows of the day (migration 00023), which the
	// ungrouped answers read.
	if _, err := st.db.ExecContext(ctx, `
		INSERT INTO rollup_visitors_daily (program_id, day, clicks, visitors, leads)
		VALUES ($1, (now() AT TIME ZONE 'UTC')::date, 987654, 4321, 77)`, b.ProgramID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.db.ExecContext(ctx, `
		INSERT INTO rollup_program_sales_daily (program_id, day, currency, conversions, revenue_minor, commission_minor)
		VALUES ($1, (now() AT TIME ZONE 'UTC')::date, 'USD', 5, 123456789, 2345678)`, b.ProgramID); err != nil {
		t.Fatal(err)
	}
	uid := num(e.must(t, 201, req{method: "POST", path: "/api/operator/v1/workspaces/" + itoa(a.WorkspaceID) + "/members", token: opToken,
		body: map[string]any{"email": "member-perf" + pa + "@a.example", "role": "member"}}).data()["user_id"])
	member := e.must(t, 201, req{method: "POST", path: "/api/operator/v1/users/" + itoa(uid) + "/sessions", token: opToken}).data()["token"].(string)
	secret("dashboard token", member)
	users := map[string]string{"owner of A": a.OwnerToken, "member of A": member}

	bPartner := `"Partner ` + strings.Split(b.Code, "-")[1] + `"` // mustWorld's name of B's partner
	leaks := func(raw string) bool {
		return strings.Contains(raw, "987654") || strings.Contains(raw, "1234567.89") || strings.Contains(raw, b.Code) ||
			strings.Contains(raw, bPartner)
	}
	queries := []string{"", "?period=30d", "?period=90d", "?period=all", "?groupBy=partner", "?groupBy=link&limit=100",
		"?dateFrom=2020-01-01&dateTo=2020-12-31", "?groupBy=partner&period=all"}
	refused := 0
	for who, tok := range users {
		for _, q := range queries {
			rep := e.must(t, 403, req{method: "GET", path: "/api/tracking/performance/" + pb + q, token: tok})
			if leaks(string(rep.Raw)) {
				t.Errorf("%s: B's numbers in a refusal: %s", who, rep.Raw)
			}
			refused++
			// A's own program answers, with nothing of B.
			rep = e.must(t, 200, req{method: "GET", path: "/api/tracking/performance/" + pa + q, token: tok})
			if leaks(string(rep.Raw)) {
				t.Errorf("%s: A's answer %s shows B's numbers: %s", who, q, rep.Raw)
			}
		}
	}
	for _, tok := range []string{a.LiveKey, a.TestKey, b.LiveKey} {
		e.must(t, 401, req{method: "GET", path: "/api/tracking/performance/" + pb, token: tok})
		refused++
	}
	// B's owner sees B's numbers: the rows are there to leak.
	rep := e.must(t, 200, req{method: "GET", path: "/api/tracking/performance/" + pb + "?groupBy=link", token: b.OwnerToken})
	if !strings.Contains(string(rep.Raw), "987654") || !strings.Contains(string(rep.Raw), b.Code) {
		t.Errorf("B's owner does not see B's numbers: %s", rep.Raw)
	}
	sc.note("%d asks for B's performance by A's owner, member and keys refused; A's answers hold nothing of B", refused)
}
