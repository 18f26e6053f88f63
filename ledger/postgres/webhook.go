package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/partnertrack/partnertrack/ledger"
)

// WebhookService implements ledger.WebhookService and ledger.WebhookStore:
// the brand's endpoints, and their delivery log.
type WebhookService struct {
	db     *DB
	checks ledger.TargetChecker
}

// NewWebhookService returns the webhook service over db. checks decides
// whether a URL may be registered (nil accepts any well-formed URL).
func NewWebhookService(db *DB, checks ledger.TargetChecker) *WebhookService {
	return &WebhookService{db: db, checks: checks}
}

var (
	_ ledger.WebhookService = (*WebhookService)(nil)
	_ ledger.WebhookStore   = (*WebhookService)(nil)
)

// CreateEndpoint registers an endpoint with a fresh secret.
func (s *WebhookService) CreateEndpoint(ctx context.Context, programID int64, in ledger.WebhookInput) (e *ledger.WebhookEndpoint, err error) {
	defer wrap(&err, "postgres.CreateEndpoint(program %d)", programID)
	rawURL, events, err := in.Validate()
	if err != nil {
		return nil, err
	}
	if s.checks != nil {
		if err := s.checks.CheckTarget(ctx, rawURL); err != nil {
			return nil, err
		}
	}
	e = &ledger.WebhookEndpoint{ProgramID: programID, URL: rawURL, Events: events, Secret: ledger.NewWebhookSecret(),
		Deliveries: []ledger.WebhookAttempt{}}
	sealed, err := s.db.seal(purposeWebhookSecret, e.Secret)
	if err != nil {
		return nil, err
	}
	err = s.db.QueryRowContext(ctx, `
		INSERT INTO webhook_endpoints (program_id, url, secret, events, created_at)
		SELECT id, $2, $3, $4, $5 FROM programs WHERE id = $1
		RETURNING id, created_at`,
		programID, rawURL, sealed, pq.Array(events), s.db.now()).Scan(&e.ID, &e.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("program")
	} else if err != nil {
		return nil, err
	}
	e.CreatedAt = e.CreatedAt.UTC()
	return e, nil
}

