package postgres_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
)

// rollupBundle is the ledger over a fresh database with the click store,
// the rollup checks and one program world.
type rollupBundle struct {
	*ledgerBundle
	traffic *postgres.TrafficStore
	rollups *postgres.RollupService
	w       saleWorld
}

func setupRollups(t *testing.T) *rollupBundle {
	t.Helper()
	b := setupLedger(t, "0")
	return &rollupBundle{ledgerBundle: b, traffic: postgres.NewTrafficStore(b.db.DB),
		rollups: postgres.NewRollupService(b.db.DB), w: b.MustWorld(t, programInput("recurring_percent", "10", "USD", 0, 30))}
}

// click is a real click of the world's partner and link at `at`.
func (b *rollupBundle) click(at time.Time, session string) ledger.Click {
	id := ledger.NewClickID(at)
	occurred, _ := ledger.ClickTime(id)
	partner, link := b.w.partnerID, b.w.linkID
	return ledger.Click{ID: id, OccurredAt: occurred, ProgramID: b.w.program.ID, PartnerID: &partner, LinkID: &link,
		SessionID: session}
}

func (b *rollupBundle) mustWrite(tb testing.TB, clicks ...ledger.Click) int {
	tb.Helper()
	n, err := b.traffic.WriteClicks(context.Background(), clicks)
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// tally counts every pending session into the visitors, as the worker's
// periodic task does, and returns how many it took.
func (b *rollupBundle) tally(tb testing.TB) int64 {
	tb.Helper()
	h := postgres.NewHousekeeper(b.db.DB)
	var total int64
	for {
		n, err := h.TallySessions(context.Background(), 3)
		if err != nil {
			tb.Fatal(err)
		}
		total += n
		if n < 3 {
			return total
		}
	}
}

// traffic3 tallies the pending sessions, then reads the program's
// traffic counters summed over its rows as "clicks visitors leads", and
// the program-wide visitors.
func (b *rollupBundle) traffic3(tb testing.TB) string {
	tb.Helper()
	b.tally(tb)
	return b.untallied(tb)
}

// untallied reads what traffic3 reads without tallying first.
func (b *rollupBundle) untallied(tb testing.TB) string {
	tb.Helper()
	var clicks, visitors, leads, program int64
	if err := b.db.QueryRow(`SELECT COALESCE(sum(clicks), 0), COALESCE(sum(visitors), 0), COALESCE(sum(leads), 0),
		(SELECT COALESCE(sum(visitors), 0) FROM rollup_visitors_daily WHERE program_id = $1)
		FROM rollup_traffic_daily WHERE program_id = $1`, b.w.program.ID).Scan(&clicks, &visitors, &leads, &program); err != nil {
		tb.Fatal(err)
	}
	return fmt.Sprintf("clicks=%d visitors=%d leads=%d program_visitors=%d", clicks, visitors, leads, program)
}

// sales reads the program's sales counters per currency, as
// "CUR conversions revenue commission refunds refunded" lines.
func (b *rollupBundle) salesRollup(tb testing.TB) string {
	tb.Helper()
	rows, err := b.db.Query(`SELECT currency, sum(conversions), sum(revenue_minor), sum(commission_minor), sum(refunds),
		sum(refunded_minor) FROM rollup_sales_daily WHERE program_id = $1 GROUP BY currency ORDER BY currency`, b.w.program.ID)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var cur string
		var n, rev, com, refunds, refunded int64
		if err := rows.Scan(&cur, &n, &rev, &com, &refunds, &refunded); err != nil {
			tb.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s conv=%d rev=%d com=%d refunds=%d refunded=%d", cur, n, rev, com, refunds, refunded))
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return strings.Join(out, "; ")
}

// commissionSum is what the program's commissions in cur carry now.
func (b *rollupBundle) commissionSum(tb testing.TB, cur string) int64 {
	tb.Helper()
	var n int64
	if err := b.db.QueryRow(`SELECT COALESCE(sum(amount_minor), 0) FROM commissions WHERE program_id = $1 AND currency = $2`,
		b.w.program.ID, cur).Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}

// mustVerify fails unless the rollups, the program-wide rows and the set
// of active partners included, match the raw tables, the program-wide
// rows are the sums of the per-link rows, and the set holds exactly the
// partners with a non-zero per-link row of the day (the triggers write
// them all from the same rows).
func (b *rollupBundle) mustVerify(tb testing.TB) {
	tb.Helper()
	diffs, err := b.rollups.VerifyRollups(context.Background(), b.w.program.ID, time.Time{}, time.Time{})
	if err != nil {
		tb.Fatal(err)
	}
	for _, d := range diffs {
		tb.Errorf("difference: %s", d)
	}
	var mismatches []string
	rows, err := b.db.Query(`
		SELECT 'traffic ' || day || ': ' || COALESCE(v.clicks, -1) || ',' || COALESCE(v.leads, -1) || ' vs '
			|| COALESCE(t.clicks, 0) || ',' || COALESCE(t.leads, 0)
		FROM (SELECT day, clicks, leads FROM rollup_visitors_daily WHERE program_id = $1) v
		FULL JOIN (SELECT day, sum(clicks) AS clicks, sum(leads) AS leads FROM rollup_traffic_daily
			WHERE program_id = $1 GROUP BY day) t USING (day)
		WHERE COALESCE(v.clicks, 0) <> COALESCE(t.clicks, 0) OR COALESCE(v.leads, 0) <> COALESCE(t.leads, 0)
		UNION ALL
		SELECT 'sales ' || day || ' ' || currency || ': ' || row(p.conversions, p.revenue_minor, p.commission_minor,
			p.refunds, p.refunded_minor)::text || ' vs ' || row(s.conversions, s.revenue_minor, s.commission_minor,
			s.refunds, s.refunded_minor)::text
		FROM (SELECT * FROM rollup_program_sales_daily WHERE program_id = $1) p
		FULL JOIN (SELECT day, currency, sum(conversions) AS conversions, sum(revenue_minor) AS revenue_minor,
			sum(commission_minor) AS commission_minor, sum(refunds) AS refunds, sum(refunded_minor) AS refunded_minor
			FROM rollup_sales_daily WHERE program_id = $1 GROUP BY day, currency) s USING (day, currency)
		WHERE row(p.conversions, p.revenue_minor, p.commission_minor, p.refunds, p.refunded_minor)
			IS DISTINCT FROM row(s.conversions, s.revenue_minor, s.commission_minor, s.refunds, s.refunded_minor)
		UNION ALL
		SELECT 'partners ' || day || ' partner ' || partner_id || ': ' || (CASE WHEN a.day IS NULL THEN 'missing' ELSE 'extra' END)
		FROM (SELECT day, partner_id FROM rollup_partners_daily WHERE program_id = $1) a
		FULL JOIN (
			SELECT day, partner_id FROM rollup_traffic_daily
			WHERE program_id = $1 AND partner_id <> 0 AND (clicks <> 0 OR visitors <> 0 OR leads <> 0)
			UNION
			SELECT day, partner_id FROM rollup_sales_daily
			WHERE program_id = $1 AND partner_id <> 0 AND (conversions <> 0 OR revenue_minor <> 0 OR commission_minor <> 0
				OR refunds <> 0 OR refunded_minor <> 0)
		) n USING (day, partner_id)
		WHERE a.day IS NULL OR n.day IS NULL`,
		b.w.program.ID)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			tb.Fatal(err)
		}
		mismatches = append(mismatches, m)
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	for _, m := range mismatches {
		tb.Errorf("program-wide row or active partner does not match the per-link rows: %s", m)
	}
}

func assertEq(tb testing.TB, what, got, want string) {
	tb.Helper()
	if got != want {
		tb.Fatalf("%s: got %q, want %q", what, got, want)
	}
}

func TestRollupClicks(t *testing.T) {
	b := setupRollups(t)
	now := b.clock.Now()
	batch := []ledger.Click{b.click(now, "s1"), b.click(now, "s1"), b.click(now, "s2"), b.click(now, "")}
	test := b.click(now, "s3")
	test.IsTest = true
	batch = append(batch, test)
	if n := b.mustWrite(t, batch...); n != 5 {
		t.Fatalf("stored %d clicks, want 5", n)
	}
	assertEq(t, "after a batch", b.traffic3(t), "clicks=4 visitors=2 leads=0 program_visitors=2")

	// The batch redelivered, and a duplicate click with a new one: only
	// the new one counts.
	if n := b.mustWrite(t, batch...); n != 0 {
		t.Fatalf("redelivered batch stored %d clicks, want 0", n)
	}
	b.mustWrite(t, batch[0], b.click(now, "s4"))
	assertEq(t, "after a redelivery", b.traffic3(t), "clicks=5 visitors=3 leads=0 program_visitors=3")

	// A session seen on another link is one more visitor of that link,
	// not of the program.
	other, err := b.partners.CreateLink(context.Background(), b.w.program.ID, b.w.partnerID, "other-link", true)
	if err != nil {
		t.Fatal(err)
	}
	c := b.click(now, "s1")
	c.LinkID = &other.ID
	b.mustWrite(t, c)
	assertEq(t, "another link", b.traffic3(t), "clicks=6 visitors=4 leads=0 program_visitors=3")
	b.mustVerify(t)
}

// TestRollupMixedBatch: one batch over two links, a click of no partner
// or link, two hours, two days, a test click and sessions seen on both
// links (migration 00030 groups a batch by key once and sums the daily
// rows from those groups): every rollup matches the raw rows, and each
// key's pending set holds its distinct sessions.
func TestRollupMixedBatch(t *testing.T) {
	b := setupRollups(t)
	now := b.clock.Now()
	other, err := b.partners.CreateLink(context.Background(), b.w.program.ID, b.w.partnerID, "mixed-other", true)
	if err != nil {
		t.Fatal(err)
	}
	onOther := func(c ledger.Click) ledger.Click { c.LinkID = &other.ID; return c }
	bare := b.click(now, "s9")
	bare.PartnerID, bare.LinkID = nil, nil
	test := b.click(now, "s8")
	test.IsTest = true
	earlier, daysAgo := now.Add(-90*time.Minute), now.Add(-72*time.Hour)
	batch := []ledger.Click{
		b.click(now, "s1"), b.click(now, "s1"), b.click(earlier, "s2"), b.click(now, ""),
		onOther(b.click(now, "s1")), onOther(b.click(earlier, "s3")), onOther(b.click(earlier, "s3")),
		b.click(daysAgo, "s1"), bare, test,
	}
	if n := b.mustWrite(t, batch...); n != len(batch) {
		t.Fatalf("stored %d clicks, want %d", n, len(batch))
	}
	var sets []string
	rows, err := b.db.Query(`SELECT link_id, array_to_string(session_ids, ',') FROM rollup_pending_sessions
		WHERE program_id = $1 ORDER BY day, link_id, 2`, b.w.program.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var link int64
		var set string
		if err := rows.Scan(&link, &set); err != nil {
			t.Fatal(err)
		}
		name := map[int64]string{0: "none", b.w.linkID: "link", other.ID: "other"}[link]
		sets = append(sets, name+":"+set)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// The click of three days ago is a day of its own; today (or, near
	// midnight, yesterday too) holds the rest.
	got := strings.Join(sets, " ")
	if !strings.HasPrefix(got, "link:s1 ") || !strings.Contains(got, "other:") || !strings.Contains(got, "none:s9") {
		t.Errorf("pending sets %q", got)
	}
	for _, set := range sets {
		ids := strings.Split(set[strings.Index(set, ":")+1:], ",")
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id] {
				t.Errorf("pending set %q holds %s twice", set, id)
			}
			seen[id] = true
		}
	}
	b.mustVerify(t)
	assertEq(t, "after the tally", b.traffic3(t), "clicks=9 visitors=6 leads=0 program_visitors=5")
	b.mustVerify(t)
}

