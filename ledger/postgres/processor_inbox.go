package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/partnertrack/partnertrack/ledger"
)

// Receive stores a verified event (a redelivered id stores nothing), then
// queues it unless it is queued already.
func (p *ProcessorService) Receive(ctx context.Context, ev ledger.ReceivedEvent) (res *ledger.ReceiveResult, err error) {
	defer wrap(&err, "postgres.Receive(%q)", ev.EventID)
	if ev.Provider == "" {
		ev.Provider = ledger.ProviderStripe
	}
	now := p.db.now()
	res = &ledger.ReceiveResult{}
	var queued bool
	err = p.db.Transact(ctx, func(tx *sqlx.Tx) error {
		res.Duplicate, queued = false, false
		var programID *int64
		if ev.ProgramID > 0 {
			programID = &ev.ProgramID
		}
		// The payload goes as text: jsonb refuses lib/pq's binary []byte.
		err := tx.QueryRowContext(ctx, `
			INSERT INTO processor_events (event_id, provider, account_id, program_id, event_type, livemode, payload, received_at)
			VALUES ($1, $2, NULLIF($3, ''), $4, $5, $6, $7::jsonb, $8)
			ON CONFLICT (event_id) DO NOTHING
			RETURNING false`, ev.EventID, ev.Provider, ev.AccountID, programID, ev.Type, ev.Livemode,
			string(ev.Payload), now).Scan(&queued)
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		res.Duplicate = true
		return tx.QueryRowContext(ctx, `SELECT enqueued_at IS NOT NULL FROM processor_events WHERE event_id = $1`,
			ev.EventID).Scan(&queued)
	})
	if err != nil {
		return nil, err
	}
	res.Enqueued = queued || len(p.enqueue(ctx, []string{ev.EventID})) == 1
	return res, nil
}

// enqueue queues stored events and marks the queued ones. A failure is
// logged, not returned: the events are stored, and the sweep queues them.
func (p *ProcessorService) enqueue(ctx context.Context, ids []string) []string {
	if p.enqueuer == nil || len(ids) == 0 {
		return nil
	}
	ectx, cancel := context.WithTimeout(ctx, p.enqueueTimeout)
	sent, err := p.enqueuer.EnqueueProcessorEvents(ectx, ids)
	cancel()
	if err != nil {
		p.logger.Warn("processor events stored but not queued; the sweep will queue them",
			"count", len(ids)-len(sent), "err", err)
	}
	if len(sent) > 0 {
		if _, err := p.db.ExecContext(ctx, `UPDATE processor_events SET enqueued_at = $2 WHERE event_id = ANY($1)`,
			pq.Array(sent), p.db.now()); err != nil {
			// Queued but not marked: the sweep queues them again, which
			// the task id makes harmless.
			p.logger.Warn("processor events queued but not marked", "count", len(sent), "err", err)
		}
	}
	return sent
}

// WebhookSecret returns the signing secret of a program's brand-added
// processor webhook.
func (p *ProcessorService) WebhookSecret(ctx context.Context, programID int64) (secret string, err error) {
	defer wrap(&err, "postgres.WebhookSecret(%d)", programID)
	err = p.db.QueryRowContext(ctx, `SELECT COALESCE(stripe_webhook_secret, '') FROM programs WHERE id = $1`,
		programID).Scan(&secret)
	if errors.Is(err, sql.ErrNoRows) {
		return "", notFound("program")
	} else if err != nil || secret == "" {
		return "", err
	}
	return p.db.open(purposeStripeSecret, secret)
}

// SweepEvents queues stored events left unqueued for longer than grace.
func (p *ProcessorService) SweepEvents(ctx context.Context, grace time.Duration, limit int) (n int, err error) {
	defer wrap(&err, "postgres.SweepEvents")
	if p.enqueuer == nil {
		return 0, errors.New("no enqueuer to sweep processor events with")
	}
	now := p.db.now()
	var enqErr error
	err = p.db.Transact(ctx, func(tx *sqlx.Tx) error {
		var ids []string
		if err := tx.SelectContext(ctx, &ids, `
			SELECT event_id FROM processor_events
			WHERE enqueued_at IS NULL AND received_at < $1
			ORDER BY received_at LIMIT $2
			FOR UPDATE SKIP LOCKED`, now.Add(-grace), limit); err != nil || len(ids) == 0 {
			return err
		}
		var sent []string
		sent, enqErr = p.enqueuer.EnqueueProcessorEvents(ctx, ids)
		n = len(sent)
		if n == 0 {
			return nil
		}
		_, err := tx.ExecContext(ctx, `UPDATE processor_events SET enqueued_at = $2 WHERE event_id = ANY($1)`,
			pq.Array(sent), now)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, enqErr
}

// RecordFailure notes a failed attempt on a stored event; final marks it
// failed. An event already processed or skipped keeps its outcome.
func (p *ProcessorService) RecordFailure(ctx context.Context, eventID, reason string, final bool) (err error) {
	defer wrap(&err, "postgres.RecordFailure(%q)", eventID)
	_, err = p.db.ExecContext(ctx, `
		UPDATE processor_events SET error = $2, status = CASE WHEN $3 THEN 'failed' ELSE status END
		WHERE event_id = $1 AND status IN ('received', 'failed')`, eventID, truncate(reason, 2000), final)
	return err
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}
