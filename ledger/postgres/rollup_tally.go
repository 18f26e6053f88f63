package postgres

import (
	"context"

	"github.com/jmoiron/sqlx"
)

// TallySessions counts up to max pending sessions into the rollups'
// unique visitors (rollup_tally_sessions, migration 00025): the pending
// rows are deleted in the transaction that counts them, so each is
// counted once, whatever retries or concurrent tallies do.
func (h *Housekeeper) TallySessions(ctx context.Context, max int) (n int64, err error) {
	defer wrap(&err, "postgres.TallySessions(%d)", max)
	err = h.db.Transact(ctx, func(tx *sqlx.Tx) error {
		return tx.GetContext(ctx, &n, `SELECT rollup_tally_sessions($1)`, max)
	})
	return n, err
}