// TestRollupBatchAcrossHours: a batch whose clicks span a UTC hour
// boundary counts each hour's clicks in its hour, stages a key's sessions
// as one set per hour (migration 00031), and the tally still counts a
// session of both hours once for the day.
func TestRollupBatchAcrossHours(t *testing.T) {
	b := setupRollups(t)
	noon := b.clock.Now().UTC().Truncate(24 * time.Hour).Add(-12 * time.Hour) // yesterday, far from midnight
	before, after := noon.Add(-time.Minute), noon.Add(time.Minute)
	b.mustWrite(t, b.click(before, "s1"), b.click(after, "s1"), b.click(after, "s2"))
	var hours []string
	rows, err := b.db.Query(`SELECT hour, clicks FROM rollup_clicks_hourly WHERE program_id = $1 ORDER BY hour`, b.w.program.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var hour time.Time
		var clicks int64
		if err := rows.Scan(&hour, &clicks); err != nil {
			t.Fatal(err)
		}
		hours = append(hours, fmt.Sprintf("%s=%d", hour.UTC().Format("15:04"), clicks))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	assertEq(t, "hourly clicks", strings.Join(hours, " "), "11:00=1 12:00=2")
	var sets string
	if err := b.db.QueryRow(`SELECT string_agg(array_to_string(session_ids, ','), ' ' ORDER BY array_to_string(session_ids, ','))
		FROM rollup_pending_sessions WHERE program_id = $1`, b.w.program.ID).Scan(&sets); err != nil {
		t.Fatal(err)
	}
	assertEq(t, "pending sets", sets, "s1 s1,s2")
	b.mustVerify(t)
	assertEq(t, "after the tally", b.traffic3(t), "clicks=3 visitors=2 leads=0 program_visitors=2")
	b.mustVerify(t)
}

// TestRollupVisitorsTallied: a click batch counts its clicks at once and
// leaves its sessions pending; the verification holds before the tally
// (it counts the pending ones); the tally counts each session once per
// key however many batches left it pending, and a second tally adds
// nothing.
func TestRollupVisitorsTallied(t *testing.T) {
	b := setupRollups(t)
	now := b.clock.Now()
	b.mustWrite(t, b.click(now, "s1"), b.click(now, "s1"), b.click(now, "s2"))
	b.mustWrite(t, b.click(now, "s1"), b.click(now, "s3"))
	assertEq(t, "before the tally", b.untallied(t), "clicks=5 visitors=0 leads=0 program_visitors=0")
	var pending int
	if err := b.db.QueryRow(`SELECT COALESCE(sum(cardinality(session_ids)), 0) FROM rollup_pending_sessions WHERE program_id = $1`, b.w.program.ID).Scan(&pending); err != nil {
		t.Fatal(err)
	}
	if pending != 4 { // s1, s2 from the first batch (distinct), s1, s3 from the second
		t.Fatalf("%d pending sessions, want 4", pending)
	}
	b.mustVerify(t)

	if n := b.tally(t); n != 4 {
		t.Fatalf("tallied %d, want 4", n)
	}
	assertEq(t, "after the tally", b.untallied(t), "clicks=5 visitors=3 leads=0 program_visitors=3")
	if n := b.tally(t); n != 0 {
		t.Fatalf("second tally took %d, want 0", n)
	}
	assertEq(t, "after a second tally", b.untallied(t), "clicks=5 visitors=3 leads=0 program_visitors=3")
	b.mustVerify(t)

	// A session already tallied, pending again from a later batch: no
	// visitor more; the verification holds before and after.
	b.mustWrite(t, b.click(now, "s2"), b.click(now, "s4"))
	b.mustVerify(t)
	assertEq(t, "a seen and a new session", b.traffic3(t), "clicks=7 visitors=4 leads=0 program_visitors=4")
	b.mustVerify(t)

	// A rebuild takes the pending sessions with it: nothing is left to
	// count twice.
	b.mustWrite(t, b.click(now, "s5"))
	if _, err := b.rollups.RebuildRollups(context.Background(), b.w.program.ID); err != nil {
		t.Fatal(err)
	}
	if err := b.db.QueryRow(`SELECT COALESCE(sum(cardinality(session_ids)), 0) FROM rollup_pending_sessions WHERE program_id = $1`, b.w.program.ID).Scan(&pending); err != nil || pending != 0 {
		t.Fatalf("%d pending sessions after the rebuild (%v), want 0", pending, err)
	}
	assertEq(t, "after a rebuild", b.untallied(t), "clicks=8 visitors=5 leads=0 program_visitors=5")
	b.mustVerify(t)
}

// TestRollupTallyTakesWholeSets: a click batch leaves one pending row per
// key holding its distinct sessions (migration 00027); the tally takes
// whole rows until it holds its limit, the last row taking it past, and
// the next tally takes the rest.
func TestRollupTallyTakesWholeSets(t *testing.T) {
	b := setupRollups(t)
	now := b.clock.Now()
	for _, s := range [][2]string{{"a1", "a2"}, {"b1", "b2"}, {"c1", "c2"}} {
		b.mustWrite(t, b.click(now, s[0]), b.click(now, s[1]), b.click(now, s[0]))
	}
	var rows, sessions int
	if err := b.db.QueryRow(`SELECT count(*), sum(cardinality(session_ids)) FROM rollup_pending_sessions
		WHERE program_id = $1`, b.w.program.ID).Scan(&rows, &sessions); err != nil {
		t.Fatal(err)
	}
	if rows != 3 || sessions != 6 {
		t.Fatalf("%d pending rows of %d sessions, want 3 of 6", rows, sessions)
	}
	h := postgres.NewHousekeeper(b.db.DB)
	for _, want := range []int64{4, 2, 0} { // rows of 2: before 0 and 2 are under 3, before 4 is not
		if n, err := h.TallySessions(context.Background(), 3); err != nil || n != want {
			t.Fatalf("tallied %d (%v), want %d", n, err, want)
		}
	}
	assertEq(t, "after the tallies", b.untallied(t), "clicks=9 visitors=6 leads=0 program_visitors=6")
	b.mustVerify(t)
}

func TestRollupLeads(t *testing.T) {
	b := setupRollups(t)
	cust := b.MustCustomerKey(t, b.w, "cust-1")
	cust2 := b.MustCustomerKey(t, b.w, "cust-2")
	cust3 := b.MustCustomerKey(t, b.w, "cust-3")
	now := b.clock.Now()
	var provisional int64
	if err := b.db.QueryRow(`INSERT INTO leads (program_id, customer_id, partner_id, mode, provisional, occurred_at)
		VALUES ($1, $2, $3, 'browser', true, $4) RETURNING id`, b.w.program.ID, cust, b.w.partnerID, now).Scan(&provisional); err != nil {
		t.Fatal(err)
	}
	if _, err := b.db.Exec(`INSERT INTO leads (program_id, customer_id, partner_id, mode, settled_at, occurred_at, is_test)
		VALUES ($1, $2, $3, 'server', $4, $4, false), ($1, $5, $3, 'server', $4, $4, true)`,
		b.w.program.ID, cust2, b.w.partnerID, now, cust3); err != nil {
		t.Fatal(err)
	}
	assertEq(t, "settled and provisional", b.traffic3(t), "clicks=3 visitors=0 leads=1 program_visitors=0")
	if _, err := b.db.Exec(`UPDATE leads SET settled_at = $2, settled_by = 'processor_payment' WHERE id = $1`, provisional, now); err != nil {
		t.Fatal(err)
	}
	// An update that settles nothing moves nothing.
	if _, err := b.db.Exec(`UPDATE leads SET converted = true WHERE program_id = $1`, b.w.program.ID); err != nil {
		t.Fatal(err)
	}
	assertEq(t, "after settling", b.traffic3(t), "clicks=3 visitors=0 leads=2 program_visitors=0")
	b.mustVerify(t)
	// A settlement undone (no write path does it today) takes the lead
	// back out of its rows, the program's day included, and a new one
	// puts it back.
	for _, q := range []string{`UPDATE leads SET settled_at = NULL, settled_by = NULL WHERE id = $1`,
		`UPDATE leads SET settled_at = now(), settled_by = 'processor_payment' WHERE id = $1`} {
		if _, err := b.db.Exec(q, provisional); err != nil {
			t.Fatal(err)
		}
		b.mustVerify(t)
	}
	assertEq(t, "settled again", b.traffic3(t), "clicks=3 visitors=0 leads=2 program_visitors=0")
	var link int64
	if err := b.db.QueryRow(`SELECT link_id FROM rollup_traffic_daily WHERE program_id = $1 AND leads > 0`, b.w.program.ID).Scan(&link); err != nil {
		t.Fatal(err)
	}
	if link != b.w.linkID {
		t.Fatalf("leads counted on link %d, want the customer's link %d", link, b.w.linkID)
	}
	b.mustVerify(t)
}

func TestRollupSalesRefundsCommissions(t *testing.T) {
	b := setupRollups(t)
	ctx := context.Background()
	click := b.MustClick(t, b.w, b.w.partnerID)
	b.MustSale(t, b.w, sale{txn: "t1", clickID: click, amount: 10000})
	s2 := b.MustSale(t, b.w, sale{txn: "t2", clickID: click, amount: 5000})
	s3 := b.MustSale(t, b.w, sale{txn: "t3", clickID: click, amount: 2000})
	b.MustSale(t, b.w, sale{txn: "t4", clickID: click, amount: 3000, currency: "EUR"})
	// A retried sale adds nothing.
	if _, err := b.sales.RecordSale(ctx, sale{txn: "t1", clickID: click, amount: 10000}.request(b.w.program.ID)); err == nil {
		t.Log("retried sale answered without error")
	}
	assertEq(t, "sales", b.salesRollup(t),
		"EUR conv=1 rev=3000 com=300 refunds=0 refunded=0; USD conv=3 rev=17000 com=1700 refunds=0 refunded=0")

	// A partial refund, its retry, and a full refund of another sale.
	refund := ledger.RefundInput{ProgramID: b.w.program.ID, TransactionID: "t1", AmountCents: 4000, RefundID: "r1"}
	for range 2 {
		if _, err := b.refunds.ApplyRefund(ctx, refund); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.refunds.ApplyRefund(ctx, ledger.RefundInput{ProgramID: b.w.program.ID, TransactionID: "t2"}); err != nil {
		t.Fatal(err)
	}
	// The commissions carry their reduced amounts (the refund rules are
	// the ledger's); the rollup holds what they carry now.
	usd := b.commissionSum(t, "USD")
	if usd >= 1700 {
		t.Fatalf("refunds reduced no commission: %d", usd)
	}
	assertEq(t, "refunds", b.salesRollup(t), fmt.Sprintf(
		"EUR conv=1 rev=3000 com=300 refunds=0 refunded=0; USD conv=3 rev=17000 com=%d refunds=2 refunded=9000", usd))
	if c := b.MustCommission(t, *s2.CommissionID); c.AmountMinor != 0 {
		t.Fatalf("fully refunded sale's commission is %d", c.AmountMinor)
	}

	// A rejected commission and an approved one.
	var owner int64
	if err := b.db.QueryRow(`SELECT id FROM users WHERE email = 'owner@acme.example'`).Scan(&owner); err != nil {
		t.Fatal(err)
	}
	review := postgres.NewCommissionReviewService(b.db.DB, nil, discard)
	if _, err := review.RejectCommission(ctx, b.w.program.ID, *s3.CommissionID, owner, "fraud"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.db.Exec(`UPDATE commissions SET status = 'approved', approved_at = now() WHERE program_id = $1 AND status = 'pending'`,
		b.w.program.ID); err != nil {
		t.Fatal(err)
	}
	if c := b.MustCommission(t, *s3.CommissionID); c.AmountMinor != 0 || usd-b.commissionSum(t, "USD") != 200 {
		t.Fatalf("rejected commission carries %d", c.AmountMinor)
	}
	assertEq(t, "rejection", b.salesRollup(t), fmt.Sprintf(
		"EUR conv=1 rev=3000 com=300 refunds=0 refunded=0; USD conv=3 rev=17000 com=%d refunds=2 refunded=9000", usd-200))
	b.mustVerify(t)
}

func TestRollupTimezone(t *testing.T) {
	b := setupRollups(t)
	ctx := context.Background()
	if _, err := b.db.Exec(`UPDATE programs SET timezone = 'Asia/Ho_Chi_Minh' WHERE id = $1`, b.w.program.ID); err != nil {
		t.Fatal(err)
	}
	late := time.Date(2026, 3, 9, 23, 30, 0, 0, time.UTC)
	b.mustWrite(t, b.click(late, "s1"), b.click(late.Add(-2*time.Hour), "s2"))
	days := func() string {
		t.Helper()
		rows, err := b.db.Query(`SELECT day, clicks FROM rollup_traffic_daily WHERE program_id = $1 ORDER BY day`, b.w.program.ID)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var day time.Time
			var n int64
			if err := rows.Scan(&day, &n); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s:%d", day.Format(time.DateOnly), n))
		}
		return strings.Join(out, " ")
	}
	// 23:30 UTC is 06:30 the next day in Ho Chi Minh City (UTC+7); 21:30
	// UTC is 04:30 the next day too.
	assertEq(t, "Ho Chi Minh days", days(), "2026-03-10:2")
	b.mustVerify(t)

	// A change of timezone rebuilds the program's rollups.
	in := ledger.SettingsInput{Timezone: ledger.Some("America/New_York")}
	p, err := b.programs.UpdateSettings(ctx, b.w.program.ID, in)
	if err != nil {
		t.Fatal(err)
	}
	if p.Timezone != "America/New_York" {
		t.Fatalf("timezone %q", p.Timezone)
	}
	assertEq(t, "New York days", days(), "2026-03-09:2")
	b.mustVerify(t)
	for _, bad := range []string{"Mars/Olympus", "Local", "", "UTC+3"} {
		_, err := b.programs.UpdateSettings(ctx, b.w.program.ID, ledger.SettingsInput{Timezone: ledger.Some(bad)})
		if ledger.ErrorCode(err) != ledger.EInvalid || !strings.Contains(err.Error(), ledger.MsgTimezone) {
			t.Errorf("timezone %q: %v, want %s", bad, err, ledger.MsgTimezone)
		}
	}
}

func TestRollupVerifyAndRebuild(t *testing.T) {
	b := setupRollups(t)
	ctx := context.Background()
	now := b.clock.Now()
	b.mustWrite(t, b.click(now, "s1"), b.click(now, "s2"))
	click := b.MustClick(t, b.w, b.w.partnerID)
	b.MustSale(t, b.w, sale{txn: "t1", clickID: click, amount: 10000})
	b.mustVerify(t)

	// Tamper with a rollup row, drop another: verify names both.
	if _, err := b.db.Exec(`UPDATE rollup_traffic_daily SET clicks = clicks + 5 WHERE program_id = $1`, b.w.program.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.db.Exec(`DELETE FROM rollup_sales_daily WHERE program_id = $1`, b.w.program.ID); err != nil {
		t.Fatal(err)
	}
	// And the program-wide rows (migration 00023): verify recomputes them
	// from the raw rows, not from the per-link rows.
	if _, err := b.db.Exec(`UPDATE rollup_visitors_daily SET clicks = clicks + 2, leads = leads + 1 WHERE program_id = $1`, b.w.program.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.db.Exec(`UPDATE rollup_program_sales_daily SET refunds = refunds + 1, revenue_minor = revenue_minor - 1 WHERE program_id = $1`, b.w.program.ID); err != nil {
		t.Fatal(err)
	}
	// And the set of active partners (migration 00024): the partner's day
	// dropped, another partner's added.
	if _, err := b.db.Exec(`DELETE FROM rollup_partners_daily WHERE program_id = $1`, b.w.program.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.db.Exec(`INSERT INTO rollup_partners_daily (program_id, day, partner_id) VALUES ($1, $2, $3)`,
		b.w.program.ID, now.Format(time.DateOnly), b.w.partnerID+1000); err != nil {
		t.Fatal(err)
	}
	diffs, err := b.rollups.VerifyRollups(ctx, b.w.program.ID, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range diffs {
		got = append(got, d.Table+"."+d.Counter+fmt.Sprintf(" %d→%d", d.Stored, d.Recomputed))
	}
	want := "rollup_traffic_daily.clicks 8→3 | rollup_visitors_daily.clicks 5→3 | rollup_visitors_daily.leads 1→0 | " +
		"rollup_sales_daily.conversions 0→1 | rollup_sales_daily.revenue_minor 0→10000 | rollup_sales_daily.commission_minor 0→1000 | " +
		"rollup_program_sales_daily.revenue_minor 9999→10000 | rollup_program_sales_daily.refunds 1→0 | " +
		"rollup_partners_daily.active 0→1 | rollup_partners_daily.active 1→0"
	assertEq(t, "differences", strings.Join(got, " | "), want)
	last := diffs[len(diffs)-3].String()
	if wantLine := "rollup_program_sales_daily day=" + diffs[len(diffs)-3].Day + " currency=USD refunds: stored 1, recomputed 0"; last != wantLine {
		t.Fatalf("line %q, want %q", last, wantLine)
	}
	if line, wantLine := diffs[len(diffs)-1].String(), fmt.Sprintf("rollup_partners_daily day=%s partner=%d active: stored 1, recomputed 0",
		now.Format(time.DateOnly), b.w.partnerID+1000); line != wantLine {
		t.Fatalf("line %q, want %q", line, wantLine)
	}

	// Outside the days asked, no difference.
	day := now.AddDate(0, 0, -10)
	diffs, err = b.rollups.VerifyRollups(ctx, b.w.program.ID, day, day)
	if err != nil || len(diffs) != 0 {
		t.Fatalf("verify of another day: %v, %v", diffs, err)
	}

	rebuilt, err := b.rollups.RebuildRollups(ctx, 0)
	if err != nil || len(rebuilt) == 0 {
		t.Fatalf("rebuild: %v, %v", rebuilt, err)
	}
	b.mustVerify(t)
	// The rebuilt sessions keep counting exactly once.
	b.mustWrite(t, b.click(now, "s1"), b.click(now, "s9"))
	b.mustVerify(t)
	if _, err := b.rollups.VerifyRollups(ctx, 1<<40, time.Time{}, time.Time{}); ledger.ErrorCode(err) != ledger.ENotFound {
		t.Fatalf("unknown program: %v", err)
	}
}

// TestRollupConcurrentWriters runs click batches (overlapping, so some
// are redeliveries), sales, session tallies and rebuilds in parallel: the
// rollups match the raw tables after, and no writer deadlocked.
func TestRollupConcurrentWriters(t *testing.T) {
	b := setupRollups(t)
	ctx := context.Background()
	now := b.clock.Now()
	// A second partner's clicks are every third click, so both partners
	// are active on most days, each first made active by concurrent
	// batches (the set of migration 00024).
	pa, err := b.partners.EnrollPartner(ctx, b.w.program.ID, "second@partner.example", "Second")
	if err != nil {
		t.Fatal(err)
	}
	l2, err := b.partners.CreateLink(ctx, b.w.program.ID, pa.ID, "second", true)
	if err != nil {
		t.Fatal(err)
	}
	var batches [][]ledger.Click
	for i := range 12 {
		var batch []ledger.Click
		for j := range 40 {
			c := b.click(now.Add(-time.Duration(j)*time.Hour), fmt.Sprintf("s%d", (i*7+j)%25))
			if (i+j)%3 == 0 {
				c.PartnerID, c.LinkID = &pa.ID, &l2.ID
			}
			batch = append(batch, c)
		}
		batches = append(batches, batch)
	}
	click := b.MustClick(t, b.w, b.w.partnerID)
	click2 := b.MustClick(t, saleWorld{program: b.w.program, partnerID: pa.ID, linkID: l2.ID}, pa.ID)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each batch is written twice, by two goroutines.
			if _, err := b.traffic.WriteClicks(ctx, batches[i%12]); err != nil {
				errs <- err
			}
		}()
	}
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := sale{txn: fmt.Sprintf("c%d", i%8), clickID: click, amount: int64(1000 + i%8)}
			if i%2 == 1 {
				s.clickID = click2
			}
			if _, err := b.sales.RecordSale(ctx, s.request(b.w.program.ID)); err != nil && ledger.ErrorCode(err) != ledger.EDuplicateTransaction {
				errs <- err
			}
		}()
	}
	// Tallies run among them too, as the worker's periodic task does.
	h := postgres.NewHousekeeper(b.db.DB)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				if _, err := h.TallySessions(ctx, 7); err != nil {
					errs <- err
				}
			}
		}()
	}
	// Rebuilds run among the writers: each waits for the writers in
	// flight and holds back the next ones, so nothing is lost or doubled.
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := b.rollups.RebuildRollups(ctx, b.w.program.ID); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	b.mustVerify(t) // with sessions still pending
	assertEq(t, "clicks", strings.Fields(b.traffic3(t))[0], "clicks=482")
	var days, active int
	if err := b.db.QueryRow(`SELECT count(DISTINCT day), count(*) FROM rollup_partners_daily WHERE program_id = $1`,
		b.w.program.ID).Scan(&days, &active); err != nil {
		t.Fatal(err)
	}
	if days < 2 || active <= days {
		t.Fatalf("active partners: %d over %d days, want both partners on some day", active, days)
	}
	b.mustVerify(t)
}

