package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/partnertrack/partnertrack/ledger"
)

const (
	// batchMax bounds the refunds of one transaction (sales: twice it):
	// more would hold the locks of the first ones while the last are
	// written.
	batchMax = 16
	// batchTimeout bounds one batch's transaction: the batch owns its
	// deadline, whichever callers gave up.
	batchTimeout = 30 * time.Second
)

// inOneTransaction runs first (when set), then apply on each item in
// turn, all in one transaction of db; the first error rolls everything
// back and is returned (Transact retries a deadlock first).
func inOneTransaction[T any](ctx context.Context, db *DB, items []T,
	first func(ctx context.Context, tx *sqlx.Tx, items []T) error,
	apply func(ctx context.Context, tx *sqlx.Tx, item T) error) error {
	return db.Transact(ctx, func(tx *sqlx.Tx) error {
		if first != nil {
			if err := first(ctx, tx, items); err != nil {
				return err
			}
		}
		for _, it := range items {
			if err := apply(ctx, tx, it); err != nil {
				return err
			}
		}
		return nil
	})
}

// refusal splits the error of one sale or refund of a batch into the 4xx
// answer it was refused with (a *ledger.Error, given before it wrote
// anything) or a failure that rolls the batch back.
func refusal(err error) (answer, failure error) {
	var e *ledger.Error
	if errors.As(err, &e) {
		return err, nil
	}
	return nil, err
}
