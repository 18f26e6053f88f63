package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/partnertrack/partnertrack/ledger"
)

// EventService implements ledger.EventService.
type EventService struct{ db *DB }

// NewEventService returns the event listing over db.
func NewEventService(db *DB) *EventService { return &EventService{db: db} }

var _ ledger.EventService = (*EventService)(nil)

// TrackingEvents reads each requested type with one query that walks the
// type's partial index (program_id, occurred_at DESC) WHERE NOT is_test,
// newest first, and stops after q.Cap() rows; then it merges.
func (s *EventService) TrackingEvents(ctx context.Context, q ledger.EventQuery) (page *ledger.EventPage, err error) {
	defer wrap(&err, "postgres.TrackingEvents(%d)", q.ProgramID)
	reads := make([][]ledger.TrackingEvent, 0, 3)
	for _, t := range q.Types() {
		var evs []ledger.TrackingEvent
		switch t {
		case ledger.EventClick:
			evs, err = s.clicks(ctx, q)
		case ledger.EventLead:
			evs, err = s.leads(ctx, q)
		case ledger.EventConversion:
			evs, err = s.conversions(ctx, q)
		}
		if err != nil {
			return nil, err
		}
		reads = append(reads, evs)
	}
	return ledger.MergeEvents(q, reads...), nil
}

// eventFilter is the tail every per-type read shares: the program, no
// test events, the inclusive bounds on occurred_at, newest first (ties by
// the table's own id column, tiebreak, a constant of this file) and the
// cap. It returns the SQL from WHERE on and its arguments.
func eventFilter(q ledger.EventQuery, tiebreak string) (string, []any) {
	where := []string{"program_id = $1", "NOT is_test"}
	args := []any{q.ProgramID}
	if q.From != nil {
		args = append(args, *q.From)
		where = append(where, fmt.Sprintf("occurred_at >= $%d", len(args)))
	}
	if q.To != nil {
		args = append(args, *q.To)
		where = append(where, fmt.Sprintf("occurred_at <= $%d", len(args)))
	}
	args = append(args, q.Cap())
	return " WHERE " + strings.Join(where, " AND ") +
		fmt.Sprintf(" ORDER BY occurred_at DESC, %s DESC LIMIT $%d", tiebreak, len(args)), args
}

// readEvents runs one type's read and scans each row into an event of
// typ with scan. The rows are scanned by hand rather than through sqlx:
// its reflection over a few hundred rows was a quarter of a listing
// page's CPU (docs/decisions.md, "The listing's rows as structs").
func (s *EventService) readEvents(ctx context.Context, q ledger.EventQuery, typ ledger.EventType, query string,
	args []any, scan func(*sql.Rows, *ledger.TrackingEvent) error) ([]ledger.TrackingEvent, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]ledger.TrackingEvent, 0, q.Cap())
	for rows.Next() {
		e := ledger.TrackingEvent{Type: typ}
		if err := scan(rows, &e); err != nil {
			return nil, err
		}
		e.Timestamp, e.CreatedAt = e.Timestamp.UTC(), e.CreatedAt.UTC()
		out = append(out, e)
	}
	return out, rows.Err()
}

func (s *EventService) clicks(ctx context.Context, q ledger.EventQuery) ([]ledger.TrackingEvent, error) {
	filter, args := eventFilter(q, "click_id")
	return s.readEvents(ctx, q, ledger.EventClick, `
		SELECT click_id, occurred_at, session_id, page_url, referrer_url, geo_country, geo_region,
			geo_city, device_type, device_os, browser_name, converted, created_at
		FROM clicks`+filter, args, func(rows *sql.Rows, e *ledger.TrackingEvent) error {
		var clickID string
		if err := rows.Scan(&clickID, &e.Timestamp, &e.SessionID, &e.PageURL, &e.ReferrerURL, &e.GeoCountry,
			&e.GeoRegion, &e.GeoCity, &e.DeviceType, &e.DeviceOS, &e.BrowserName, &e.Converted, &e.CreatedAt); err != nil {
			return err
		}
		e.ID, e.ClickID = ledger.ClickEventID(clickID), &clickID
		return nil
	})
}

func (s *EventService) leads(ctx context.Context, q ledger.EventQuery) ([]ledger.TrackingEvent, error) {
	filter, args := eventFilter(q, "id")
	return s.readEvents(ctx, q, ledger.EventLead, `
		SELECT id, occurred_at, click_id, session_id, page_url, customer_key, converted, created_at
		FROM leads`+filter, args, func(rows *sql.Rows, e *ledger.TrackingEvent) error {
		return rows.Scan(&e.ID, &e.Timestamp, &e.ClickID, &e.SessionID, &e.PageURL, &e.CustomerKey,
			&e.Converted, &e.CreatedAt)
	})
}

func (s *EventService) conversions(ctx context.Context, q ledger.EventQuery) ([]ledger.TrackingEvent, error) {
	filter, args := eventFilter(q, "id")
	return s.readEvents(ctx, q, ledger.EventConversion, `
		SELECT id, occurred_at, click_id, amount_cents, currency, sale_type, payment_status,
			processor_event_id, is_recurring, created_at
		FROM sales`+filter, args, func(rows *sql.Rows, e *ledger.TrackingEvent) error {
		return rows.Scan(&e.ID, &e.Timestamp, &e.ClickID, &e.AmountCents, &e.Currency, &e.SaleType,
			&e.PaymentStatus, &e.ProcessorEventID, &e.IsRecurring, &e.CreatedAt)
	})
}
