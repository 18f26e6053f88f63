package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

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

type clickEventRow struct {
	ClickID     string    `db:"click_id"`
	OccurredAt  time.Time `db:"occurred_at"`
	SessionID   *string   `db:"session_id"`
	PageURL     *string   `db:"page_url"`
	ReferrerURL *string   `db:"referrer_url"`
	GeoCountry  *string   `db:"geo_country"`
	GeoRegion   *string   `db:"geo_region"`
	GeoCity     *string   `db:"geo_city"`
	DeviceType  *string   `db:"device_type"`
	DeviceOS    *string   `db:"device_os"`
	BrowserName *string   `db:"browser_name"`
	Converted   bool      `db:"converted"`
	CreatedAt   time.Time `db:"created_at"`
}

func (s *EventService) clicks(ctx context.Context, q ledger.EventQuery) ([]ledger.TrackingEvent, error) {
	filter, args := eventFilter(q, "click_id")
	var rows []clickEventRow
	err := s.db.SelectContext(ctx, &rows, `
		SELECT click_id, occurred_at, session_id, page_url, referrer_url, geo_country, geo_region,
			geo_city, device_type, device_os, browser_name, converted, created_at
		FROM clicks`+filter, args...)
	if err != nil {
		return nil, err
	}
	out := make([]ledger.TrackingEvent, len(rows))
	for i, r := range rows {
		clickID := r.ClickID
		out[i] = ledger.TrackingEvent{
			ID: ledger.ClickEventID(r.ClickID), Type: ledger.EventClick, Timestamp: r.OccurredAt.UTC(),
			ClickID: &clickID, SessionID: r.SessionID, PageURL: r.PageURL, Converted: r.Converted,
			ReferrerURL: r.ReferrerURL, GeoCountry: r.GeoCountry, GeoRegion: r.GeoRegion, GeoCity: r.GeoCity,
			DeviceType: r.DeviceType, DeviceOS: r.DeviceOS, BrowserName: r.BrowserName,
			CreatedAt: r.CreatedAt.UTC(),
		}
	}
	return out, nil
}

type leadEventRow struct {
	ID          int64     `db:"id"`
	OccurredAt  time.Time `db:"occurred_at"`
	ClickID     *string   `db:"click_id"`
	SessionID   *string   `db:"session_id"`
	PageURL     *string   `db:"page_url"`
	CustomerKey *string   `db:"customer_key"`
	Converted   bool      `db:"converted"`
	CreatedAt   time.Time `db:"created_at"`
}

func (s *EventService) leads(ctx context.Context, q ledger.EventQuery) ([]ledger.TrackingEvent, error) {
	filter, args := eventFilter(q, "id")
	var rows []leadEventRow
	err := s.db.SelectContext(ctx, &rows, `
		SELECT id, occurred_at, click_id, session_id, page_url, customer_key, converted, created_at
		FROM leads`+filter, args...)
	if err != nil {
		return nil, err
	}
	out := make([]ledger.TrackingEvent, len(rows))
	for i, r := range rows {
		out[i] = ledger.TrackingEvent{
			ID: r.ID, Type: ledger.EventLead, Timestamp: r.OccurredAt.UTC(), ClickID: r.ClickID,
			SessionID: r.SessionID, PageURL: r.PageURL, CustomerKey: r.CustomerKey, Converted: r.Converted,
			CreatedAt: r.CreatedAt.UTC(),
		}
	}
	return out, nil
}

type conversionEventRow struct {
	ID               int64     `db:"id"`
	OccurredAt       time.Time `db:"occurred_at"`
	ClickID          *string   `db:"click_id"`
	AmountCents      int64     `db:"amount_cents"`
	Currency         string    `db:"currency"`
	SaleType         string    `db:"sale_type"`
	PaymentStatus    string    `db:"payment_status"`
	ProcessorEventID string    `db:"processor_event_id"`
	IsRecurring      bool      `db:"is_recurring"`
	CreatedAt        time.Time `db:"created_at"`
}

func (s *EventService) conversions(ctx context.Context, q ledger.EventQuery) ([]ledger.TrackingEvent, error) {
	filter, args := eventFilter(q, "id")
	var rows []conversionEventRow
	err := s.db.SelectContext(ctx, &rows, `
		SELECT id, occurred_at, click_id, amount_cents, currency, sale_type, payment_status,
			processor_event_id, is_recurring, created_at
		FROM sales`+filter, args...)
	if err != nil {
		return nil, err
	}
	out := make([]ledger.TrackingEvent, len(rows))
	for i, r := range rows {
		out[i] = ledger.TrackingEvent{
			ID: r.ID, Type: ledger.EventConversion, Timestamp: r.OccurredAt.UTC(), ClickID: r.ClickID,
			AmountCents: r.AmountCents, Currency: r.Currency, SaleType: r.SaleType,
			PaymentStatus: r.PaymentStatus, ProcessorEventID: r.ProcessorEventID,
			IsRecurring: r.IsRecurring, CreatedAt: r.CreatedAt.UTC(),
		}
	}
	return out, nil
}
