package postgres

import (
	"context"
	"log/slog"
	"time"

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

// trackingLog is one row of tracking_logs: what readiness and the
// integration checklist count.
type trackingLog struct {
	programID int64
	eventType string // sale, refund
	isTest    bool
	source    string
	reference string // the transaction id
}

// logTracking writes a tracking log row. It is a counter, not the record
// of the sale: when it fails, the failure is logged and the caller's
// transaction goes on.
func logTracking(ctx context.Context, tx *sqlx.Tx, logger *slog.Logger, l trackingLog, now time.Time) error {
	contained, err := savepoint(ctx, tx, "tracking_log", func() error {
		_, err := tx.ExecContext(ctx, `
			INSERT INTO tracking_logs (program_id, event_type, is_test, source, reference, created_at)
			VALUES ($1, $2, $3, $4, NULLIF($5, ''), $6)`,
			l.programID, l.eventType, l.isTest, l.source, l.reference, now)
		return err
	})
	if contained != nil {
		logger.Warn("tracking log not written", "program_id", l.programID, "event_type", l.eventType,
			"reference", l.reference, "err", contained)
	}
	return err
}
