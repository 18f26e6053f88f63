package ingest

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// rollupTraffic is a row of rollup_traffic_daily.
type rollupTraffic struct {
	day                     string
	partner, link           int64
	clicks, visitors, leads int64
}

// rollupSales is a row of rollup_sales_daily.
type rollupSales struct {
	day                              string
	partner, link                    int64
	currency                         string
	conversions, revenue, commission int64
	refunds, refunded                int64
}

// mustRollups writes rollup rows of a program the way the triggers of
// migrations 00017, 00023 and 00024 keep them: traffic and sales rows,
// the program's visitors per day, the program-wide sums and the active
// partners.
func mustRollups(t *testing.T, b *testBundle, programID int64, traffic []rollupTraffic, sales []rollupSales, visitors map[string]int64) {
	t.Helper()
	for _, r := range traffic {
		if _, err := b.db.Exec(`INSERT INTO rollup_traffic_daily (program_id, day, partner_id, link_id, clicks, visitors, leads)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, programID, r.day, r.partner, r.link, r.clicks, r.visitors, r.leads); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range sales {
		if _, err := b.db.Exec(`INSERT INTO rollup_sales_daily (program_id, day, partner_id, link_id, currency,
				conversions, revenue_minor, commission_minor, refunds, refunded_minor)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, programID, r.day, r.partner, r.link, r.currency,
			r.conversions, r.revenue, r.commission, r.refunds, r.refunded); err != nil {
			t.Fatal(err)
		}
	}
	for d, n := range visitors {
		if _, err := b.db.Exec(`INSERT INTO rollup_visitors_daily (program_id, day, visitors) VALUES ($1, $2, $3)`,
			programID, d, n); err != nil {
			t.Fatal(err)
		}
	}
	// The program-wide rows (migration 00023) are the sums of the per-link
	// rows, as the triggers keep them.
	mustSQL(t, b, `INSERT INTO rollup_visitors_daily (program_id, day, clicks, leads)
		SELECT program_id, day, sum(clicks), sum(leads) FROM rollup_traffic_daily WHERE program_id = $1 GROUP BY 1, 2
		ON CONFLICT (program_id, day) DO UPDATE SET clicks = EXCLUDED.clicks, leads = EXCLUDED.leads`, programID)
	mustSQL(t, b, `INSERT INTO rollup_program_sales_daily (program_id, day, currency, conversions, revenue_minor,
			commission_minor, refunds, refunded_minor)
		SELECT program_id, day, currency, sum(conversions), sum(revenue_minor), sum(commission_minor), sum(refunds),
			sum(refunded_minor)
		FROM rollup_sales_daily WHERE program_id = $1 GROUP BY 1, 2, 3`, programID)
	// And the active partners of each day (migration 00024): those with a
	// non-zero counter in a per-link row.
	mustSQL(t, b, `INSERT INTO rollup_partners_daily (program_id, day, partner_id)
		SELECT program_id, day, partner_id FROM rollup_traffic_daily
		WHERE program_id = $1 AND partner_id <> 0 AND (clicks <> 0 OR visitors <> 0 OR leads <> 0)
		UNION
		SELECT program_id, day, partner_id FROM rollup_sales_daily
		WHERE program_id = $1 AND partner_id <> 0 AND (conversions <> 0 OR revenue_minor <> 0 OR commission_minor <> 0
			OR refunds <> 0 OR refunded_minor <> 0)`, programID)
}

// mustSQL runs a statement on the test database.
func mustSQL(t *testing.T, b *testBundle, query string, args ...any) {
	t.Helper()
	if _, err := b.db.Exec(query, args...); err != nil {
		t.Fatal(err)
	}
}

// decodeExact decodes JSON keeping numbers as written.
func decodeExact(t *testing.T, raw []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	return v
}

// mustPerformance asks for the performance of a program and checks the
// whole answer against want (JSON; numbers compared as written).
func mustPerformance(t *testing.T, b *testBundle, token string, programID int64, query, want string) {
	t.Helper()
	r := do(t, b.app, req{"GET", "/api/tracking/performance/" + itoa(programID) + query, nil, bearer(token)})
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Raw)
	}
	got, exp := decodeExact(t, r.Raw), decodeExact(t, []byte(want))
	if !reflect.DeepEqual(got, exp) {
		g, _ := json.MarshalIndent(got, "", "  ")
		t.Fatalf("answer:\n%s\nwant:\n%s", g, want)
	}
}

