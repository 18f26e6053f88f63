package reliability

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPerformanceEndToEnd: the performance endpoint (issue 25) over real
// traffic. Clicks are posted to the tracker endpoint of a real edge,
// queued in Redis and drained into Postgres by a real click worker (its
// scheduled sessions:tally counts the unique visitors); then
// a lead, sales in two currencies and a partial refund go through the
// API. The answers without groupBy, with groupBy=partner and with
// groupBy=link are read field by field against what was sent (the
// commissions against the commissions the ledger computed), and the
// rollup verification finds no difference.
func TestPerformanceEndToEnd(t *testing.T) {
	t.Parallel()
	sc := report(t, "e2e/performance")
	st := sharedStack(t)
	e := st.startEdge(t, nil)
	// The clicks, and the maintenance queue with the scheduler: its
	// sessions:tally task counts the unique visitors.
	st.startWorker(t, []string{"--queues", "clicks,maintenance"}, nil)
	w := mustWorld(t, e.client, nil) // USD, 20 % of each sale
	pid := itoa(w.ProgramID)

	// Partner A is the world's, with its link A1 and a second link A2;
	// partner B has one link.
	a1 := w
	a2 := w
	a2.Code = "a2-" + pid
	a2.LinkID = num(e.must(t, 201, req{method: "POST", path: "/api/operator/v1/programs/" + pid + "/links", token: opToken,
		body: map[string]any{"partner_id": w.PartnerID, "code": a2.Code}}).data()["id"])
	bw := w
	bw.PartnerID = num(e.must(t, 201, req{method: "POST", path: "/api/operator/v1/programs/" + pid + "/partners", token: opToken,
		body: map[string]any{"email": "bea-" + pid + "@partner.example", "name": "Bea"}}).data()["id"])
	bw.Code = "bea-" + pid
	bw.LinkID = num(e.must(t, 201, req{method: "POST", path: "/api/operator/v1/programs/" + pid + "/links", token: opToken,
		body: map[string]any{"partner_id": bw.PartnerID, "code": bw.Code}}).data()["id"])

	// Six clicks: A1 three (sessions s1, s1, s2), A2 two (s3, s4), B one
	// (s1 again: a visitor of B's link, not a new one of the program).
	sent := []struct {
		w       world
		session string
	}{{a1, "s1"}, {a1, "s1"}, {a1, "s2"}, {a2, "s3"}, {a2, "s4"}, {bw, "s1"}}
	ids := make([]string, len(sent))
	for i, c := range sent {
		body := c.w.clickBody()
		body["session_id"] = "sess-" + pid + "-" + c.session
		rep := e.must(t, 200, req{method: "POST", path: "/api/v1/track/click", body: body,
			header: map[string]string{"X-Forwarded-For": nextIP()}})
		ids[i], _ = rep.Body["click_id"].(string)
	}
	st.waitCount(t, len(sent), time.Minute, `SELECT count(*) FROM clicks WHERE program_id = $1`, w.ProgramID)
	st.waitCount(t, 0, time.Minute, `SELECT count(*) FROM rollup_pending_sessions WHERE program_id = $1`, w.ProgramID)

	// A lead on A1's first click; sales: A1's customer 100.00 USD, B's
	// click 50.00 EUR, A2's click 25.00 USD; 40.00 USD of the first
	// refunded.
	e.must(t, 200, req{method: "POST", path: "/api/v1/track/lead", token: w.LiveKey,
		body: map[string]any{"click_id": ids[0], "customer_key": "cust-a-" + pid}})
	for _, s := range []map[string]any{
		{"transaction_id": "txn-a1-" + pid, "amount_cents": 10000, "customer_key": "cust-a-" + pid},
		{"transaction_id": "txn-b-" + pid, "amount_cents": 5000, "currency": "EUR", "click_id": ids[5]},
		{"transaction_id": "txn-a2-" + pid, "amount_cents": 2500, "click_id": ids[3]},
	} {
		e.must(t, 200, req{method: "POST", path: "/api/v1/track/sale", token: w.LiveKey, body: s})
	}
	e.must(t, 200, req{method: "POST", path: "/api/v1/track/refund", token: w.LiveKey,
		body: map[string]any{"transaction_id": "txn-a1-" + pid, "refund_amount_cents": 4000, "refund_id": "r1"}})

	// The commissions as the ledger computed them (the refund rules are
	// its own), per sale, in minor units.
	commission := map[string]int64{}
	rows, err := st.db.Query(`SELECT s.processor_event_id, c.amount_minor FROM commissions c JOIN sales s ON s.id = c.sale_id
		WHERE s.program_id = $1`, w.ProgramID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var txn string
		var n int64
		if err := rows.Scan(&txn, &n); err != nil {
			t.Fatal(err)
		}
		commission[strings.TrimSuffix(txn, "-"+pid)] = n
	}
	if err := rows.Close(); err != nil || len(commission) != 3 {
		t.Fatalf("commissions %v: %v", commission, err)
	}
	if commission["txn-b"] != 1000 || commission["txn-a2"] != 500 {
		t.Fatalf("commissions %v, want 20 %% of 50.00 EUR and of 25.00 USD", commission)
	}
	comA1, comA2, comB := major(commission["txn-a1"]), major(commission["txn-a2"]), major(commission["txn-b"])
	comA := major(commission["txn-a1"] + commission["txn-a2"])

	today := time.Now().UTC()
	day := func(d int) string { return today.AddDate(0, 0, d).Format(time.DateOnly) }
	trend := func(current int64) string {
		if current == 0 {
			return `{"trend": 0, "trendDirection": "neutral"}`
		}
		return `{"trend": null, "trendDirection": "up"}`
	}
	var days []string
	for d := -6; d < 0; d++ {
		days = append(days, `{"date": "`+day(d)+`", "clicks": 0, "visitors": 0, "leads": 0, "conversions": 0, "revenue": 0,
			"revenueByCurrency": {}, "commission": 0, "commissionByCurrency": {}, "refunds": 0, "refundedAmount": 0,
			"refundedAmountByCurrency": {}, "partners": 0}`)
	}
	numbers := `"clicks": 6, "visitors": 4, "leads": 1, "conversions": 3, "revenue": 125, "revenueByCurrency": {"USD": 125, "EUR": 50},
		"commission": ` + comA + `, "commissionByCurrency": {"USD": ` + comA + `, "EUR": ` + comB + `},
		"refunds": 1, "refundedAmount": 40, "refundedAmountByCurrency": {"USD": 40}, "partners": 2`
	days = append(days, `{"date": "`+day(0)+`", `+numbers+`}`)
	prev := `"previousPeriod": {"dateFrom": "` + day(-13) + `", "dateTo": "` + day(-7) + `"}, "currency": "USD"`
	meta := `"meta": {"period": "7d", "dateFrom": "` + day(-6) + `", "dateTo": "` + day(0) + `", ` + prev + `}`
	mustPerf(t, e, w, "?period=7d", `{"data": [`+strings.Join(days, ", ")+`],
		"metrics": {`+numbers+`, "conversionRate": 50, "averageOrderValue": 62.5,
			"clicksTrend": `+trend(6)+`, "leadsTrend": `+trend(1)+`, "conversionsTrend": `+trend(3)+`,
			"revenueTrend": `+trend(12500)+`, "commissionTrend": `+trend(commission["txn-a1"]+commission["txn-a2"])+`},
		`+meta+`}`)

	// Per partner and per link: the sums of their own rows (visitors per
	// link added up), ranked by USD revenue.
	groupMeta := func(by string) string {
		return `"meta": {"period": "7d", "dateFrom": "` + day(-6) + `", "dateTo": "` + day(0) + `", ` + prev +
			`, "groupBy": "` + by + `", "limit": 10}`
	}
	n := strings.Split(w.Code, "-")[1] // mustWorld's number of the world
	partnerA := `{"id": ` + itoa(w.PartnerID) + `, "name": "Partner ` + n + `", "email": "partner` + n + `@partner.example",
		"clicks": 5, "visitors": 4, "leads": 1, "conversions": 2, "revenue": 125, "revenueByCurrency": {"USD": 125},
		"commission": ` + comA + `, "commissionByCurrency": {"USD": ` + comA + `},
		"refunds": 1, "refundedAmount": 40, "refundedAmountByCurrency": {"USD": 40}, "conversionRate": 40, "averageOrderValue": 62.5}`
	bNumbers := `"clicks": 1, "visitors": 1, "leads": 0, "conversions": 1, "revenue": 0, "revenueByCurrency": {"EUR": 50},
		"commission": 0, "commissionByCurrency": {"EUR": ` + comB + `},
		"refunds": 0, "refundedAmount": 0, "refundedAmountByCurrency": {}, "conversionRate": 100, "averageOrderValue": 0`
	partnerB := `{"id": ` + itoa(bw.PartnerID) + `, "name": "Bea", "email": "bea-` + pid + `@partner.example", ` + bNumbers + `}`
	mustPerf(t, e, w, "?period=7d&groupBy=partner", `{"data": [`+partnerA+`, `+partnerB+`], `+groupMeta("partner")+`}`)

	link := func(l world, rest string) string {
		return `{"id": ` + itoa(l.LinkID) + `, "code": "` + l.Code + `", "partnerId": ` + itoa(l.PartnerID) + `, ` + rest + `}`
	}
	mustPerf(t, e, w, "?period=7d&groupBy=link", `{"data": [
		`+link(a1, `"clicks": 3, "visitors": 2, "leads": 1, "conversions": 1, "revenue": 100, "revenueByCurrency": {"USD": 100},
			"commission": `+comA1+`, "commissionByCurrency": {"USD": `+comA1+`},
			"refunds": 1, "refundedAmount": 40, "refundedAmountByCurrency": {"USD": 40}, "conversionRate": 33.33, "averageOrderValue": 100`)+`,
		`+link(a2, `"clicks": 2, "visitors": 2, "leads": 0, "conversions": 1, "revenue": 25, "revenueByCurrency": {"USD": 25},
			"commission": `+comA2+`, "commissionByCurrency": {"USD": `+comA2+`},
			"refunds": 0, "refundedAmount": 0, "refundedAmountByCurrency": {}, "conversionRate": 50, "averageOrderValue": 25`)+`,
		`+link(bw, bNumbers)+`
	], `+groupMeta("link")+`}`)

	diffs := verifyAll(t, st, []world{w})
	sc.counts(len(sent), st.count(t, `SELECT count(*) FROM clicks WHERE program_id = $1`, w.ProgramID))
	sc.note("6 clicks through Redis and the click worker, a lead, 3 sales (USD, EUR), a partial refund: "+
		"the performance answers match field by field; verify: %d differences", diffs)
	if diffs != 0 {
		t.Errorf("verify: %d differences, want 0", diffs)
	}
}

// major renders minor units of a two-decimal currency as the endpoint
// does: exact, in the shortest form (2000 → 20, 1550 → 15.5).
func major(minor int64) string {
	s := strconv.FormatInt(minor/100, 10)
	if c := minor % 100; c != 0 {
		s += strings.TrimRight(fmt.Sprintf(".%02d", c), "0")
	}
	return s
}

// mustPerf asks for the world's performance and compares the whole answer
// with want (JSON, numbers compared as written).
func mustPerf(t *testing.T, e *edge, w world, query, want string) {
	t.Helper()
	rep := e.must(t, 200, req{method: "GET", path: "/api/tracking/performance/" + itoa(w.ProgramID) + query, token: w.OwnerToken})
	decode := func(raw []byte) any {
		t.Helper()
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%v: %s", err, raw)
		}
		return v
	}
	if got, exp := decode(rep.Raw), decode([]byte(want)); !reflect.DeepEqual(got, exp) {
		g, _ := json.MarshalIndent(got, "", "  ")
		t.Fatalf("%s: answer\n%s\nwant\n%s", query, g, want)
	}
}
