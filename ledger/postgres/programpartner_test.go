package postgres_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
)

// partnerListing is a program with partners and events to count: the
// first partner has clicks, leads and sales in two currencies (one
// refunded in part), test events, and events in a second program.
type partnerListing struct {
	*ledgerBundle
	svc            *postgres.ProgramPartnerService
	world          saleWorld // program A (USD, 10% recurring) and its partner Pat
	other          saleWorld // program B (EUR) with Pat enrolled too
	second         int64     // a second partner of A, enrolled after Pat
	testID         int64     // the synthetic test partner of A
	linkIDs        []int64   // Pat's links in A
	euroCommission int64     // Pat's pending EUR commission in A
}

func setupPartnerListing(t *testing.T) *partnerListing {
	t.Helper()
	b := setupLedger(t, "0")
	ctx := context.Background()
	l := &partnerListing{ledgerBundle: b, svc: postgres.NewProgramPartnerService(b.db.DB, nil, nil)}
	l.world = b.MustWorld(t, programInput("recurring_percent", "10", "USD", 0, 30))
	l.linkIDs = []int64{l.world.linkID}
	pat := l.world.partnerID

	// Program B in EUR: Pat enrolled, a click and a sale there.
	progB, err := b.programs.CreateProgram(ctx, b.workspaceID, programInput("recurring_percent", "10", "EUR", 0, 30))
	if err != nil {
		t.Fatal(err)
	}
	var email string
	if err := b.db.QueryRow(`SELECT email FROM partners WHERE id = $1`, pat).Scan(&email); err != nil {
		t.Fatal(err)
	}
	if _, err := b.partners.EnrollPartner(ctx, progB.ID, email, "Pat"); err != nil {
		t.Fatal(err)
	}
	linkB, err := b.partners.CreateLink(ctx, progB.ID, pat, "pat-b-"+strconv.FormatInt(pat, 10), true)
	if err != nil {
		t.Fatal(err)
	}
	l.other = saleWorld{program: progB, partnerID: pat, linkID: linkB.ID}
	b.MustCustomerKey(t, l.other, "b-cust")
	b.MustSale(t, l.other, sale{txn: "b-1", customerKey: "b-cust", amount: 7000})

	// In A: two plain clicks, three customers (a click each), sales; the
	// refund of a-3 turns its pending commission into a reversed one,
	// which pays nothing and is not counted.
	b.MustClick(t, l.world, pat)
	b.MustClick(t, l.world, pat)
	b.MustCustomerKey(t, l.world, "c1")
	b.MustCustomerKey(t, l.world, "c2")
	b.MustCustomerKey(t, l.world, "c3")
	s1 := b.MustSale(t, l.world, sale{txn: "a-1", customerKey: "c1", amount: 10000})
	s2 := b.MustSale(t, l.world, sale{txn: "a-2", customerKey: "c2", amount: 5000, currency: "EUR"})
	l.euroCommission = *s2.CommissionID
	b.MustSale(t, l.world, sale{txn: "a-3", customerKey: "c3", amount: 2000})
	s4 := b.MustSale(t, l.world, sale{txn: "a-4", customerKey: "c1", amount: 3000})
	b.MustSale(t, l.world, sale{txn: "a-5", customerKey: "c2", amount: 4000})
	if _, err := b.refunds.ApplyRefund(ctx, ledger.RefundInput{ProgramID: l.world.program.ID, TransactionID: "a-3", AmountCents: 500}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.balances.MarkCommissionPaid(ctx, *s1.CommissionID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.balances.ApproveCommission(ctx, *s4.CommissionID); err != nil {
		t.Fatal(err)
	}

	// Leads: one settled, one provisional (not yet settled), one test.
	for _, lead := range []struct {
		settled, test bool
	}{{true, false}, {false, false}, {true, true}} {
		var settled *time.Time
		if lead.settled {
			now := b.clock.Now()
			settled = &now
		}
		if _, err := b.db.Exec(`
			INSERT INTO leads (program_id, partner_id, mode, provisional, settled_at, is_test, occurred_at)
			VALUES ($1, $2, 'server', $3, $4, $5, now())`,
			l.world.program.ID, pat, !lead.settled, settled, lead.test); err != nil {
			t.Fatal(err)
		}
	}
	// A test click and a test sale of Pat, as the synthetic chain writes.
	if _, err := b.db.Exec(`
		INSERT INTO clicks (click_id, occurred_at, program_id, partner_id, is_test) VALUES ($1, $2, $3, $4, true)`,
		ledger.NewClickID(b.clock.Now()), b.clock.Now(), l.world.program.ID, pat); err != nil {
		t.Fatal(err)
	}
	if _, err := b.db.Exec(`
		INSERT INTO sales (program_id, partner_id, processor_event_id, amount_cents, currency, is_test, source, occurred_at)
		VALUES ($1, $2, 'test-1', 99900, 'USD', true, 'test_event', now())`, l.world.program.ID, pat); err != nil {
		t.Fatal(err)
	}

	// A second partner, later, and the synthetic test partner.
	b.clock.Add(time.Second)
	second, err := b.partners.EnrollPartner(ctx, l.world.program.ID, "zoe@other.example", "Zoé Martin")
	if err != nil {
		t.Fatal(err)
	}
	l.second = second.ID
	if err := b.db.QueryRow(`INSERT INTO partners (email, name, is_test) VALUES ('fixture@test.example', 'Test', true) RETURNING id`).Scan(&l.testID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.db.Exec(`INSERT INTO enrollments (program_id, partner_id, created_at) VALUES ($1, $2, $3)`,
		l.world.program.ID, l.testID, b.clock.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	return l
}

func TestProgramPartners(t *testing.T) {
	l := setupPartnerListing(t)
	ctx := context.Background()
	query := func(t *testing.T, in ledger.ProgramPartnerQueryInput) *ledger.ProgramPartnerPage {
		t.Helper()
		q, err := in.Validate(l.world.program.ID)
		if err != nil {
			t.Fatal(err)
		}
		page, err := l.svc.ProgramPartners(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return page
	}
	ids := func(p *ledger.ProgramPartnerPage) []int64 {
		out := []int64{}
		for _, pp := range p.Partners {
			out = append(out, pp.PartnerID)
		}
		return out
	}

	t.Run("OK counts exactly", func(t *testing.T) {
		page := query(t, ledger.ProgramPartnerQueryInput{})
		if page.Total != 2 || len(page.Partners) != 2 || page.Partners[0].PartnerID != l.second || page.Partners[1].PartnerID != l.world.partnerID {
			t.Fatalf("page = %+v", page)
		}
		pat := page.Partners[1]
		// 2 plain clicks + 3 customers' clicks; the test click is not counted.
		if pat.Clicks != 5 || pat.Leads != 1 || pat.Conversions != 5 {
			t.Fatalf("counts = %d clicks, %d leads, %d conversions", pat.Clicks, pat.Leads, pat.Conversions)
		}
		if len(pat.Revenue) != 2 || pat.Revenue[ledger.USD] != 10000+1500+3000+4000 || pat.Revenue[ledger.EUR] != 5000 {
			t.Fatalf("revenue = %v", pat.Revenue)
		}
		wantUSD := ledger.CommissionTotals{Pending: 400, Approved: 300, Paid: 1000}
		wantEUR := ledger.CommissionTotals{Pending: 500}
		if len(pat.Commissions) != 2 || pat.Commissions[ledger.USD] != wantUSD || pat.Commissions[ledger.EUR] != wantEUR {
			t.Fatalf("commissions = %+v", pat.Commissions)
		}
		if pat.Balance != 300 || pat.Balance != l.balance(t, pat.PartnerID, ledger.USD) || pat.Currency != ledger.USD {
			t.Fatalf("balance = %d %s", pat.Balance, pat.Currency)
		}
		if pat.Status != ledger.EnrollmentActive || pat.Name != "Pat" || pat.JoinedAt.IsZero() {
			t.Fatalf("pat = %+v", pat)
		}
		zoe := page.Partners[0]
		if zoe.Clicks != 0 || zoe.Leads != 0 || zoe.Conversions != 0 || len(zoe.Revenue) != 0 || len(zoe.Commissions) != 0 || zoe.Balance != 0 {
			t.Fatalf("zoe = %+v", zoe)
		}
	})

	t.Run("OK other program not mixed", func(t *testing.T) {
		q, _ := ledger.ProgramPartnerQueryInput{}.Validate(l.other.program.ID)
		page, err := l.svc.ProgramPartners(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if page.Total != 1 || len(page.Partners) != 1 {
			t.Fatalf("page = %+v", page)
		}
		pat := page.Partners[0]
		if pat.Clicks != 1 || pat.Leads != 0 || pat.Conversions != 1 || len(pat.Revenue) != 1 || pat.Revenue[ledger.EUR] != 7000 ||
			pat.Commissions[ledger.EUR] != (ledger.CommissionTotals{Pending: 700}) || pat.Currency != ledger.EUR ||
			pat.Balance != 0 {
			t.Fatalf("pat in B = %+v", pat)
		}
	})

	t.Run("OK paging", func(t *testing.T) {
		p1 := query(t, ledger.ProgramPartnerQueryInput{PageSize: ledger.Some[int64](1)})
		p2 := query(t, ledger.ProgramPartnerQueryInput{PageSize: ledger.Some[int64](1), Page: ledger.Some[int64](2)})
		p3 := query(t, ledger.ProgramPartnerQueryInput{PageSize: ledger.Some[int64](1), Page: ledger.Some[int64](3)})
		if got := append(ids(p1), ids(p2)...); len(got) != 2 || got[0] != l.second || got[1] != l.world.partnerID {
			t.Fatalf("pages = %v", got)
		}
		if p3.Total != 2 || len(p3.Partners) != 0 || p3.PageCount() != 2 {
			t.Fatalf("page 3 = %+v", p3)
		}
		far := query(t, ledger.ProgramPartnerQueryInput{Page: ledger.Some[int64](1 << 62), PageSize: ledger.Some[int64](100)})
		if far.Total != 2 || len(far.Partners) != 0 {
			t.Fatalf("far page = %+v", far)
		}
	})

	t.Run("OK filters", func(t *testing.T) {
		if got := ids(query(t, ledger.ProgramPartnerQueryInput{Q: ledger.Some("ZOÉ")})); len(got) != 1 || got[0] != l.second {
			t.Fatalf("q name = %v", got)
		}
		if got := ids(query(t, ledger.ProgramPartnerQueryInput{Q: ledger.Some("@partner.EXAMPLE")})); len(got) != 1 || got[0] != l.world.partnerID {
			t.Fatalf("q email = %v", got)
		}
		if got := query(t, ledger.ProgramPartnerQueryInput{Q: ledger.Some("%")}); got.Total != 0 {
			t.Fatalf("q %% = %+v", got)
		}
		if got := query(t, ledger.ProgramPartnerQueryInput{Q: ledger.Some("fixture")}); got.Total != 0 {
			t.Fatalf("test partner listed: %+v", got)
		}
		if _, err := l.db.Exec(`UPDATE enrollments SET status = 'removed' WHERE program_id = $1 AND partner_id = $2`,
			l.world.program.ID, l.second); err != nil {
			t.Fatal(err)
		}
		if got := ids(query(t, ledger.ProgramPartnerQueryInput{Status: ledger.Some("removed")})); len(got) != 1 || got[0] != l.second {
			t.Fatalf("removed = %v", got)
		}
		if got := ids(query(t, ledger.ProgramPartnerQueryInput{Status: ledger.Some("active")})); len(got) != 1 || got[0] != l.world.partnerID {
			t.Fatalf("active = %v", got)
		}
		if got := query(t, ledger.ProgramPartnerQueryInput{Status: ledger.Some("active"), Q: ledger.Some("zoé")}); got.Total != 0 {
			t.Fatalf("active zoé = %+v", got)
		}
	})

	t.Run("OK one partner with links", func(t *testing.T) {
		d, err := l.svc.ProgramPartner(ctx, l.world.program.ID, l.world.partnerID)
		if err != nil {
			t.Fatal(err)
		}
		if d.Clicks != 5 || d.Conversions != 5 || d.Balance != 300 || len(d.Links) != 1 || d.Links[0].ID != l.world.linkID || !d.Links[0].Active {
			t.Fatalf("detail = %+v", d)
		}
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		for _, tc := range []struct {
			desc               string
			program, partnerID int64
		}{
			{"not enrolled", l.other.program.ID, l.second},
			{"test partner", l.world.program.ID, l.testID},
			{"no such partner", l.world.program.ID, 1 << 40},
		} {
			_, err := l.svc.ProgramPartner(ctx, tc.program, tc.partnerID)
			if ledger.ErrorCode(err) != ledger.ENotFound {
				t.Errorf("%s: err = %v", tc.desc, err)
			}
		}
	})

	// Last: it changes A's EUR commissions. Pat's EUR balance then holds
	// money earned in A; B, an EUR program perhaps of another workspace,
	// must not show it.
	t.Run("OK balance is the program's own", func(t *testing.T) {
		if _, err := l.balances.ApproveCommission(ctx, l.euroCommission); err != nil {
			t.Fatal(err)
		}
		if got := l.balance(t, l.world.partnerID, ledger.EUR); got != 500 {
			t.Fatalf("Pat's EUR balance = %d, want 500", got)
		}
		q, _ := ledger.ProgramPartnerQueryInput{}.Validate(l.other.program.ID)
		page, err := l.svc.ProgramPartners(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Partners) != 1 || page.Partners[0].Balance != 0 {
			t.Fatalf("Pat in B = %+v, want balance 0", page.Partners)
		}
	})
}

// TestProgramPartnerBatch walks more partners than two batches hold: every
// partner once, in the listing's order, with enrollments sharing a time.
func TestProgramPartnerBatch(t *testing.T) {
	b := setupLedger(t, "0")
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "10", "USD", 0, 30))
	const n = 2*ledger.PartnerExportBatch + 7
	if _, err := b.db.Exec(`
		WITH p AS (
			INSERT INTO partners (email, name)
			SELECT 'bulk' || i || '@partner.example', 'Bulk ' || i FROM generate_series(1, $2::int) i
			RETURNING id
		)
		INSERT INTO enrollments (program_id, partner_id, created_at)
		SELECT $1, id, timestamptz '2026-01-01' + (id % 50) * interval '1 minute' FROM p`, w.program.ID, n); err != nil {
		t.Fatal(err)
	}
	q, _ := ledger.ProgramPartnerQueryInput{}.Validate(w.program.ID)
	svc := postgres.NewProgramPartnerService(b.db.DB, nil, nil)
	// walk reads every batch of q and returns the partners and the batches.
	walk := func(q ledger.ProgramPartnerQuery) ([]ledger.ProgramPartner, int) {
		t.Helper()
		var all []ledger.ProgramPartner
		var after *ledger.ProgramPartner
		for batches := 1; ; batches++ {
			batch, err := svc.ProgramPartnerBatch(ctx, q, after)
			if err != nil {
				t.Fatal(err)
			}
			if len(batch) > ledger.PartnerExportBatch {
				t.Fatalf("batch of %d", len(batch))
			}
			all = append(all, batch...)
			if len(batch) < ledger.PartnerExportBatch {
				return all, batches
			}
			after = &all[len(all)-1]
		}
	}
	got, batches := walk(q)
	if batches != 3 {
		t.Fatalf("%d batches, want 3", batches)
	}
	if len(got) != n+1 {
		t.Fatalf("walked %d partners, want %d", len(got), n+1)
	}
	seen := map[int64]bool{}
	for i, p := range got {
		if seen[p.PartnerID] {
			t.Fatalf("partner %d twice", p.PartnerID)
		}
		seen[p.PartnerID] = true
		if i > 0 {
			prev := got[i-1]
			if p.JoinedAt.After(prev.JoinedAt) || (p.JoinedAt.Equal(prev.JoinedAt) && p.PartnerID > prev.PartnerID) {
				t.Fatalf("order broken at %d: %v/%d after %v/%d", i, p.JoinedAt, p.PartnerID, prev.JoinedAt, prev.PartnerID)
			}
		}
	}
	qf, _ := ledger.ProgramPartnerQueryInput{Q: ledger.Some("bulk 1")}.Validate(w.program.ID)
	filtered, _ := walk(qf)
	count := len(filtered)
	// "Bulk 1", "Bulk 10".."Bulk 19", "Bulk 100".."Bulk 199", "Bulk 1000"..: 1+10+100+8.
	if want := b.count(t, `SELECT count(*) FROM partners WHERE name LIKE 'Bulk 1%'`); count != want || count != 119 {
		t.Fatalf("filtered walk = %d, want %d", count, want)
	}
}