// zeroDay is a day without events.
func zeroDay(d string) string {
	return `{"date": "` + d + `", "clicks": 0, "visitors": 0, "leads": 0, "conversions": 0, "revenue": 0, "revenueByCurrency": {},
		"commission": 0, "commissionByCurrency": {}, "refunds": 0, "refundedAmount": 0, "refundedAmountByCurrency": {}, "partners": 0}`
}

func TestPerformanceCustomWindow(t *testing.T) {
	b := setup(t)
	b.clock.Set(time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC))
	w := MustWorld(t, b.app)
	p, l := w.partnerID, w.linkID
	p2, l2 := p+1000, l+1000
	mustRollups(t, b, w.programID, []rollupTraffic{
		{day: "2026-03-01", partner: p, link: l, clicks: 10, visitors: 8, leads: 2},
		{day: "2026-03-01", clicks: 5, visitors: 5}, // no partner: counts, but not in partners
		{day: "2026-03-03", partner: p2, link: l2, clicks: 5, visitors: 4, leads: 1},
		{day: "2026-02-27", partner: p, link: l, clicks: 12, visitors: 9, leads: 4},   // previous window
		{day: "2026-02-25", partner: p, link: l, clicks: 99, visitors: 99, leads: 99}, // before it
		{day: "2026-03-04", partner: p, link: l, clicks: 99, visitors: 99, leads: 99}, // after the window
	}, []rollupSales{
		{day: "2026-03-01", partner: p, link: l, currency: "USD", conversions: 2, revenue: 10000, commission: 3000},
		{day: "2026-03-01", partner: p, link: l, currency: "EUR", conversions: 1, revenue: 5000, commission: 1505},
		{day: "2026-03-02", partner: p, link: l, currency: "VND", refunds: 1, refunded: 100}, // a refund only
		{day: "2026-03-03", partner: p2, link: l2, currency: "USD", conversions: 1, revenue: 2999, commission: 900, refunds: 2, refunded: 1050},
		{day: "2026-02-28", partner: p, link: l, currency: "USD", conversions: 2, revenue: 8000, commission: 2400, refunds: 1, refunded: 500},
	}, map[string]int64{"2026-03-01": 11, "2026-03-03": 4, "2026-02-27": 9})

	mustPerformance(t, b, w.ownerToken, w.programID, "?dateFrom=2026-03-01&dateTo=2026-03-03", `{
		"data": [
			{"date": "2026-03-01", "clicks": 15, "visitors": 11, "leads": 2, "conversions": 3,
				"revenue": 100, "revenueByCurrency": {"USD": 100, "EUR": 50},
				"commission": 30, "commissionByCurrency": {"USD": 30, "EUR": 15.05}, "refunds": 0, "refundedAmount": 0, "refundedAmountByCurrency": {}, "partners": 1},
			{"date": "2026-03-02", "clicks": 0, "visitors": 0, "leads": 0, "conversions": 0, "revenue": 0, "revenueByCurrency": {},
				"commission": 0, "commissionByCurrency": {}, "refunds": 1, "refundedAmount": 0, "refundedAmountByCurrency": {"VND": 100}, "partners": 1},
			{"date": "2026-03-03", "clicks": 5, "visitors": 4, "leads": 1, "conversions": 1,
				"revenue": 29.99, "revenueByCurrency": {"USD": 29.99},
				"commission": 9, "commissionByCurrency": {"USD": 9}, "refunds": 2, "refundedAmount": 10.5, "refundedAmountByCurrency": {"USD": 10.5}, "partners": 1}
		],
		"metrics": {
			"clicks": 20, "visitors": 15, "leads": 3, "conversions": 4,
			"revenue": 129.99, "revenueByCurrency": {"USD": 129.99, "EUR": 50},
			"commission": 39, "commissionByCurrency": {"USD": 39, "EUR": 15.05},
			"refunds": 3, "refundedAmount": 10.5, "refundedAmountByCurrency": {"USD": 10.5, "VND": 100},
			"partners": 2, "conversionRate": 20, "averageOrderValue": 43.33,
			"clicksTrend": {"trend": 66.7, "trendDirection": "up"},
			"leadsTrend": {"trend": -25, "trendDirection": "down"},
			"conversionsTrend": {"trend": 100, "trendDirection": "up"},
			"revenueTrend": {"trend": 62.5, "trendDirection": "up"},
			"commissionTrend": {"trend": 62.5, "trendDirection": "up"}
		},
		"meta": {"period": "custom", "dateFrom": "2026-03-01", "dateTo": "2026-03-03",
			"previousPeriod": {"dateFrom": "2026-02-26", "dateTo": "2026-02-28"}, "currency": "USD"}
	}`)
}

