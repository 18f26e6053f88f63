package postgres_test

import (
	"context"
	"testing"

	"github.com/lib/pq"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
)

// TestArrayStatementsSettleOnGenericPlans: the prepared statements that
// take a batch as arrays keep their generic plan after Postgres's five
// custom ones, instead of being planned anew on every call (a custom plan
// that sees the arrays' lengths always looks cheaper than the generic
// one). The sales make a custom plan of the refund snapshots cheaper
// than its generic plan, as on a system in use.
func TestArrayStatementsSettleOnGenericPlans(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	p := MustProgram(t, bundleOn(db))
	if _, err := db.ExecContext(ctx, `INSERT INTO sales (program_id, processor_event_id, amount_cents, currency, source, occurred_at)
		SELECT $1, 'txn_' || n, 1000, 'USD', 'api', now() FROM generate_series(1, 20000) n`, p.ID); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		query string
		args  []any
	}{
		{"key lookups", postgres.QProgramKeysByHash, []any{pq.ByteaArray{[]byte("a"), []byte("b")}}},
		{"refund snapshots", postgres.QRefundSnapshots, []any{pq.Array([]int64{1, 2}), pq.Array([]string{"t1", "t2"}),
			pq.Array([]int64{0, 7}), pq.Array([]string{"", "re_1"}), pq.Array([]int64{1, 2}), "commission.reversed", "commission.refunded"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			stmt, err := conn.PrepareContext(ctx, c.query)
			if err != nil {
				t.Fatal(err)
			}
			defer stmt.Close()
			const calls = 12
			for i := 0; i < calls; i++ {
				rows, err := stmt.QueryContext(ctx, c.args...)
				if err != nil {
					t.Fatal(err)
				}
				rows.Close()
			}
			var generic, custom int
			if err := conn.QueryRowContext(ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1`,
				c.query).Scan(&generic, &custom); err != nil {
				t.Fatal(err)
			}
			if custom > 5 || generic+custom != calls {
				t.Errorf("%d custom and %d generic plans in %d calls, want at most 5 custom", custom, generic, calls)
			}
		})
	}
}

// TestRollupTriggersLookRowsUpByKey: the rollup triggers of sales,
// commissions and refunds read the sales of their rows by key even on a
// connection that planned them while `sales` was nearly empty, as a new
// database is (migration 00029): a plan that hashed a scan of the whole
// table would read every sale the table has gained since, on each write.
func TestRollupTriggersLookRowsUpByKey(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	p := MustProgram(t, bundleOn(db))
	var partner int64
	if err := db.QueryRowContext(ctx, `INSERT INTO partners (email, name) VALUES ('ana@creator.example', 'Ana') RETURNING id`).Scan(&partner); err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// write stores a sale, its commission, the commission's approval and a
	// refund on conn, in one transaction, and returns how many scans of
	// sales and customers it made.
	write := func(n string) (scans int64) {
		t.Helper()
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		var sale, commission int64
		if err := tx.QueryRowContext(ctx, `INSERT INTO sales (program_id, partner_id, processor_event_id, amount_cents, currency, source, occurred_at)
			VALUES ($1, $2, $3, 5000, 'USD', 'api', now()) RETURNING id`, p.ID, partner, "evt-"+n).Scan(&sale); err != nil {
			t.Fatal(err)
		}
		if err := tx.QueryRowContext(ctx, `INSERT INTO commissions (program_id, partner_id, sale_id, currency, original_minor, amount_minor, status, approve_after)
			VALUES ($1, $2, $3, 'USD', 1000, 1000, 'pending', now()) RETURNING id`, p.ID, partner, sale).Scan(&commission); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE commissions SET amount_minor = 500 WHERE id = $1`, commission); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO refunds (sale_id, program_id, amount_cents) VALUES ($1, $2, 2500)`, sale, p.ID); err != nil {
			t.Fatal(err)
		}
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(sum(seq_scan), 0) FROM pg_stat_xact_user_tables
			WHERE relname IN ('sales', 'customers')`).Scan(&scans); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		return scans
	}
	write("first") // plans the triggers' statements on conn while sales holds one row
	if _, err := db.ExecContext(ctx, `INSERT INTO sales (program_id, processor_event_id, amount_cents, currency, source, occurred_at)
		SELECT $1, 'txn_' || n, 1000, 'USD', 'api', now() FROM generate_series(1, 20000) n`, p.ID); err != nil {
		t.Fatal(err)
	}
	if scans := write("second"); scans != 0 {
		t.Errorf("the write scanned sales or customers %d times after the table grew, want 0 (lookups by key)", scans)
	}
}

// TestSaleWriteLooksRowsUpByKey: the sale write's generic plans, made
// once per connection, read customers and leads by key even when the
// connection made them while the tables were nearly empty: a plan that
// scanned the customers for the ones a batch converts would read every
// customer the table has gained since, on each write.
func TestSaleWriteLooksRowsUpByKey(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	f := db.MustFixture(t, "keyed")
	one, err := postgres.Open(ctx, db.URL, postgres.PoolConfig{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	sales := postgres.NewSaleService(one, postgres.SaleOptions{})
	if err := sales.PrepareStatements(ctx); err != nil {
		t.Fatal(err)
	}
	customer := func(key string) {
		t.Helper()
		if _, err := db.ExecContext(ctx, `INSERT INTO customers (program_id, partner_id, link_id, customer_key, status)
			VALUES ($1, $2, $3, $4, 'lead')`, f.ProgramID, f.PartnerID, f.LinkID, key); err != nil {
			t.Fatal(err)
		}
	}
	// sell records a first sale of the customer with key on the one
	// connection and returns how many scans of whole tables it made.
	sell := func(key string) (scans int64) {
		t.Helper()
		tx, err := one.BeginTxx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		req := ledger.SaleRequest{ProgramID: f.ProgramID, TransactionID: ledger.Some("txn-" + key),
			AmountCents: ledger.Some[int64](5000), CustomerKey: ledger.Some(key)}
		if err := sales.RecordInTx(ctx, tx, []ledger.SaleRequest{req}); err != nil {
			t.Fatal(err)
		}
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(sum(seq_scan), 0) FROM pg_stat_xact_user_tables
			WHERE relname IN ('customers', 'leads', 'commissions')`).Scan(&scans); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		return scans
	}
	customer("first")
	sell("first") // plans the write on the one connection while customers holds one row
	if _, err := db.ExecContext(ctx, `INSERT INTO customers (program_id, partner_id, link_id, customer_key, status)
		SELECT $1, $2, $3, 'bulk-' || n, 'lead' FROM generate_series(1, 20000) n`, f.ProgramID, f.PartnerID, f.LinkID); err != nil {
		t.Fatal(err)
	}
	customer("second")
	if scans := sell("second"); scans != 0 {
		t.Errorf("the sale scanned customers, leads or commissions %d times after the tables grew, want 0 (lookups by key)", scans)
	}
}
