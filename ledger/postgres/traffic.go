package postgres

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/partnertrack/partnertrack/ledger"
)

// TrafficStore implements ledger.TrafficStore: link and program lookups
// for the tracking endpoints (behind the edge's cache) and the batch
// writes of clicks and visits (the queue workers, and the edge itself
// while Redis is unreachable).
type TrafficStore struct{ db *DB }

// NewTrafficStore returns the traffic store over db.
func NewTrafficStore(db *DB) *TrafficStore { return &TrafficStore{db: db} }

var _ ledger.TrafficStore = (*TrafficStore)(nil)

// ReferralLink returns the link with code and its program's tracker
// settings.
func (s *TrafficStore) ReferralLink(ctx context.Context, code string) (l *ledger.ReferralLink, err error) {
	defer wrap(&err, "postgres.ReferralLink(%q)", code)
	l = &ledger.ReferralLink{}
	var programID sql.NullInt64
	var cookie sql.NullInt32
	var leadAuth sql.NullString
	err = s.db.QueryRowContext(ctx, `
		SELECT l.id, l.code, l.active, l.is_test, l.partner_id, p.id, p.cookie_duration, p.lead_auth
		FROM links l LEFT JOIN programs p ON p.id = l.program_id
		WHERE l.code = $1`, code).
		Scan(&l.LinkID, &l.Code, &l.Active, &l.IsTest, &l.PartnerID, &programID, &cookie, &leadAuth)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("link")
	} else if err != nil {
		return nil, err
	}
	if programID.Valid {
		l.Program = &ledger.TrackerSettings{ProgramID: programID.Int64, CookieDuration: int(cookie.Int32), LeadAuth: leadAuth.String}
	}
	return l, nil
}

// TrackerSettings returns a program's tracker settings.
func (s *TrafficStore) TrackerSettings(ctx context.Context, programID int64) (t *ledger.TrackerSettings, err error) {
	defer wrap(&err, "postgres.TrackerSettings(%d)", programID)
	t = &ledger.TrackerSettings{ProgramID: programID}
	err = s.db.QueryRowContext(ctx, `SELECT cookie_duration, lead_auth FROM programs WHERE id = $1`, programID).
		Scan(&t.CookieDuration, &t.LeadAuth)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("program")
	}
	return t, err
}

// clickBatch is how a batch of clicks is written: the temporary table it
// is copied into, and the insert from there.
var clickBatch = batchWrite{
	table: "click_batch",
	create: `CREATE TEMPORARY TABLE click_batch (
		click_id text, occurred_at timestamptz, program_id bigint, partner_id bigint, link_id bigint,
		session_id text, page_url text, referrer_url text, geo_country text, geo_region text,
		geo_city text, device_type text, device_os text, browser_name text, ip text,
		user_agent text, is_test boolean
	) ON COMMIT DROP`,
	columns: []string{"click_id", "occurred_at", "program_id", "partner_id", "link_id", "session_id",
		"page_url", "referrer_url", "geo_country", "geo_region", "geo_city", "device_type", "device_os",
		"browser_name", "ip", "user_agent", "is_test"},
	insert: `INSERT INTO clicks (click_id, occurred_at, program_id, partner_id, link_id, session_id, page_url,
			referrer_url, geo_country, geo_region, geo_city, device_type, device_os, browser_name,
			ip, user_agent, is_test)
		SELECT b.click_id, b.occurred_at, b.program_id, pa.id, l.id, b.session_id, b.page_url,
			b.referrer_url, b.geo_country, b.geo_region, b.geo_city, b.device_type, b.device_os,
			b.browser_name, b.ip::inet, b.user_agent, b.is_test
		FROM click_batch b
		JOIN programs p ON p.id = b.program_id
		LEFT JOIN partners pa ON pa.id = b.partner_id
		LEFT JOIN links l ON l.id = b.link_id
		ON CONFLICT (click_id, occurred_at) DO NOTHING`,
}