func TestPerformancePeriods(t *testing.T) {
	b := setup(t)
	b.clock.Set(time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC))
	w := MustWorld(t, b.app)
	mustRollups(t, b, w.programID, []rollupTraffic{
		{day: "2026-03-08", partner: w.partnerID, link: w.linkID, clicks: 3, visitors: 2},
	}, []rollupSales{
		{day: "2026-03-10", partner: w.partnerID, link: w.linkID, currency: "USD", conversions: 1, revenue: 1001, commission: 300},
	}, map[string]int64{"2026-03-08": 2})
	days := `{"date": "2026-03-08", "clicks": 3, "visitors": 2, "leads": 0, "conversions": 0, "revenue": 0, "revenueByCurrency": {},
			"commission": 0, "commissionByCurrency": {}, "refunds": 0, "refundedAmount": 0, "refundedAmountByCurrency": {}, "partners": 1},
		` + zeroDay("2026-03-09") + `,
		{"date": "2026-03-10", "clicks": 0, "visitors": 0, "leads": 0, "conversions": 1, "revenue": 10.01, "revenueByCurrency": {"USD": 10.01},
			"commission": 3, "commissionByCurrency": {"USD": 3}, "refunds": 0, "refundedAmount": 0, "refundedAmountByCurrency": {}, "partners": 1}`
	totals := `"clicks": 3, "visitors": 2, "leads": 0, "conversions": 1, "revenue": 10.01, "revenueByCurrency": {"USD": 10.01},
			"commission": 3, "commissionByCurrency": {"USD": 3}, "refunds": 0, "refundedAmount": 0, "refundedAmountByCurrency": {}, "partners": 1, "conversionRate": 33.33, "averageOrderValue": 10.01`

	t.Run("DefaultIs7dPreviousZero", func(t *testing.T) {
		mustPerformance(t, b, w.ownerToken, w.programID, "", `{
			"data": [`+zeroDay("2026-03-04")+`, `+zeroDay("2026-03-05")+`, `+zeroDay("2026-03-06")+`, `+zeroDay("2026-03-07")+`, `+days+`],
			"metrics": {`+totals+`,
				"clicksTrend": {"trend": null, "trendDirection": "up"},
				"leadsTrend": {"trend": 0, "trendDirection": "neutral"},
				"conversionsTrend": {"trend": null, "trendDirection": "up"},
				"revenueTrend": {"trend": null, "trendDirection": "up"},
				"commissionTrend": {"trend": null, "trendDirection": "up"}
			},
			"meta": {"period": "7d", "dateFrom": "2026-03-04", "dateTo": "2026-03-10",
				"previousPeriod": {"dateFrom": "2026-02-25", "dateTo": "2026-03-03"}, "currency": "USD"}
		}`)
	})
	t.Run("AllFromFirstRollupDay", func(t *testing.T) {
		neutral := `{"trend": null, "trendDirection": "neutral"}`
		mustPerformance(t, b, w.ownerToken, w.programID, "?period=all", `{
			"data": [`+days+`],
			"metrics": {`+totals+`, "clicksTrend": `+neutral+`, "leadsTrend": `+neutral+`, "conversionsTrend": `+neutral+`,
				"revenueTrend": `+neutral+`, "commissionTrend": `+neutral+`},
			"meta": {"period": "all", "dateFrom": "2026-03-08", "dateTo": "2026-03-10", "previousPeriod": null, "currency": "USD"}
		}`)
	})
	t.Run("LongPeriods", func(t *testing.T) {
		for _, tt := range []struct {
			period, from, prevFrom, prevTo string
			n                              int
		}{{"30d", "2026-02-09", "2026-01-10", "2026-02-08", 30}, {"90d", "2025-12-11", "2025-09-12", "2025-12-10", 90}} {
			r := do(t, b.app, req{"GET", "/api/tracking/performance/" + itoa(w.programID) + "?period=" + tt.period, nil, bearer(w.ownerToken)})
			if r.Status != 200 {
				t.Fatalf("%s: status %d: %s", tt.period, r.Status, r.Raw)
			}
			data := r.Body["data"].([]any)
			meta := r.Body["meta"].(map[string]any)
			prev := meta["previousPeriod"].(map[string]any)
			if len(data) != tt.n || meta["dateFrom"] != tt.from || meta["dateTo"] != "2026-03-10" ||
				prev["dateFrom"] != tt.prevFrom || prev["dateTo"] != tt.prevTo ||
				data[0].(map[string]any)["date"] != tt.from || data[tt.n-1].(map[string]any)["date"] != "2026-03-10" {
				t.Fatalf("%s: %d days, meta %v", tt.period, len(data), meta)
			}
		}
	})
}

