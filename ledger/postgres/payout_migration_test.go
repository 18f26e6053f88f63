package postgres_test

import (
	"context"
	"testing"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/migrations"
)

// TestPayoutEntriesMigration: migration 00018 over a partner paid by an
// operator withdrawal before balance entries named programs. Credits get
// their commission's program; the withdrawal's payout entry is spread over
// the programs in the order they were first credited, never more than a
// program held, the rest without a program; every sum is unchanged. A
// payout then finds nothing to pay where the money was paid already.
func TestPayoutEntriesMigration(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	sqlDB := b.db.DB.DB.DB
	if _, err := b.db.Exec(`DROP SCHEMA public CASCADE; CREATE SCHEMA public`); err != nil {
		t.Fatal(err)
	}
	if err := migrations.UpTo(ctx, sqlDB, 17); err != nil {
		t.Fatal(err)
	}
	var ws, p1, p2, partner, withdrawal int64
	mustScan := func(dst *int64, q string, args ...any) {
		t.Helper()
		if err := b.db.QueryRow(q, args...).Scan(dst); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	mustScan(&ws, `INSERT INTO workspaces (name) VALUES ('Acme') RETURNING id`)
	mustScan(&p1, `INSERT INTO programs (workspace_id, name, domain, commission_type, commission_rate) VALUES ($1, 'One', 'one.example', 'percent', 20) RETURNING id`, ws)
	mustScan(&p2, `INSERT INTO programs (workspace_id, name, domain, commission_type, commission_rate) VALUES ($1, 'Two', 'two.example', 'percent', 20) RETURNING id`, ws)
	mustScan(&partner, `INSERT INTO partners (email, name) VALUES ('ana@creator.example', 'Ana') RETURNING id`)
	if _, err := b.db.Exec(`INSERT INTO balance_accounts (partner_id, currency) VALUES ($1, 'USD')`, partner); err != nil {
		t.Fatal(err)
	}
	// Credits: 30.00 in program two first, then 50.00 in program one.
	credit := func(program int64, n string, minor int64) {
		t.Helper()
		var sale, commission int64
		mustScan(&sale, `INSERT INTO sales (program_id, processor_event_id, amount_cents, currency, source, occurred_at)
			VALUES ($1, $2, $3, 'USD', 'api', now()) RETURNING id`, program, "evt-"+n, minor*5)
		mustScan(&commission, `INSERT INTO commissions (program_id, partner_id, sale_id, currency, original_minor, amount_minor, status, credited, approve_after)
			VALUES ($1, $2, $3, 'USD', $4, $4, 'approved', true, now()) RETURNING id`, program, partner, sale, minor)
		if _, err := b.db.Exec(`INSERT INTO balance_entries (partner_id, currency, kind, amount_minor, commission_id)
			VALUES ($1, 'USD', 'credit', $2, $3)`, partner, minor, commission); err != nil {
			t.Fatal(err)
		}
	}
	credit(p2, "a", 3000)
	credit(p1, "b", 5000)
	// A paid withdrawal of 70.00: 30.00 of program two, 40.00 of program one.
	mustScan(&withdrawal, `INSERT INTO withdrawals (partner_id, currency, requested_minor, amount_minor, status, paid_at)
		VALUES ($1, 'USD', 7000, 7000, 'paid', now()) RETURNING id`, partner)
	if _, err := b.db.Exec(`INSERT INTO balance_entries (partner_id, currency, kind, amount_minor, withdrawal_id)
		VALUES ($1, 'USD', 'payout', -7000, $2)`, partner, withdrawal); err != nil {
		t.Fatal(err)
	}

	if err := migrations.Up(ctx, sqlDB, nil); err != nil {
		t.Fatal(err)
	}
	sum := func(q string, args ...any) int64 {
		t.Helper()
		var n int64
		mustScan(&n, q, args...)
		return n
	}
	if got := sum(`SELECT SUM(amount_minor) FROM balance_entries WHERE partner_id = $1`, partner); got != 1000 {
		t.Fatalf("account balance after the migration = %d, want 1000", got)
	}
	for program, want := range map[int64]int64{p1: 1000, p2: 0} {
		if got := sum(`SELECT COALESCE(SUM(amount_minor), 0) FROM balance_entries WHERE program_id = $1`, program); got != want {
			t.Errorf("program %d balance = %d, want %d", program, got, want)
		}
	}
	if got := sum(`SELECT count(*) FROM balance_entries WHERE program_id IS NULL`); got != 0 {
		t.Errorf("%d entries left without a program", got)
	}
	if got := sum(`SELECT count(*) FROM balance_entries WHERE withdrawal_id = $1`, withdrawal); got != 2 {
		t.Errorf("the withdrawal has %d entries, want one per program", got)
	}

	// From now on every writer names the program: a credit without one
	// is refused.
	if _, err := b.db.Exec(`INSERT INTO balance_entries (partner_id, currency, kind, amount_minor)
		VALUES ($1, 'USD', 'credit', 100)`, partner); err == nil {
		t.Fatal("a credit without a program was stored")
	}
	// Money paid out that no program held (a remainder the migration left
	// without a program) is never paid a second time: program one still
	// counts 10.00, the account holds nothing, and a payout run pays no one.
	if _, err := b.db.Exec(`INSERT INTO balance_entries (partner_id, currency, kind, amount_minor, withdrawal_id)
		VALUES ($1, 'USD', 'payout', -1000, $2)`, partner, withdrawal); err != nil {
		t.Fatal(err)
	}
	if _, err := b.db.Exec(`UPDATE programs SET minimum_payout = 0`); err != nil {
		t.Fatal(err)
	}
	run, err := postgres.NewPayoutService(b.db.DB, nil, discard).CreatePayouts(ctx, p1, []int64{partner}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Created) != 0 || len(run.Skipped) != 1 || run.Skipped[0].Reason != ledger.PayoutSkipNotDue {
		t.Fatalf("a payout of money paid out already: %+v", run)
	}
}
