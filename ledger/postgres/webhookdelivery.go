package postgres

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"math"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/partnertrack/partnertrack/ledger"
)

// WebhookDeliveryService implements ledger.WebhookDeliveryService: an
// endpoint's delivery log by message, and the test event, which goes
// through the outbox like every brand event.
type WebhookDeliveryService struct {
	db    *DB
	after *afterCommit
}

// NewWebhookDeliveryService returns the service over db; relay hands test
// events to the queue after commit (nil: the outbox sweep does).
func NewWebhookDeliveryService(db *DB, relay ledger.OutboxRelay, logger *slog.Logger) *WebhookDeliveryService {
	return &WebhookDeliveryService{db: db, after: newAfterCommit(relay, logger)}
}

var _ ledger.WebhookDeliveryService = (*WebhookDeliveryService)(nil)

// WaitRelays blocks until the relays started after commits have finished.
func (s *WebhookDeliveryService) WaitRelays() { s.after.wait() }

// deliveryPage is how many attempts one read of the log takes while
// picking the messages to list: one message makes at most nine attempts
// (the first and workers/tasks.WebhookMaxRetry retries), so one page
// nearly always holds them all.
const deliveryPage = 500

// Deliveries lists the endpoint's latest messages. The messages are
// picked by walking the endpoint's attempts newest first (the
// (endpoint_id, id DESC) index) until limit messages are seen, then each
// is summed up over all its attempts (the (endpoint_id, message_id)
// index), so a long log costs no more than a short one.
func (s *WebhookDeliveryService) Deliveries(ctx context.Context, programID, endpointID int64, limit int) (out []ledger.WebhookDelivery, err error) {
	defer wrap(&err, "postgres.Deliveries(program %d, endpoint %d)", programID, endpointID)
	if err := liveEndpoint(ctx, s.db, programID, endpointID, false); err != nil {
		return nil, err
	}
	picked, err := latestMessages(ctx, s.db, endpointID, limit)
	if err != nil || len(picked) == 0 {
		return []ledger.WebhookDelivery{}, err
	}
	rows, err := s.db.QueryContext(ctx, `
		SELECT d.id, d.message_id, d.event_type, d.status_code, COALESCE(d.latency_ms, 0), COALESCE(d.error, ''),
			d.created_at, a.attempts, a.succeeded, a.first_at
		FROM unnest($2::text[]) WITH ORDINALITY AS m(message_id, n)
		CROSS JOIN LATERAL (
			SELECT * FROM webhook_deliveries
			WHERE endpoint_id = $1 AND message_id = m.message_id ORDER BY id DESC LIMIT 1
		) d
		CROSS JOIN LATERAL (
			SELECT count(*) AS attempts, bool_or(status_code BETWEEN 200 AND 299) AS succeeded, min(created_at) AS first_at
			FROM webhook_deliveries WHERE endpoint_id = $1 AND message_id = m.message_id
		) a
		ORDER BY m.n`, endpointID, pq.Array(picked))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out = make([]ledger.WebhookDelivery, 0, len(picked))
	for rows.Next() {
		d := ledger.WebhookDelivery{EndpointID: endpointID}
		var status sql.NullInt64
		var succeeded sql.NullBool
		if err := rows.Scan(&d.ID, &d.MessageID, &d.EventType, &status, &d.LatencyMS, &d.Error,
			&d.LastAttemptAt, &d.Attempts, &succeeded, &d.FirstAttempt); err != nil {
			return nil, err
		}
		if status.Valid {
			code := int(status.Int64)
			d.StatusCode = &code
		}
		d.Succeeded = succeeded.Bool
		d.LastAttemptAt, d.FirstAttempt = d.LastAttemptAt.UTC(), d.FirstAttempt.UTC()
		out = append(out, d)
	}
	return out, rows.Err()
}

// latestMessages returns the ids of the endpoint's last limit messages,
// the one attempted last first, reading its attempts a page at a time.
func latestMessages(ctx context.Context, db *DB, endpointID int64, limit int) ([]string, error) {
	seen := map[string]bool{}
	var picked []string
	before := int64(math.MaxInt64)
	for len(picked) < limit {
		var page []struct {
			ID        int64  `db:"id"`
			MessageID string `db:"message_id"`
		}
		if err := db.SelectContext(ctx, &page, `
			SELECT id, message_id FROM webhook_deliveries
			WHERE endpoint_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3`, endpointID, before, deliveryPage); err != nil {
			return nil, err
		}
		for _, a := range page {
			if !seen[a.MessageID] && len(picked) < limit {
				seen[a.MessageID] = true
				picked = append(picked, a.MessageID)
			}
		}
		if len(page) < deliveryPage {
			break
		}
		before = page[len(page)-1].ID
	}
	return picked, nil
}

// SendTestEvent writes the endpoint's test event to the outbox, in a
// transaction that holds the endpoint (FOR SHARE: a delete waits for it),
// and relays it after commit.
func (s *WebhookDeliveryService) SendTestEvent(ctx context.Context, programID, endpointID int64) (sent *ledger.WebhookTestSent, err error) {
	defer wrap(&err, "postgres.SendTestEvent(program %d, endpoint %d)", programID, endpointID)
	now := s.db.now()
	var msg ledger.OutboxMessage
	var payload ledger.WebhookMessage
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		if err := liveEndpoint(ctx, tx, programID, endpointID, true); err != nil {
			return err
		}
		var name string
		if err := tx.GetContext(ctx, &name, `SELECT name FROM programs WHERE id = $1`, programID); err != nil {
			return err
		}
		body, err := ledger.WebhookBody(ledger.EventWebhookTest, now, ledger.NewWebhookTestData(programID, name, endpointID))
		if err != nil {
			return err
		}
		payload = ledger.WebhookMessage{EndpointID: endpointID, MessageID: ledger.NewWebhookMessageID(now),
			EventType: ledger.EventWebhookTest, Body: body, CreatedAt: now}
		msg, err = insertOutbox(ctx, tx, ledger.OutboxTaskWebhook, ledger.OutboxQueueWebhooks, payload, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.after.send([]ledger.OutboxMessage{msg})
	return &ledger.WebhookTestSent{OutboxID: msg.ID, MessageID: payload.MessageID, CreatedAt: now}, nil
}

// liveEndpoint checks that endpointID is a live endpoint of programID
// (locked against deletion when lock); anything else is the same 404, so
// another program's endpoint is not revealed.
func liveEndpoint(ctx context.Context, q queryer, programID, endpointID int64, lock bool) error {
	query := `SELECT id FROM webhook_endpoints WHERE id = $1 AND program_id = $2 AND deleted_at IS NULL`
	if lock {
		query += ` FOR SHARE`
	}
	var id int64
	if err := q.GetContext(ctx, &id, query, endpointID, programID); errors.Is(err, sql.ErrNoRows) {
		return ledger.NewError(ledger.ENotFound, ledger.MsgWebhookNotFound)
	} else if err != nil {
		return err
	}
	return nil
}