func TestPerformanceAllWithoutRollupsStartsOnCreatedDay(t *testing.T) {
	b := setup(t)
	b.clock.Set(time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC))
	w := MustWorld(t, b.app)
	mustSQL(t, b, `UPDATE programs SET created_at = '2026-03-09T23:30:00Z', timezone = 'Europe/Berlin' WHERE id = $1`, w.programID)
	neutral := `{"trend": null, "trendDirection": "neutral"}`
	// 23:30 UTC is 00:30 on the 10th in Berlin: one day.
	mustPerformance(t, b, w.ownerToken, w.programID, "?period=all", `{
		"data": [`+zeroDay("2026-03-10")+`],
		"metrics": {"clicks": 0, "visitors": 0, "leads": 0, "conversions": 0, "revenue": 0, "revenueByCurrency": {},
			"commission": 0, "commissionByCurrency": {}, "refunds": 0, "refundedAmount": 0, "refundedAmountByCurrency": {}, "partners": 0, "conversionRate": 0, "averageOrderValue": 0,
			"clicksTrend": `+neutral+`, "leadsTrend": `+neutral+`, "conversionsTrend": `+neutral+`,
			"revenueTrend": `+neutral+`, "commissionTrend": `+neutral+`},
		"meta": {"period": "all", "dateFrom": "2026-03-10", "dateTo": "2026-03-10", "previousPeriod": null, "currency": "USD"}
	}`)
}

