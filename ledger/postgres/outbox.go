package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/partnertrack/partnertrack/ledger"
)

// Outbox implements ledger.OutboxRelay over the outbox table.
type Outbox struct {
	db       *DB
	enqueuer ledger.Enqueuer
}

// NewOutbox returns a relay that hands messages to enqueuer.
func NewOutbox(db *DB, enqueuer ledger.Enqueuer) *Outbox {
	return &Outbox{db: db, enqueuer: enqueuer}
}

var _ ledger.OutboxRelay = (*Outbox)(nil)

// insertOutbox writes a side effect in the caller's transaction.
func insertOutbox(ctx context.Context, tx *sqlx.Tx, taskType, queue string, payload any, now time.Time) (ledger.OutboxMessage, error) {
	raw, err := json.Marshal(payload)
	if err != nil {
		return ledger.OutboxMessage{}, err
	}
	m := ledger.OutboxMessage{TaskType: taskType, Queue: queue, Payload: raw, CreatedAt: now}
	// The payload goes as text: with binary_parameters, lib/pq sends a
	// []byte in binary format, which jsonb does not accept.
	err = tx.QueryRowContext(ctx, `
		INSERT INTO outbox (task_type, queue, payload, created_at) VALUES ($1, $2, $3::jsonb, $4)
		RETURNING id`, taskType, queue, string(raw), now).Scan(&m.ID)
	return m, err
}

// outboxRow is a side effect to write: its task, queue and payload.
type outboxRow struct {
	taskType, queue string
	payload         any
}

// insertOutboxRows writes side effects in the caller's transaction with
// one statement, in order (their ids ascend in the order given).
func insertOutboxRows(ctx context.Context, tx *sqlx.Tx, rows []outboxRow, now time.Time) ([]ledger.OutboxMessage, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	if len(rows) == 1 {
		m, err := insertOutbox(ctx, tx, rows[0].taskType, rows[0].queue, rows[0].payload, now)
		return []ledger.OutboxMessage{m}, err
	}
	msgs := make([]ledger.OutboxMessage, len(rows))
	taskTypes, queues, payloads := make([]string, len(rows)), make([]string, len(rows)), make([]string, len(rows))
	for i, r := range rows {
		raw, err := json.Marshal(r.payload)
		if err != nil {
			return nil, err
		}
		msgs[i] = ledger.OutboxMessage{TaskType: r.taskType, Queue: r.queue, Payload: raw, CreatedAt: now}
		taskTypes[i], queues[i], payloads[i] = r.taskType, r.queue, string(raw)
	}
	var ids []int64
	err := tx.SelectContext(ctx, &ids, `
		WITH inserted AS (
			INSERT INTO outbox (task_type, queue, payload, created_at)
			SELECT r.task_type, r.queue, r.payload::jsonb, $4
			FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS r(task_type, queue, payload, n)
			ORDER BY r.n
			RETURNING id
		)
		SELECT id FROM inserted ORDER BY id`, pq.StringArray(taskTypes), pq.StringArray(queues), pq.StringArray(payloads), now)
	if err != nil {
		return nil, err
	}
	if len(ids) != len(msgs) {
		return nil, fmt.Errorf("outbox: %d rows written for %d messages", len(ids), len(msgs))
	}
	for i := range msgs {
		msgs[i].ID = ids[i]
	}
	return msgs, nil
}

// Relay enqueues committed messages and marks those enqueued as sent. A
// failure leaves them for the sweep; it is logged, not returned to the
// caller's client, because the change itself is committed.
func (o *Outbox) Relay(ctx context.Context, msgs []ledger.OutboxMessage) (err error) {
	defer wrap(&err, "postgres.Outbox.Relay")
	if len(msgs) == 0 {
		return nil
	}
	sent, enqErr := o.enqueuer.Enqueue(ctx, msgs)
	if err := markSent(ctx, o.db, sent, o.db.now()); err != nil {
		return err
	}
	return enqErr
}

func markSent(ctx context.Context, db *DB, ids []int64, now time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := db.ExecContext(ctx, `UPDATE outbox SET sent_at = $2 WHERE id = ANY($1)`, pq.Array(ids), now)
	return err
}

// Sweep enqueues messages left unsent for longer than grace.
func (o *Outbox) Sweep(ctx context.Context, grace time.Duration, limit int) (n int, err error) {
	defer wrap(&err, "postgres.Outbox.Sweep")
	now := o.db.now()
	var enqErr error
	err = o.db.Transact(ctx, func(tx *sqlx.Tx) error {
		var msgs []ledger.OutboxMessage
		rows, err := tx.QueryContext(ctx, `
			SELECT id, task_type, queue, payload, created_at FROM outbox
			WHERE sent_at IS NULL AND created_at < $1
			ORDER BY id LIMIT $2
			FOR UPDATE SKIP LOCKED`, now.Add(-grace), limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var m ledger.OutboxMessage
			var payload []byte
			if err := rows.Scan(&m.ID, &m.TaskType, &m.Queue, &payload, &m.CreatedAt); err != nil {
				return err
			}
			m.Payload = payload
			msgs = append(msgs, m)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(msgs) == 0 {
			return nil
		}
		var sent []int64
		sent, enqErr = o.enqueuer.Enqueue(ctx, msgs)
		if len(sent) > 0 {
			if _, err := tx.ExecContext(ctx,
				`UPDATE outbox SET sent_at = $2 WHERE id = ANY($1)`, pq.Array(sent), now); err != nil {
				return err
			}
		}
		n = len(sent)
		return nil
	})
	if err != nil {
		return n, err
	}
	return n, enqErr
}

// OutboxBacklog is what the outbox holds unsent: the count and the time of
// the oldest row (zero when none), for the outbox lag metric.
type OutboxBacklog struct {
	Unsent int64
	Oldest time.Time
}

// Backlog reports the unsent outbox rows. Both reads go through the
// partial index of unsent rows.
func (o *Outbox) Backlog(ctx context.Context) (b OutboxBacklog, err error) {
	defer wrap(&err, "postgres.Outbox.Backlog")
	var oldest sql.NullTime
	err = o.db.QueryRowContext(ctx, `
		SELECT count(*), (SELECT created_at FROM outbox WHERE sent_at IS NULL ORDER BY id LIMIT 1)
		FROM outbox WHERE sent_at IS NULL`).Scan(&b.Unsent, &oldest)
	if oldest.Valid {
		b.Oldest = oldest.Time.UTC()
	}
	return b, err
}
