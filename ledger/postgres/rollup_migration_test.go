package postgres_test

import (
	"context"
	"testing"

	"github.com/partnertrack/partnertrack/migrations"
)

// programAtVersion returns a database migrated up to version (an empty
// schema first) holding one workspace and one program, and the program's
// id: the start of a test of the migration after version.
func programAtVersion(t *testing.T, version int64) (*testBundle, int64) {
	t.Helper()
	b := setup(t)
	if _, err := b.db.Exec(`DROP SCHEMA public CASCADE; CREATE SCHEMA public`); err != nil {
		t.Fatal(err)
	}
	if err := migrations.UpTo(context.Background(), b.db.DB.DB.DB, version); err != nil {
		t.Fatal(err)
	}
	var ws, p int64
	if err := b.db.QueryRow(`INSERT INTO workspaces (name) VALUES ('Acme') RETURNING id`).Scan(&ws); err != nil {
		t.Fatal(err)
	}
	if err := b.db.QueryRow(`INSERT INTO programs (workspace_id, name, domain, commission_type, commission_rate)
		VALUES ($1, 'One', 'one.example', 'percent', 20) RETURNING id`, ws).Scan(&p); err != nil {
		t.Fatal(err)
	}
	return b, p
}

// TestRollupProgramRowsMigration: migration 00023 over rollups kept by
// the triggers of 00017. The program-wide rows it adds start as the sums
// of the per-link rows of each day (and currency); the program's visitors
// per day are kept, not recounted; days with clicks but no session get a
// row.
func TestRollupProgramRowsMigration(t *testing.T) {
	b, p := programAtVersion(t, 22)
	ctx := context.Background()
	sqlDB := b.db.DB.DB.DB
	for _, q := range []string{
		`INSERT INTO rollup_traffic_daily (program_id, day, partner_id, link_id, clicks, visitors, leads) VALUES
			($1, '2026-03-01', 1, 11, 10, 8, 2), ($1, '2026-03-01', 1, 12, 5, 5, 0), ($1, '2026-03-01', 0, 0, 3, 0, 1),
			($1, '2026-03-02', 2, 21, 7, 0, 0)`,
		`INSERT INTO rollup_visitors_daily (program_id, day, visitors) VALUES ($1, '2026-03-01', 11)`,
		`INSERT INTO rollup_sales_daily (program_id, day, partner_id, link_id, currency, conversions, revenue_minor,
			commission_minor, refunds, refunded_minor) VALUES
			($1, '2026-03-01', 1, 11, 'USD', 2, 10000, 3000, 0, 0), ($1, '2026-03-01', 1, 12, 'USD', 1, 1999, 600, 1, 500),
			($1, '2026-03-01', 1, 11, 'EUR', 1, 5000, 1500, 0, 0), ($1, '2026-03-02', 2, 21, 'USD', 0, 0, 0, 2, 700)`,
	} {
		if _, err := b.db.Exec(q, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := migrations.Up(ctx, sqlDB, nil); err != nil {
		t.Fatal(err)
	}
	read := func(q string) string {
		t.Helper()
		var s string
		if err := b.db.QueryRow(q, p).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	assertEq(t, "traffic", read(`SELECT string_agg(day || ' ' || clicks || ' ' || visitors || ' ' || leads, '; ' ORDER BY day)
		FROM rollup_visitors_daily WHERE program_id = $1`), "2026-03-01 18 11 3; 2026-03-02 7 0 0")
	assertEq(t, "sales", read(`SELECT string_agg(day || ' ' || currency || ' ' || conversions || ' ' || revenue_minor || ' '
			|| commission_minor || ' ' || refunds || ' ' || refunded_minor, '; ' ORDER BY day, currency)
		FROM rollup_program_sales_daily WHERE program_id = $1`),
		"2026-03-01 EUR 1 5000 1500 0 0; 2026-03-01 USD 3 11999 3600 1 500; 2026-03-02 USD 0 0 0 2 700")
}

// TestRollupPartnersMigration: migration 00024 over rollups kept by the
// triggers of 00023. The set of active partners starts as the partners
// with a non-zero counter in a per-link row of the day, in either table
// (a refund alone counts); partner 0 and all-zero rows do not. The
// replaced triggers then add to it.
func TestRollupPartnersMigration(t *testing.T) {
	b, p := programAtVersion(t, 23)
	ctx := context.Background()
	sqlDB := b.db.DB.DB.DB
	for _, q := range []string{
		`INSERT INTO rollup_traffic_daily (program_id, day, partner_id, link_id, clicks, visitors, leads) VALUES
			($1, '2026-03-01', 1, 11, 10, 8, 2), ($1, '2026-03-01', 1, 12, 5, 5, 0), ($1, '2026-03-01', 0, 0, 3, 0, 1),
			($1, '2026-03-02', 2, 21, 0, 0, 1), ($1, '2026-03-03', 3, 31, 0, 0, 0)`,
		`INSERT INTO rollup_sales_daily (program_id, day, partner_id, link_id, currency, conversions, revenue_minor,
			commission_minor, refunds, refunded_minor) VALUES
			($1, '2026-03-01', 2, 21, 'USD', 1, 1999, 600, 0, 0), ($1, '2026-03-04', 1, 11, 'EUR', 0, 0, 0, 1, 500),
			($1, '2026-03-05', 4, 41, 'USD', 0, 0, 0, 0, 0), ($1, '2026-03-05', 0, 0, 'USD', 1, 100, 0, 0, 0)`,
	} {
		if _, err := b.db.Exec(q, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := migrations.Up(ctx, sqlDB, nil); err != nil {
		t.Fatal(err)
	}
	read := func() string {
		t.Helper()
		var s string
		if err := b.db.QueryRow(`SELECT string_agg(day || ' ' || partner_id, '; ' ORDER BY day, partner_id)
			FROM rollup_partners_daily WHERE program_id = $1`, p).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	assertEq(t, "backfilled", read(), "2026-03-01 1; 2026-03-01 2; 2026-03-02 2; 2026-03-04 1")
	// The click trigger of 00024 adds partner 3's day (its all-zero row
	// did not), and nothing for a click already counted on its day.
	if _, err := b.db.Exec(`INSERT INTO clicks (click_id, occurred_at, program_id, partner_id, link_id) VALUES
		('c1', '2026-03-03 10:00Z', $1, 3, 31), ('c2', '2026-03-01 10:00Z', $1, 1, 11)`, p); err != nil {
		t.Fatal(err)
	}
	assertEq(t, "after clicks", read(), "2026-03-01 1; 2026-03-01 2; 2026-03-02 2; 2026-03-03 3; 2026-03-04 1")
}

// TestRollupPendingSetsMigration: migration 00027 over sessions left
// pending by the trigger of 00025. They become one row per key holding
// the key's distinct sessions, and the tally counts them as it would
// have.
func TestRollupPendingSetsMigration(t *testing.T) {
	b, p := programAtVersion(t, 26)
	ctx := context.Background()
	sqlDB := b.db.DB.DB.DB
	if _, err := b.db.Exec(`INSERT INTO rollup_pending_sessions (program_id, day, partner_id, link_id, session_id) VALUES
		($1, '2026-03-01', 1, 11, 's1'), ($1, '2026-03-01', 1, 11, 's2'), ($1, '2026-03-01', 1, 11, 's1'),
		($1, '2026-03-01', 1, 12, 's1'), ($1, '2026-03-02', 0, 0, 's3')`, p); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Up(ctx, sqlDB, nil); err != nil {
		t.Fatal(err)
	}
	read := func(q string) string {
		t.Helper()
		var s string
		if err := b.db.QueryRow(q, p).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	assertEq(t, "pending sets", read(`SELECT string_agg(day || ' ' || partner_id || ' ' || link_id || ' '
			|| array_to_string(ARRAY(SELECT unnest(session_ids) ORDER BY 1), ','), '; ' ORDER BY day, partner_id, link_id)
		FROM rollup_pending_sessions WHERE program_id = $1`),
		"2026-03-01 1 11 s1,s2; 2026-03-01 1 12 s1; 2026-03-02 0 0 s3")
	var n int64
	if err := b.db.QueryRow(`SELECT rollup_tally_sessions(100)`).Scan(&n); err != nil || n != 4 {
		t.Fatalf("tallied %d (%v), want 4", n, err)
	}
	assertEq(t, "visitors", read(`SELECT string_agg(day || ' ' || visitors, '; ' ORDER BY day)
		FROM rollup_visitors_daily WHERE program_id = $1`), "2026-03-01 2; 2026-03-02 1")
	assertEq(t, "per link", read(`SELECT string_agg(day || ' ' || partner_id || ' ' || link_id || ' ' || visitors, '; '
			ORDER BY day, partner_id, link_id)
		FROM rollup_traffic_daily WHERE program_id = $1`), "2026-03-01 1 11 2; 2026-03-01 1 12 1; 2026-03-02 0 0 1")
}