func TestPerformanceTimezoneAndVND(t *testing.T) {
	b := setup(t)
	// 20:00 UTC on the 10th is 03:00 on the 11th in Ho Chi Minh City.
	b.clock.Set(time.Date(2026, 3, 10, 20, 0, 0, 0, time.UTC))
	w := MustWorld(t, b.app)
	mustSQL(t, b, `UPDATE programs SET timezone = 'Asia/Ho_Chi_Minh', currency = 'VND' WHERE id = $1`, w.programID)
	mustRollups(t, b, w.programID, []rollupTraffic{
		{day: "2026-03-11", partner: w.partnerID, link: w.linkID, clicks: 4, visitors: 3, leads: 1},
		{day: "2026-03-04", partner: w.partnerID, link: w.linkID, clicks: 2, visitors: 2, leads: 2},
	}, []rollupSales{
		{day: "2026-03-11", partner: w.partnerID, link: w.linkID, currency: "VND", conversions: 3, revenue: 100000, commission: 30001,
			refunds: 1, refunded: 25000},
		{day: "2026-03-11", partner: w.partnerID, link: w.linkID, currency: "USD", conversions: 1, revenue: 500, commission: 150},
		{day: "2026-03-04", partner: w.partnerID, link: w.linkID, currency: "VND", conversions: 3, revenue: 120000, commission: 36000},
	}, map[string]int64{"2026-03-11": 3})
	mustPerformance(t, b, w.ownerToken, w.programID, "?period=7d", `{
		"data": [`+zeroDay("2026-03-05")+`, `+zeroDay("2026-03-06")+`, `+zeroDay("2026-03-07")+`, `+zeroDay("2026-03-08")+`,
			`+zeroDay("2026-03-09")+`, `+zeroDay("2026-03-10")+`,
			{"date": "2026-03-11", "clicks": 4, "visitors": 3, "leads": 1, "conversions": 4,
				"revenue": 100000, "revenueByCurrency": {"VND": 100000, "USD": 5},
				"commission": 30001, "commissionByCurrency": {"VND": 30001, "USD": 1.5}, "refunds": 1, "refundedAmount": 25000, "refundedAmountByCurrency": {"VND": 25000}, "partners": 1}],
		"metrics": {"clicks": 4, "visitors": 3, "leads": 1, "conversions": 4,
			"revenue": 100000, "revenueByCurrency": {"VND": 100000, "USD": 5},
			"commission": 30001, "commissionByCurrency": {"VND": 30001, "USD": 1.5},
			"refunds": 1, "refundedAmount": 25000, "refundedAmountByCurrency": {"VND": 25000}, "partners": 1, "conversionRate": 100, "averageOrderValue": 33333,
			"clicksTrend": {"trend": 100, "trendDirection": "up"},
			"leadsTrend": {"trend": -50, "trendDirection": "down"},
			"conversionsTrend": {"trend": 33.3, "trendDirection": "up"},
			"revenueTrend": {"trend": -16.7, "trendDirection": "down"},
			"commissionTrend": {"trend": -16.7, "trendDirection": "down"}},
		"meta": {"period": "7d", "dateFrom": "2026-03-05", "dateTo": "2026-03-11",
			"previousPeriod": {"dateFrom": "2026-02-26", "dateTo": "2026-03-04"}, "currency": "VND"}
	}`)
}

// mustPartnerWithLink enrolls a partner in the program with one link.
func mustPartnerWithLink(t *testing.T, b *testBundle, programID int64, name, code string) (partnerID, linkID int64) {
	t.Helper()
	d := mustOK(t, do(t, b.app, req{"POST", "/api/operator/v1/programs/" + itoa(programID) + "/partners",
		map[string]any{"email": code + "@partner.example", "name": name}, operator()}), 201)
	partnerID = id(d["id"])
	d = mustOK(t, do(t, b.app, req{"POST", "/api/operator/v1/programs/" + itoa(programID) + "/links",
		map[string]any{"partner_id": partnerID, "code": code}, operator()}), 201)
	return partnerID, id(d["id"])
}

