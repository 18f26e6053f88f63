package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

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
// settings. A link counts as active only while its partner's enrollment
// in the program is active: a suspended (or removed) partner's links
// answer the click as disabled links do (410), and come back when the
// partner is made active again.
func (s *TrafficStore) ReferralLink(ctx context.Context, code string) (l *ledger.ReferralLink, err error) {
	defer wrap(&err, "postgres.ReferralLink(%q)", code)
	l = &ledger.ReferralLink{}
	var programID sql.NullInt64
	var cookie sql.NullInt32
	var leadAuth sql.NullString
	err = s.db.QueryRowContext(ctx, `
		SELECT l.id, l.code,
			l.active AND NOT EXISTS (SELECT 1 FROM enrollments e
				WHERE e.program_id = l.program_id AND e.partner_id = l.partner_id AND e.status <> 'active'),
			l.is_test, l.partner_id, p.id, p.cookie_duration, p.lead_auth
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

// insertClicks stores a batch in one statement: the clicks go as one array
// per column and are unnested into rows, so a batch is one round trip
// with no temporary table to create and drop (which cost Postgres catalog
// writes on every batch). ON CONFLICT on the click's key makes a batch
// written twice store each click once.
const insertClicks = `
	INSERT INTO clicks (click_id, occurred_at, program_id, partner_id, link_id, session_id, page_url,
		referrer_url, geo_country, geo_region, geo_city, device_type, device_os, browser_name,
		ip, user_agent, is_test)
	SELECT b.click_id, b.occurred_at, b.program_id, pa.id, l.id, b.session_id, b.page_url,
		b.referrer_url, b.geo_country, b.geo_region, b.geo_city, b.device_type, b.device_os,
		b.browser_name, b.ip::inet, b.user_agent, b.is_test
	FROM unnest($1::text[], $2::timestamptz[], $3::bigint[], $4::bigint[], $5::bigint[], $6::text[],
		$7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[],
		$14::text[], $15::text[], $16::text[], $17::boolean[])
		AS b (click_id, occurred_at, program_id, partner_id, link_id, session_id, page_url,
			referrer_url, geo_country, geo_region, geo_city, device_type, device_os, browser_name,
			ip, user_agent, is_test)
	JOIN programs p ON p.id = b.program_id
	LEFT JOIN partners pa ON pa.id = b.partner_id
	LEFT JOIN links l ON l.id = b.link_id
	ON CONFLICT (click_id, occurred_at) DO NOTHING`

// WriteClicks stores a batch in one INSERT … SELECT … ON CONFLICT DO
// NOTHING on the click's key, so a batch written twice (a retried task, or
// the edge's direct write followed by the queued task) stores each click
// once. Clicks whose program is gone are dropped; a partner or link that
// is gone is stored as NULL.
func (s *TrafficStore) WriteClicks(ctx context.Context, clicks []ledger.Click) (n int, err error) {
	defer wrap(&err, "postgres.WriteClicks(%d clicks)", len(clicks))
	if len(clicks) == 0 {
		return 0, nil
	}
	cols := newClickColumns(len(clicks))
	for i := range clicks {
		cols.add(&clicks[i])
	}
	res, err := s.db.ExecContext(ctx, insertClicks, cols.args()...)
	if err != nil {
		return 0, err
	}
	rows, err := res.RowsAffected()
	return int(rows), err
}

// clickColumns holds a batch of clicks column by column, as arrays for
// insertClicks; an empty text or a missing id is NULL.
type clickColumns struct {
	ids, sessions, pages, referrers, countries, regions, cities []sql.NullString
	deviceTypes, deviceOSes, browsers, ips, userAgents          []sql.NullString
	occurred                                                    []time.Time
	programs                                                    []int64
	partners, links                                             []sql.NullInt64
	tests                                                       []bool
}

func newClickColumns(n int) *clickColumns {
	text := func() []sql.NullString { return make([]sql.NullString, 0, n) }
	return &clickColumns{ids: text(), sessions: text(), pages: text(), referrers: text(), countries: text(),
		regions: text(), cities: text(), deviceTypes: text(), deviceOSes: text(), browsers: text(), ips: text(),
		userAgents: text(), occurred: make([]time.Time, 0, n), programs: make([]int64, 0, n),
		partners: make([]sql.NullInt64, 0, n), links: make([]sql.NullInt64, 0, n), tests: make([]bool, 0, n)}
}

func (c *clickColumns) add(k *ledger.Click) {
	c.ids = append(c.ids, nullString(k.ID))
	c.occurred = append(c.occurred, k.OccurredAt)
	c.programs = append(c.programs, k.ProgramID)
	c.partners = append(c.partners, nullInt(k.PartnerID))
	c.links = append(c.links, nullInt(k.LinkID))
	c.sessions = append(c.sessions, nullString(k.SessionID))
	c.pages = append(c.pages, nullString(k.PageURL))
	c.referrers = append(c.referrers, nullString(k.ReferrerURL))
	c.countries = append(c.countries, nullString(k.GeoCountry))
	c.regions = append(c.regions, nullString(k.GeoRegion))
	c.cities = append(c.cities, nullString(k.GeoCity))
	c.deviceTypes = append(c.deviceTypes, nullString(k.DeviceType))
	c.deviceOSes = append(c.deviceOSes, nullString(k.DeviceOS))
	c.browsers = append(c.browsers, nullString(k.BrowserName))
	c.ips = append(c.ips, nullString(k.IP))
	c.userAgents = append(c.userAgents, nullString(k.UserAgent))
	c.tests = append(c.tests, k.IsTest)
}

// args are insertClicks' parameters, in its order.
func (c *clickColumns) args() []any {
	return []any{pq.GenericArray{A: c.ids}, pq.GenericArray{A: c.occurred}, pq.Array(c.programs),
		pq.GenericArray{A: c.partners}, pq.GenericArray{A: c.links}, pq.GenericArray{A: c.sessions},
		pq.GenericArray{A: c.pages}, pq.GenericArray{A: c.referrers}, pq.GenericArray{A: c.countries},
		pq.GenericArray{A: c.regions}, pq.GenericArray{A: c.cities}, pq.GenericArray{A: c.deviceTypes},
		pq.GenericArray{A: c.deviceOSes}, pq.GenericArray{A: c.browsers}, pq.GenericArray{A: c.ips},
		pq.GenericArray{A: c.userAgents}, pq.Array(c.tests)}
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

func nullInt(p *int64) sql.NullInt64 {
	if p == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: *p, Valid: true}
}

// insertVisits stores a batch of visits in one statement, as insertClicks
// stores clicks.
const insertVisits = `
	INSERT INTO visits (visit_id, occurred_at, program_id, click_id, session_id, page_url, referrer_url, is_test)
	SELECT b.visit_id, b.occurred_at, b.program_id, b.click_id, b.session_id, b.page_url, b.referrer_url, b.is_test
	FROM unnest($1::text[], $2::timestamptz[], $3::bigint[], $4::text[], $5::text[], $6::text[],
		$7::text[], $8::boolean[])
		AS b (visit_id, occurred_at, program_id, click_id, session_id, page_url, referrer_url, is_test)
	JOIN programs p ON p.id = b.program_id
	ON CONFLICT (visit_id, occurred_at) DO NOTHING`

// WriteVisits stores a batch of visits the way WriteClicks stores clicks.
func (s *TrafficStore) WriteVisits(ctx context.Context, visits []ledger.Visit) (n int, err error) {
	defer wrap(&err, "postgres.WriteVisits(%d visits)", len(visits))
	if len(visits) == 0 {
		return 0, nil
	}
	n = len(visits)
	ids, clicks, sessions := make([]sql.NullString, n), make([]sql.NullString, n), make([]sql.NullString, n)
	pages, referrers := make([]sql.NullString, n), make([]sql.NullString, n)
	occurred, programs, tests := make([]time.Time, n), make([]int64, n), make([]bool, n)
	for i := range visits {
		v := &visits[i]
		ids[i], occurred[i], programs[i], tests[i] = nullString(v.ID), v.OccurredAt, v.ProgramID, v.IsTest
		clicks[i], sessions[i] = nullString(v.ClickID), nullString(v.SessionID)
		pages[i], referrers[i] = nullString(v.PageURL), nullString(v.ReferrerURL)
	}
	res, err := s.db.ExecContext(ctx, insertVisits, pq.GenericArray{A: ids}, pq.GenericArray{A: occurred},
		pq.Array(programs), pq.GenericArray{A: clicks}, pq.GenericArray{A: sessions}, pq.GenericArray{A: pages},
		pq.GenericArray{A: referrers}, pq.Array(tests))
	if err != nil {
		return 0, err
	}
	rows, err := res.RowsAffected()
	return int(rows), err
}
