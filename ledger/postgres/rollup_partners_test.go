package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
)

// activePartners reads the program's set of active partners (migration
// 00024) as "day:name" pairs in key order, naming each partner by names.
func (b *rollupBundle) activePartners(tb testing.TB, names map[int64]string) string {
	tb.Helper()
	rows, err := b.db.Query(`SELECT day, partner_id FROM rollup_partners_daily WHERE program_id = $1 ORDER BY day, partner_id`,
		b.w.program.ID)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var day time.Time
		var id int64
		if err := rows.Scan(&day, &id); err != nil {
			tb.Fatal(err)
		}
		name, ok := names[id]
		if !ok {
			name = fmt.Sprint(id)
		}
		out = append(out, day.Format(time.DateOnly)+":"+name)
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return strings.Join(out, " ")
}

// TestRollupActivePartners: each write path puts the partner of its
// event in the set of the event's day once (a click, a redelivered
// batch, a sale on a day without clicks, a refund on a later day, a lead
// settled by update or inserted settled); test events, provisional leads
// and events without a partner put nothing; a settlement undone takes the
// partner's day out when nothing else counts it. The performance series
// reads its partners per day and over the window from the set.
func TestRollupActivePartners(t *testing.T) {
	b := setupRollups(t)
	ctx := context.Background()
	now := b.clock.Now()
	day := func(d int) string { return now.AddDate(0, 0, d).Format(time.DateOnly) }
	p1 := b.w.partnerID
	mustPartner := func(email, code string) saleWorld {
		t.Helper()
		pa, err := b.partners.EnrollPartner(ctx, b.w.program.ID, email, code)
		if err != nil {
			t.Fatal(err)
		}
		l, err := b.partners.CreateLink(ctx, b.w.program.ID, pa.ID, code, true)
		if err != nil {
			t.Fatal(err)
		}
		return saleWorld{program: b.w.program, partnerID: pa.ID, linkID: l.ID}
	}
	w2, w3 := mustPartner("two@partner.example", "two"), mustPartner("three@partner.example", "three")
	names := map[int64]string{p1: "p1", w2.partnerID: "p2", w3.partnerID: "p3"}
	on := func(c ledger.Click, w saleWorld) ledger.Click {
		c.PartnerID, c.LinkID = &w.partnerID, &w.linkID
		return c
	}

	// Clicks: p1's count today, p2's test click does not, p2's real click
	// three days ago does; the batch redelivered adds nothing.
	test := on(b.click(now, "s2"), w2)
	test.IsTest = true
	batch := []ledger.Click{b.click(now, "s1"), b.click(now, "s1"), test, on(b.click(now.AddDate(0, 0, -3), "s3"), w2)}
	for range 2 {
		b.mustWrite(t, batch...)
	}
	assertEq(t, "after clicks", b.activePartners(t, names), day(-3)+":p2 "+day(0)+":p1")
	b.mustVerify(t)

	// A sale of p2 today (its click was three days ago) makes p2 active
	// today; a click without a partner makes no one active.
	s := b.MustSale(t, w2, sale{txn: "t-p2", clickID: batch[3].ID, amount: 10000})
	b.MustClick(t, b.w, 0)
	assertEq(t, "after a sale", b.activePartners(t, names), day(-3)+":p2 "+day(0)+":p1 "+day(0)+":p2")

	// Leads of p3: provisional five days ago (nothing), then settled by an
	// update; one inserted settled six days ago; a test lead (nothing).
	cust, cust2, cust3 := b.MustCustomerKey(t, b.w, "cust-p3"), b.MustCustomerKey(t, b.w, "cust-p3b"), b.MustCustomerKey(t, b.w, "cust-p3c")
	var lead int64
	if err := b.db.QueryRow(`INSERT INTO leads (program_id, customer_id, partner_id, mode, provisional, occurred_at)
		VALUES ($1, $2, $3, 'browser', true, $4) RETURNING id`, b.w.program.ID, cust, w3.partnerID, now.AddDate(0, 0, -5)).Scan(&lead); err != nil {
		t.Fatal(err)
	}
	if _, err := b.db.Exec(`INSERT INTO leads (program_id, customer_id, partner_id, mode, settled_at, occurred_at, is_test)
		VALUES ($1, $2, $3, 'server', $4, $4, false), ($1, $5, $3, 'server', $6, $6, true)`,
		b.w.program.ID, cust2, w3.partnerID, now.AddDate(0, 0, -6), cust3, now.AddDate(0, 0, -7)); err != nil {
		t.Fatal(err)
	}
	base := day(-3) + ":p2 " + day(0) + ":p1 " + day(0) + ":p2"
	assertEq(t, "provisional lead", b.activePartners(t, names), day(-6)+":p3 "+base)
	settle := func(q string) {
		t.Helper()
		if _, err := b.db.Exec(q, lead); err != nil {
			t.Fatal(err)
		}
		b.mustVerify(t)
	}
	settle(`UPDATE leads SET settled_at = now(), settled_by = 'processor_payment' WHERE id = $1`)
	assertEq(t, "lead settled", b.activePartners(t, names), day(-6)+":p3 "+day(-5)+":p3 "+base)
	// Undone (no write path does it): p3 has nothing else on that day.
	settle(`UPDATE leads SET settled_at = NULL, settled_by = NULL WHERE id = $1`)
	assertEq(t, "settlement undone", b.activePartners(t, names), day(-6)+":p3 "+base)
	settle(`UPDATE leads SET settled_at = now(), settled_by = 'processor_payment' WHERE id = $1`)
	// An update that settles nothing changes nothing.
	settle(`UPDATE leads SET converted = true WHERE id = $1`)

	// A refund two days later: p2 is active on the refund's day.
	b.clock.Add(48 * time.Hour)
	if _, err := b.refunds.ApplyRefund(ctx, ledger.RefundInput{ProgramID: b.w.program.ID, TransactionID: "t-p2", AmountCents: 2500,
		RefundID: "r1"}); err != nil {
		t.Fatal(err)
	}
	if s.CommissionID == nil {
		t.Fatal("no commission")
	}
	want := day(-6) + ":p3 " + day(-5) + ":p3 " + base + " " + day(2) + ":p2"
	assertEq(t, "after a refund", b.activePartners(t, names), want)
	b.mustVerify(t)

	// The performance series: the set's partners per day and over the
	// window (p1, p2, p3), not the sum of the days.
	svc := postgres.NewPerformanceService(b.db.DB, b.clock.Now)
	r, err := svc.Performance(ctx, ledger.PerformanceQuery{ProgramID: b.w.program.ID, Period: ledger.Period30d})
	if err != nil {
		t.Fatal(err)
	}
	var perDay []string
	for _, d := range r.Days {
		if d.Partners != 0 {
			perDay = append(perDay, fmt.Sprintf("%s:%d", d.Date.Format(time.DateOnly), d.Partners))
		}
	}
	assertEq(t, "partners per day", strings.Join(perDay, " "),
		day(-6)+":1 "+day(-5)+":1 "+day(-3)+":1 "+day(0)+":2 "+day(2)+":1")
	if r.Total.Partners != 3 {
		t.Fatalf("partners over the window: %d, want 3", r.Total.Partners)
	}
}