func TestPerformanceGroupBy(t *testing.T) {
	b := setup(t)
	b.clock.Set(time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC))
	w := MustWorld(t, b.app)
	a, al := w.partnerID, w.linkID // "Pat"
	bp, bl := mustPartnerWithLink(t, b, w.programID, "Bea", "bea")
	cp, cl := mustPartnerWithLink(t, b, w.programID, "Cy", "cy")
	// A second link of Bea's.
	d := mustOK(t, do(t, b.app, req{"POST", "/api/operator/v1/programs/" + itoa(w.programID) + "/links",
		map[string]any{"partner_id": bp, "code": "bea2"}, operator()}), 201)
	bl2 := id(d["id"])
	mustRollups(t, b, w.programID, []rollupTraffic{
		{day: "2026-03-09", partner: a, link: al, clicks: 1, visitors: 1},
		{day: "2026-03-09", partner: bp, link: bl, clicks: 6, visitors: 5, leads: 1},
		{day: "2026-03-10", partner: bp, link: bl2, clicks: 4, visitors: 4, leads: 1},
		{day: "2026-03-10", partner: cp, link: cl, clicks: 100, visitors: 90, leads: 3},
		{day: "2026-03-10", clicks: 1000, visitors: 1000},        // none: never a group
		{day: "2026-03-01", partner: cp, link: cl, clicks: 5000}, // outside the window
	}, []rollupSales{
		{day: "2026-03-09", partner: a, link: al, currency: "USD", conversions: 1, revenue: 5000, commission: 1500},
		{day: "2026-03-10", partner: bp, link: bl2, currency: "USD", conversions: 2, revenue: 5000, commission: 1500, refunds: 1, refunded: 2500},
		{day: "2026-03-10", partner: cp, link: cl, currency: "EUR", conversions: 1, revenue: 90000, commission: 27000, refunds: 1, refunded: 10000},
		{day: "2026-03-10", currency: "USD", conversions: 9, revenue: 900000}, // none
	}, nil)
	pat := `{"id": ` + itoa(a) + `, "name": "Pat", "email": "` + "pat" + itoa(worldNumber(t, b, a)) + `@partner.example", "clicks": 1, "visitors": 1, "leads": 0, "conversions": 1,
		"revenue": 50, "revenueByCurrency": {"USD": 50}, "commission": 15, "commissionByCurrency": {"USD": 15},
		"refunds": 0, "refundedAmount": 0, "refundedAmountByCurrency": {}, "conversionRate": 100, "averageOrderValue": 50}`
	bea := `{"id": ` + itoa(bp) + `, "name": "Bea", "email": "bea@partner.example", "clicks": 10, "visitors": 9, "leads": 2, "conversions": 2,
		"revenue": 50, "revenueByCurrency": {"USD": 50}, "commission": 15, "commissionByCurrency": {"USD": 15},
		"refunds": 1, "refundedAmount": 25, "refundedAmountByCurrency": {"USD": 25}, "conversionRate": 20, "averageOrderValue": 25}`
	cy := `{"id": ` + itoa(cp) + `, "name": "Cy", "email": "cy@partner.example", "clicks": 100, "visitors": 90, "leads": 3, "conversions": 1,
		"revenue": 0, "revenueByCurrency": {"EUR": 900}, "commission": 0, "commissionByCurrency": {"EUR": 270},
		"refunds": 1, "refundedAmount": 0, "refundedAmountByCurrency": {"EUR": 100}, "conversionRate": 1, "averageOrderValue": 0}`
	meta := func(groupBy string, limit int) string {
		return `"meta": {"period": "7d", "dateFrom": "2026-03-04", "dateTo": "2026-03-10",
			"previousPeriod": {"dateFrom": "2026-02-25", "dateTo": "2026-03-03"}, "currency": "USD",
			"groupBy": "` + groupBy + `", "limit": ` + itoa(int64(limit)) + `}`
	}
	t.Run("PartnersByRevenueThenClicks", func(t *testing.T) {
		mustPerformance(t, b, w.ownerToken, w.programID, "?groupBy=partner", `{"data": [`+bea+`, `+pat+`, `+cy+`], `+meta("partner", 10)+`}`)
	})
	t.Run("Limit", func(t *testing.T) {
		mustPerformance(t, b, w.ownerToken, w.programID, "?groupBy=partner&limit=2", `{"data": [`+bea+`, `+pat+`], `+meta("partner", 2)+`}`)
	})
	t.Run("Links", func(t *testing.T) {
		link := func(id, partner int64, code string, clicks, visitors, leads, conv int64, rev, com, ref, rate, aov string) string {
			return `{"id": ` + itoa(id) + `, "code": "` + code + `", "partnerId": ` + itoa(partner) + `, "clicks": ` + itoa(clicks) +
				`, "visitors": ` + itoa(visitors) + `, "leads": ` + itoa(leads) + `, "conversions": ` + itoa(conv) + `, ` + rev + `, ` + com +
				`, ` + ref + `, "conversionRate": ` + rate + `, "averageOrderValue": ` + aov + `}`
		}
		noRefunds := `"refunds": 0, "refundedAmount": 0, "refundedAmountByCurrency": {}`
		none := `"revenue": 0, "revenueByCurrency": {}`
		noneCom := `"commission": 0, "commissionByCurrency": {}`
		usd50 := `"revenue": 50, "revenueByCurrency": {"USD": 50}`
		usd15 := `"commission": 15, "commissionByCurrency": {"USD": 15}`
		// Ties on revenue (bea2, pat) go to clicks; then Cy's link (EUR only) by clicks over bea's first link.
		mustPerformance(t, b, w.ownerToken, w.programID, "?groupBy=link&limit=4&period=7d", `{"data": [
			`+link(bl2, bp, "bea2", 4, 4, 1, 2, usd50, usd15, `"refunds": 1, "refundedAmount": 25, "refundedAmountByCurrency": {"USD": 25}`, "50", "25")+`,
			`+link(al, a, "pat"+itoa(w.programID), 1, 1, 0, 1, usd50, usd15, noRefunds, "100", "50")+`,
			`+link(cl, cp, "cy", 100, 90, 3, 1, `"revenue": 0, "revenueByCurrency": {"EUR": 900}`, `"commission": 0, "commissionByCurrency": {"EUR": 270}`,
			`"refunds": 1, "refundedAmount": 0, "refundedAmountByCurrency": {"EUR": 100}`, "1", "0")+`,
			`+link(bl, bp, "bea", 6, 5, 1, 0, none, noneCom, noRefunds, "0", "0")+`
		], `+meta("link", 4)+`}`)
	})
	t.Run("Empty", func(t *testing.T) {
		mustPerformance(t, b, w.ownerToken, w.programID, "?groupBy=partner&dateFrom=2025-01-01&dateTo=2025-01-31", `{"data": [],
			"meta": {"period": "custom", "dateFrom": "2025-01-01", "dateTo": "2025-01-31",
				"previousPeriod": {"dateFrom": "2024-12-01", "dateTo": "2024-12-31"}, "currency": "USD", "groupBy": "partner", "limit": 10}}`)
	})
}

