package postgres

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/partnertrack/partnertrack/ledger"
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

// relayTimeout bounds a relay after commit; the sweep sends what it misses.
const relayTimeout = 10 * time.Second

// afterCommit hands committed outbox messages to the relay in the
// background, so that a slow or absent Redis never delays or changes a
// response; the outbox sweep sends whatever a relay fails to.
type afterCommit struct {
	relay  ledger.OutboxRelay
	logger *slog.Logger
	wg     sync.WaitGroup
}

func (a *afterCommit) send(msgs []ledger.OutboxMessage) {
	if a.relay == nil || len(msgs) == 0 {
		return
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), relayTimeout)
		defer cancel()
		if err := a.relay.Relay(ctx, msgs); err != nil {
			a.logger.Warn("outbox relay after commit failed; the sweep will send the messages", "count", len(msgs), "err", err)
		}
	}()
}

// wait blocks until every relay started so far has finished.
func (a *afterCommit) wait() { a.wg.Wait() }