// BenchmarkWriteClicksRollups is BenchmarkWriteClicks with the rollup
// trigger on and off, in one run over one database: batches of 42 clicks
// from four writers, each click a new session (the worst case for the
// unique visitors: each one appended to the pending sessions). Compare the clicks/s of the two sub-benchmarks; the
// order alternates so neither always runs on the warmer database.
func BenchmarkWriteClicksRollups(b *testing.B) {
	tb := bundleOn(pgtest.New(b))
	p := MustProgram(b, tb)
	ctx := context.Background()
	pa, err := tb.partners.EnrollPartner(ctx, p.ID, "pat@partner.example", "Pat")
	if err != nil {
		b.Fatal(err)
	}
	l, err := tb.partners.CreateLink(ctx, p.ID, pa.ID, "pat", true)
	if err != nil {
		b.Fatal(err)
	}
	w := trafficWorld{program: p, partner: pa, link: l, store: postgres.NewTrafficStore(tb.db.DB)}
	var seq atomic.Int64
	write := func(b *testing.B, batchSize int) {
		b.SetParallelism(2) // 4 writers on two cores
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			batch := make([]ledger.Click, batchSize)
			for pb.Next() {
				now := time.Now()
				for i := range batch {
					batch[i] = w.click(now)
					batch[i].SessionID = fmt.Sprintf("sess_%d", seq.Add(1))
				}
				if n, err := w.store.WriteClicks(ctx, batch); err != nil || n != batchSize {
					b.Fatalf("wrote %d of %d: %v", n, batchSize, err)
				}
			}
		})
		b.ReportMetric(float64(b.N*batchSize)/b.Elapsed().Seconds(), "clicks/s")
	}
	trigger := func(b *testing.B, on bool) {
		q := `ALTER TABLE clicks DISABLE TRIGGER clicks_rollup`
		if on {
			q = `ALTER TABLE clicks ENABLE TRIGGER clicks_rollup`
		}
		if _, err := tb.db.Exec(q); err != nil {
			b.Fatal(err)
		}
	}
	// 42 clicks is a batch of a lightly loaded edge; 500 a full task
	// (traffic.DefaultMaxBatch), what the worker writes while draining.
	for _, size := range []int{42, 500} {
		for round := range 2 {
			for _, on := range []bool{round == 0, round != 0} {
				name := fmt.Sprintf("batch=%d/rollups=off", size)
				if on {
					name = fmt.Sprintf("batch=%d/rollups=on", size)
				}
				b.Run(name, func(b *testing.B) { trigger(b, on); write(b, size) })
			}
		}
	}
	trigger(b, true)
}