// worldNumber is the n of MustWorld's "pat<n>@partner.example".
func worldNumber(t *testing.T, b *testBundle, partnerID int64) int64 {
	t.Helper()
	var n int64
	if err := b.db.QueryRow(`SELECT substring(email FROM 'pat([0-9]+)@')::bigint FROM partners WHERE id = $1`, partnerID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPerformanceRefusals(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	other := MustWorld(t, b.app)
	path := "/api/tracking/performance/"
	tests := []struct {
		desc   string
		path   string
		token  string
		status int
		msg    string
	}{
		{"ErrPeriod", "?period=1y", w.ownerToken, 400, "period must be one of: 7d, 30d, 90d, all"},
		{"ErrDateFrom", "?dateFrom=2026-3-1&dateTo=2026-03-02", w.ownerToken, 400, "dateFrom must be a date (YYYY-MM-DD)"},
		{"ErrDateTo", "?dateFrom=2026-03-01&dateTo=tomorrow", w.ownerToken, 400, "dateTo must be a date (YYYY-MM-DD)"},
		{"ErrDatePair", "?dateFrom=2026-03-01", w.ownerToken, 400, "dateFrom and dateTo must be given together"},
		{"ErrDateOrder", "?dateFrom=2026-03-02&dateTo=2026-03-01", w.ownerToken, 400, "dateFrom must not be later than dateTo"},
		{"ErrRange", "?dateFrom=2025-01-01&dateTo=2026-01-02", w.ownerToken, 400, "the range from dateFrom to dateTo must not exceed 366 days"},
		{"ErrGroupBy", "?groupBy=day", w.ownerToken, 400, "groupBy must be one of: partner, link"},
		{"ErrLimit", "?groupBy=partner&limit=101", w.ownerToken, 400, "limit must be an integer from 1 to 100"},
		{"ErrLimitText", "?limit=ten", w.ownerToken, 400, "limit must be an integer from 1 to 100"},
		{"ErrNotMember", "", other.ownerToken, 403, "you are not a member of this program's workspace"},
		{"ErrNoSession", "", "", 401, ""},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			h := bearer(tt.token)
			if tt.token == "" {
				h = nil
			}
			r := do(t, b.app, req{"GET", path + itoa(w.programID) + tt.path, nil, h})
			if r.Status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.Status, tt.status, r.Raw)
			}
			if r.Header.Get("X-Request-ID") == "" {
				t.Fatal("no X-Request-ID")
			}
			if tt.msg != "" {
				if got := r.Body["error"].(map[string]any)["message"]; got != tt.msg {
					t.Fatalf("message %q, want %q", got, tt.msg)
				}
			}
		})
	}
	t.Run("ErrNoProgram", func(t *testing.T) {
		for _, p := range []string{"999999999", "0", "x"} {
			r := do(t, b.app, req{"GET", path + p, nil, bearer(w.ownerToken)})
			if r.Status != 404 {
				t.Fatalf("%s: status %d: %s", p, r.Status, r.Raw)
			}
		}
	})
}