// WriteClicks stores a batch with one COPY into a temporary table and one
// INSERT … SELECT … ON CONFLICT DO NOTHING on the click's key, so a batch
// written twice (a retried task, or the edge's direct write followed by
// the queued task) stores each click once. Clicks whose program is gone
// are dropped; a partner or link that is gone is stored as NULL.
func (s *TrafficStore) WriteClicks(ctx context.Context, clicks []ledger.Click) (n int, err error) {
	defer wrap(&err, "postgres.WriteClicks(%d clicks)", len(clicks))
	return s.write(ctx, clickBatch, len(clicks), func(i int) []any {
		c := &clicks[i]
		return []any{c.ID, c.OccurredAt, c.ProgramID, c.PartnerID, c.LinkID, nullText(c.SessionID),
			nullText(c.PageURL), nullText(c.ReferrerURL), nullText(c.GeoCountry), nullText(c.GeoRegion),
			nullText(c.GeoCity), nullText(c.DeviceType), nullText(c.DeviceOS), nullText(c.BrowserName),
			nullText(c.IP), nullText(c.UserAgent), c.IsTest}
	})
}

var visitBatch = batchWrite{
	table: "visit_batch",
	create: `CREATE TEMPORARY TABLE visit_batch (
		visit_id text, occurred_at timestamptz, program_id bigint, click_id text,
		session_id text, page_url text, referrer_url text, is_test boolean
	) ON COMMIT DROP`,
	columns: []string{"visit_id", "occurred_at", "program_id", "click_id", "session_id",
		"page_url", "referrer_url", "is_test"},
	insert: `INSERT INTO visits (visit_id, occurred_at, program_id, click_id, session_id, page_url, referrer_url, is_test)
		SELECT b.visit_id, b.occurred_at, b.program_id, b.click_id, b.session_id, b.page_url, b.referrer_url, b.is_test
		FROM visit_batch b JOIN programs p ON p.id = b.program_id
		ON CONFLICT (visit_id, occurred_at) DO NOTHING`,
}

// WriteVisits stores a batch of visits the way WriteClicks stores clicks.
func (s *TrafficStore) WriteVisits(ctx context.Context, visits []ledger.Visit) (n int, err error) {
	defer wrap(&err, "postgres.WriteVisits(%d visits)", len(visits))
	return s.write(ctx, visitBatch, len(visits), func(i int) []any {
		v := &visits[i]
		return []any{v.ID, v.OccurredAt, v.ProgramID, nullText(v.ClickID), nullText(v.SessionID),
			nullText(v.PageURL), nullText(v.ReferrerURL), v.IsTest}
	})
}

// batchWrite is the SQL of one kind of batch.
type batchWrite struct {
	table   string   // temporary, dropped at commit
	create  string   // creates table
	columns []string // copied into table
	insert  string   // moves table's rows into place, skipping those stored
}

// write copies n rows into a fresh temporary table and inserts them from
// there, in one transaction; it returns how many rows were new.
func (s *TrafficStore) write(ctx context.Context, w batchWrite, n int, row func(i int) []any) (inserted int, err error) {
	if n == 0 {
		return 0, nil
	}
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, w.create); err != nil {
			return err
		}
		if err := copyRows(ctx, tx, w.table, w.columns, n, row); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, w.insert)
		if err != nil {
			return err
		}
		rows, _ := res.RowsAffected()
		inserted = int(rows)
		return nil
	})
	return inserted, err
}

// copyRows copies n rows into table with COPY … FROM STDIN.
func copyRows(ctx context.Context, tx *sqlx.Tx, table string, columns []string, n int, row func(i int) []any) error {
	stmt, err := tx.PrepareContext(ctx, pq.CopyIn(table, columns...))
	if err != nil {
		return err
	}
	defer stmt.Close()
	for i := 0; i < n; i++ {
		if _, err := stmt.ExecContext(ctx, row(i)...); err != nil {
			return err
		}
	}
	_, err = stmt.ExecContext(ctx)
	return err
}

// nullText stores an empty text as NULL.
func nullText(s string) any {
	if s == "" {
		return nil
	}
	return s
}