// BenchmarkTallySessions measures the session tally (migration 00025):
// each operation tallies the 500 new sessions of one click batch, written
// untimed before it, into a set that grows as the run goes on. Its
// sessions/s set against BenchmarkWriteClicksRollups' clicks/s is what the
// visitors cost Postgres in all, wherever the tally runs.
func BenchmarkTallySessions(b *testing.B) {
	tb := bundleOn(pgtest.New(b))
	p := MustProgram(b, tb)
	ctx := context.Background()
	pa, err := tb.partners.EnrollPartner(ctx, p.ID, "pat@partner.example", "Pat")
	if err != nil {
		b.Fatal(err)
	}
	l, err := tb.partners.CreateLink(ctx, p.ID, pa.ID, "pat", true)
	if err != nil {
		b.Fatal(err)
	}
	w := trafficWorld{program: p, partner: pa, link: l, store: postgres.NewTrafficStore(tb.db.DB)}
	h := postgres.NewHousekeeper(tb.db.DB)
	batch := make([]ledger.Click, 500)
	var seq int
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		now := time.Now()
		for j := range batch {
			seq++
			batch[j] = w.click(now)
			batch[j].SessionID = fmt.Sprintf("sess_%d", seq)
		}
		if _, err := w.store.WriteClicks(ctx, batch); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if n, err := h.TallySessions(ctx, len(batch)); err != nil || n != int64(len(batch)) {
			b.Fatalf("tallied %d of %d: %v", n, len(batch), err)
		}
	}
	b.ReportMetric(float64(b.N*len(batch))/b.Elapsed().Seconds(), "sessions/s")
}