// Endpoints lists a program's live endpoints with their latest deliveries.
func (s *WebhookService) Endpoints(ctx context.Context, programID int64, deliveries int) (out []ledger.WebhookEndpoint, err error) {
	defer wrap(&err, "postgres.Endpoints(program %d)", programID)
	var exists bool
	if err := s.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM programs WHERE id = $1)`, programID).Scan(&exists); err != nil {
		return nil, err
	}
	if !exists {
		return nil, notFound("program")
	}
	rows, err := s.db.QueryContext(ctx, `
		SELECT id, url, events, created_at FROM webhook_endpoints
		WHERE program_id = $1 AND deleted_at IS NULL ORDER BY id`, programID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out = []ledger.WebhookEndpoint{}
	index := map[int64]int{}
	var ids []int64
	for rows.Next() {
		e := ledger.WebhookEndpoint{ProgramID: programID, Deliveries: []ledger.WebhookAttempt{}}
		if err := rows.Scan(&e.ID, &e.URL, pq.Array(&e.Events), &e.CreatedAt); err != nil {
			return nil, err
		}
		e.CreatedAt = e.CreatedAt.UTC()
		index[e.ID] = len(out)
		ids = append(ids, e.ID)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil || len(ids) == 0 || deliveries <= 0 {
		return out, err
	}
	// The latest deliveries of each endpoint, each read through the
	// (endpoint_id, id DESC) index.
	drows, err := s.db.QueryContext(ctx, `
		SELECT d.id, d.endpoint_id, d.message_id, d.event_type, d.attempt, d.status_code,
			COALESCE(d.latency_ms, 0), COALESCE(d.error, ''), d.created_at
		FROM unnest($1::bigint[]) AS e(id)
		CROSS JOIN LATERAL (
			SELECT * FROM webhook_deliveries WHERE endpoint_id = e.id ORDER BY id DESC LIMIT $2
		) d
		ORDER BY d.endpoint_id, d.id DESC`, pq.Array(ids), deliveries)
	if err != nil {
		return nil, err
	}
	defer drows.Close()
	for drows.Next() {
		a, err := scanAttempt(drows)
		if err != nil {
			return nil, err
		}
		e := &out[index[a.EndpointID]]
		e.Deliveries = append(e.Deliveries, a)
	}
	return out, drows.Err()
}

func scanAttempt(row interface{ Scan(...any) error }) (ledger.WebhookAttempt, error) {
	var a ledger.WebhookAttempt
	var status sql.NullInt64
	if err := row.Scan(&a.ID, &a.EndpointID, &a.MessageID, &a.EventType, &a.Attempt, &status,
		&a.LatencyMS, &a.Error, &a.CreatedAt); err != nil {
		return a, err
	}
	if status.Valid {
		code := int(status.Int64)
		a.StatusCode = &code
	}
	a.CreatedAt = a.CreatedAt.UTC()
	return a, nil
}

// DeleteEndpoint removes an endpoint (soft: its delivery log stays).
func (s *WebhookService) DeleteEndpoint(ctx context.Context, programID, endpointID int64) (err error) {
	defer wrap(&err, "postgres.DeleteEndpoint(program %d, %d)", programID, endpointID)
	res, err := s.db.ExecContext(ctx, `
		UPDATE webhook_endpoints SET deleted_at = $3
		WHERE id = $2 AND program_id = $1 AND deleted_at IS NULL`, programID, endpointID, s.db.now())
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return ledger.NewError(ledger.ENotFound, ledger.MsgWebhookNotFound)
	}
	return nil
}

// WebhookTarget returns an endpoint for a delivery.
func (s *WebhookService) WebhookTarget(ctx context.Context, endpointID int64) (t *ledger.WebhookTarget, err error) {
	defer wrap(&err, "postgres.WebhookTarget(%d)", endpointID)
	t = &ledger.WebhookTarget{EndpointID: endpointID}
	var stored string
	err = s.db.QueryRowContext(ctx, `
		SELECT program_id, url, secret, deleted_at IS NOT NULL FROM webhook_endpoints WHERE id = $1`, endpointID).
		Scan(&t.ProgramID, &t.URL, &stored, &t.Deleted)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ledger.NewError(ledger.ENotFound, ledger.MsgWebhookNotFound)
	} else if err != nil {
		return nil, err
	}
	if t.Secret, err = s.db.open(purposeWebhookSecret, stored); err != nil {
		return nil, err
	}
	return t, nil
}

// WebhookDelivered reports whether the endpoint already accepted the
// message.
func (s *WebhookService) WebhookDelivered(ctx context.Context, endpointID int64, messageID string) (ok bool, err error) {
	defer wrap(&err, "postgres.WebhookDelivered(%d, %q)", endpointID, messageID)
	err = s.db.QueryRowContext(ctx, `
		SELECT EXISTS (SELECT 1 FROM webhook_deliveries
			WHERE endpoint_id = $1 AND message_id = $2 AND status_code BETWEEN 200 AND 299)`,
		endpointID, messageID).Scan(&ok)
	return ok, err
}

// LogWebhookAttempt appends one attempt to the delivery log.
func (s *WebhookService) LogWebhookAttempt(ctx context.Context, a ledger.WebhookAttempt) (err error) {
	defer wrap(&err, "postgres.LogWebhookAttempt(%d, %q)", a.EndpointID, a.MessageID)
	at := a.CreatedAt
	if at.IsZero() {
		at = s.db.now()
	}
	_, err = s.db.ExecContext(ctx, `
		INSERT INTO webhook_deliveries (endpoint_id, message_id, event_type, attempt, status_code, latency_ms, error, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, NULLIF($7, ''), $8)`,
		a.EndpointID, a.MessageID, a.EventType, a.Attempt, a.StatusCode, a.LatencyMS, a.Error, at)
	return err
}

// Brand events. Each helper runs in the transaction of the change it
// reports and writes one outbox row per endpoint of the program subscribed
// to the event (fan-out at write time), so a change and the webhooks it
// owes commit or roll back together, and each delivery is idempotent by
// its outbox id (the TaskID) and its message id (the webhook-id, checked
// against the endpoint's delivery log). Test events send no webhooks.

// brandEvent writes the deliveries of one event.
func brandEvent(ctx context.Context, tx *sqlx.Tx, programID int64, eventType string, data any, now time.Time) ([]ledger.OutboxMessage, error) {
	rows, err := tx.QueryContext(ctx, `
		SELECT id FROM webhook_endpoints
		WHERE program_id = $1 AND deleted_at IS NULL AND $2 = ANY (events) ORDER BY id`, programID, eventType)
	if err != nil {
		return nil, err
	}
	var endpoints []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		endpoints = append(endpoints, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(endpoints) == 0 {
		return nil, err
	}
	body, err := ledger.WebhookBody(eventType, now, data)
	if err != nil {
		return nil, err
	}
	msgs := make([]ledger.OutboxMessage, 0, len(endpoints))
	for _, id := range endpoints {
		m, err := insertOutbox(ctx, tx, ledger.OutboxTaskWebhook, ledger.OutboxQueueWebhooks, ledger.WebhookMessage{
			EndpointID: id, MessageID: ledger.NewWebhookMessageID(now), EventType: eventType, Body: body, CreatedAt: now,
		}, now)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}

// webhookRows are the outbox rows of one brand event for the endpoints
// that want it.
func webhookRows(eventType string, data any, endpoints []int64, now time.Time) ([]outboxRow, error) {
	if len(endpoints) == 0 {
		return nil, nil
	}
	body, err := ledger.WebhookBody(eventType, now, data)
	if err != nil {
		return nil, err
	}
	rows := make([]outboxRow, 0, len(endpoints))
	for _, id := range endpoints {
		rows = append(rows, outboxRow{taskType: ledger.OutboxTaskWebhook, queue: ledger.OutboxQueueWebhooks, payload: ledger.WebhookMessage{
			EndpointID: id, MessageID: ledger.NewWebhookMessageID(now), EventType: eventType, Body: body, CreatedAt: now,
		}})
	}
	return rows, nil
}

// leadCreatedEvent writes lead.created for a lead that counts from now.
func leadCreatedEvent(ctx context.Context, tx *sqlx.Tx, leadID int64, now time.Time) ([]ledger.OutboxMessage, error) {
	var d ledger.LeadEventData
	var isTest bool
	var settledBy sql.NullString
	var occurred time.Time
	var settled sql.NullTime
	if err := tx.QueryRowContext(ctx, `
		SELECT id, program_id, customer_id, partner_id, click_id, customer_key, mode, settled_by, is_test,
			occurred_at, settled_at
		FROM leads WHERE id = $1`, leadID).Scan(&d.LeadID, &d.ProgramID, &d.CustomerID, &d.PartnerID, &d.ClickID,
		&d.CustomerKey, &d.Mode, &settledBy, &isTest, &occurred, &settled); err != nil {
		return nil, err
	}
	if isTest || !settled.Valid {
		return nil, nil
	}
	d.SettledBy, d.OccurredAt, d.SettledAt = settledBy.String, ledger.FormatTime(occurred), ledger.FormatTime(settled.Time)
	return brandEvent(ctx, tx, d.ProgramID, ledger.EventLeadCreated, d, now)
}
