package postgres

import (
	"context"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
)

// Housekeeper implements ledger.Housekeeper: partitions ahead of time,
// history pruned after its retention.
type Housekeeper struct{ db *DB }

// NewHousekeeper returns the housekeeper over db.
func NewHousekeeper(db *DB) *Housekeeper { return &Housekeeper{db: db} }

var _ ledger.Housekeeper = (*Housekeeper)(nil)

// EnsurePartitions creates missing monthly partitions of clicks and visits.
func (h *Housekeeper) EnsurePartitions(ctx context.Context, months int) (err error) {
	defer wrap(&err, "postgres.EnsurePartitions(%d)", months)
	now := h.db.now()
	for _, parent := range []string{"clicks", "visits"} {
		if _, err := h.db.ExecContext(ctx,
			`SELECT ensure_monthly_partitions($1, $2, $3)`, parent, now, months+1); err != nil {
			return err
		}
	}
	return nil
}

// pruneBatch is how many rows one pruning statement looks at: small
// enough that each statement holds its locks briefly beside the sales.
const pruneBatch = 5000

// The pruning statements look at the next pruneBatch rows in id order
// (the primary key) after $3, delete those the cutoff $1 lets go, and say
// whether the batch reached rows created at or after the cutoff: ids grow
// with time, so nothing further can be old enough and pruning stops
// there, without scanning the young rest of the table.
const (
	qPruneOutbox = `
		WITH batch AS (
			SELECT id, sent_at, created_at FROM outbox WHERE id > $3 ORDER BY id LIMIT $2
		), gone AS (
			DELETE FROM outbox o USING batch b
			WHERE o.id = b.id AND b.sent_at IS NOT NULL AND b.created_at < $1
			RETURNING o.id
		)
		SELECT (SELECT count(*) FROM gone), COALESCE((SELECT max(id) FROM batch), 0),
			COALESCE((SELECT bool_or(created_at >= $1) FROM batch), true)`
	qPruneWebhookAttempts = `
		WITH batch AS (
			SELECT id, created_at FROM webhook_deliveries WHERE id > $3 ORDER BY id LIMIT $2
		), gone AS (
			DELETE FROM webhook_deliveries d USING batch b
			WHERE d.id = b.id AND b.created_at < $1
			RETURNING d.id
		)
		SELECT (SELECT count(*) FROM gone), COALESCE((SELECT max(id) FROM batch), 0),
			COALESCE((SELECT bool_or(created_at >= $1) FROM batch), true)`
)

// Prune deletes sent outbox messages, webhook delivery attempts and the
// rollups' remembered sessions older than their retention (a zero
// duration keeps that history), and the clicks per hour older than
// ledger.ClickHoursKept.
func (h *Housekeeper) Prune(ctx context.Context, r ledger.Retention) (p ledger.Pruned, err error) {
	defer wrap(&err, "postgres.Prune")
	now := h.db.now()
	// A few rows per program and hour kept: one statement over the table.
	res, err := h.db.ExecContext(ctx, `DELETE FROM rollup_clicks_hourly WHERE hour < $1`, now.Add(-ledger.ClickHoursKept))
	if err != nil {
		return p, err
	}
	if p.ClickHours, err = res.RowsAffected(); err != nil {
		return p, err
	}
	if r.SentOutbox > 0 {
		if p.Outbox, err = h.prune(ctx, qPruneOutbox, now.Add(-r.SentOutbox)); err != nil {
			return p, err
		}
	}
	if r.WebhookAttempts > 0 {
		if p.WebhookAttempts, err = h.prune(ctx, qPruneWebhookAttempts, now.Add(-r.WebhookAttempts)); err != nil {
			return p, err
		}
	}
	if r.RollupSessions > 0 {
		p.RollupSessions, err = h.pruneRollupSessions(ctx, now.Add(-r.RollupSessions))
	}
	return p, err
}

// qPruneRollupSessions deletes up to $3 of one program's remembered
// sessions of days before $2, through the primary key (program_id, day,
// ...), so that a program's old days are found without scanning others'.
const qPruneRollupSessions = `
	WITH batch AS (
		SELECT program_id, day, partner_id, link_id, session_id FROM rollup_sessions
		WHERE program_id = $1 AND day < $2 LIMIT $3
	)
	DELETE FROM rollup_sessions r USING batch b
	WHERE (r.program_id, r.day, r.partner_id, r.link_id, r.session_id) = (b.program_id, b.day, b.partner_id, b.link_id, b.session_id)`

// programsPage is how many programs one pass of pruneRollupSessions reads.
const programsPage = 1000

// pruneRollupSessions deletes the sessions of days that ended before
// cutoff, program by program, pruneBatch rows a statement. A day is a
// program's own (its timezone is at most 14 hours from UTC): the cutoff
// day is the UTC day before cutoff's.
func (h *Housekeeper) pruneRollupSessions(ctx context.Context, cutoff time.Time) (int64, error) {
	day := cutoff.UTC().AddDate(0, 0, -1).Format(time.DateOnly)
	var total, after int64
	for {
		var programs []int64
		if err := h.db.SelectContext(ctx, &programs,
			`SELECT id FROM programs WHERE id > $1 ORDER BY id LIMIT $2`, after, programsPage); err != nil {
			return total, err
		}
		for _, id := range programs {
			for {
				res, err := h.db.ExecContext(ctx, qPruneRollupSessions, id, day, pruneBatch)
				if err != nil {
					return total, err
				}
				n, err := res.RowsAffected()
				if err != nil {
					return total, err
				}
				total += n
				if n < pruneBatch {
					break
				}
			}
		}
		if len(programs) < programsPage {
			return total, nil
		}
		after = programs[len(programs)-1]
	}
}

// prune runs one pruning statement batch after batch until a batch
// reaches rows younger than cutoff or the table's end.
func (h *Housekeeper) prune(ctx context.Context, query string, cutoff time.Time) (int64, error) {
	var total, after int64
	for {
		var deleted int64
		var reachedYoung bool
		if err := h.db.QueryRowContext(ctx, query, cutoff, pruneBatch, after).Scan(&deleted, &after, &reachedYoung); err != nil {
			return total, err
		}
		total += deleted
		if reachedYoung {
			return total, nil
		}
	}
}
