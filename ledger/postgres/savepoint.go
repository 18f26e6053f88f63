package postgres

import (
	"context"

	"github.com/jmoiron/sqlx"
)

// savepoint runs fn inside a savepoint of tx. When fn fails, tx is rolled
// back to the savepoint and goes on: fn's error is returned as contained.
// A failure that leaves tx unusable (a serialization failure or deadlock,
// which must retry the whole transaction, a cancelled context, or a failed
// rollback) is returned as err instead.
func savepoint(ctx context.Context, tx *sqlx.Tx, name string, fn func() error) (contained, err error) {
	if _, err := tx.ExecContext(ctx, `SAVEPOINT `+name); err != nil {
		return nil, err
	}
	if ferr := fn(); ferr != nil {
		if isRetryable(ferr) || ctx.Err() != nil {
			return nil, ferr
		}
		if _, err := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT `+name); err != nil {
			return nil, err
		}
		return ferr, nil
	}
	_, err = tx.ExecContext(ctx, `RELEASE SAVEPOINT `+name)
	return nil, err
}
