package postgres_test

import (
	"context"
	"testing"

	"github.com/lib/pq"

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