// BenchmarkMoneyPathRollups measures what the rollup triggers cost the
// sale and refund paths: BenchmarkRecordSale's and BenchmarkRefund's
// work with the triggers of sales, commissions and refunds enabled and
// disabled, alternated twice in one run so that a change of the
// machine's speed shows as a difference between the rounds.
func BenchmarkMoneyPathRollups(b *testing.B) {
	lb, worlds, keys := benchWorld(b, 64)
	w := worlds[0]
	ctx := context.Background()
	txns := refundableSales(b, lb, w, keys)
	triggers := func(b *testing.B, on bool) {
		verb := "DISABLE"
		if on {
			verb = "ENABLE"
		}
		for _, q := range []string{"sales TRIGGER sales_rollup", "commissions TRIGGER commissions_rollup_insert",
			"commissions TRIGGER commissions_rollup_update", "refunds TRIGGER refunds_rollup"} {
			table, trigger, _ := strings.Cut(q, " ")
			if _, err := lb.db.Exec(`ALTER TABLE ` + table + ` ` + verb + ` ` + trigger); err != nil {
				b.Fatal(err)
			}
		}
	}
	var seq atomic.Int64
	for round := range 2 {
		for _, on := range []bool{round == 0, round != 0} {
			name := "rollups=off"
			if on {
				name = "rollups=on"
			}
			b.Run("sale/"+name, func(b *testing.B) {
				triggers(b, on)
				runParallel(b, func(int64) error {
					i := seq.Add(1)
					req := sale{txn: "txn_rollup_bench_" + strconv.FormatInt(i, 10), customerKey: keys[i%int64(len(keys))], amount: 1999}
					_, err := lb.sales.RecordSale(ctx, req.request(w.program.ID))
					return err
				})
			})
			b.Run("refund/"+name, func(b *testing.B) {
				triggers(b, on)
				runParallel(b, func(int64) error {
					i := seq.Add(1)
					_, err := lb.refunds.ApplyRefund(ctx, ledger.RefundInput{ProgramID: w.program.ID, TransactionID: txns[i%int64(len(txns))],
						AmountCents: 7, RefundID: "re_rollup_bench_" + strconv.FormatInt(i, 10), Source: ledger.SourceAPI})
					return err
				})
			})
		}
	}
	triggers(b, true)
}
