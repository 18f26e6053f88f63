package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ledger"
)

// PerformanceService implements ledger.PerformanceService over the daily
// rollups (migrations 00016, 00023 and 00024): every read is a range of their primary keys,
// which lead with (program_id, day).
type PerformanceService struct {
	db  *DB
	now func() time.Time
}

// NewPerformanceService returns the performance reads over db; now is the
// clock that fixes the program's today (nil: time.Now).
func NewPerformanceService(db *DB, now func() time.Time) *PerformanceService {
	if now == nil {
		now = time.Now
	}
	return &PerformanceService{db: db, now: now}
}

var _ ledger.PerformanceService = (*PerformanceService)(nil)

// Performance reads the program's facts (currency, today and first day in
// its timezone), resolves the window, then reads the window's rollups in
// one more query.
func (s *PerformanceService) Performance(ctx context.Context, q ledger.PerformanceQuery) (r *ledger.PerformanceReport, err error) {
	defer wrap(&err, "postgres.Performance(%d)", q.ProgramID)
	var (
		currency       string
		created, today time.Time
		firstT, firstS sql.NullTime
	)
	// The first days are the minimum of each table's primary key range.
	err = s.db.QueryRowContext(ctx, `
		SELECT p.currency, (p.created_at AT TIME ZONE p.timezone)::date, ($2::timestamptz AT TIME ZONE p.timezone)::date,
			(SELECT min(day) FROM rollup_traffic_daily WHERE program_id = p.id),
			(SELECT min(day) FROM rollup_sales_daily WHERE program_id = p.id)
		FROM programs p WHERE p.id = $1`, q.ProgramID, s.now()).Scan(&currency, &created, &today, &firstT, &firstS)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("program")
	} else if err != nil {
		return nil, err
	}
	first := created
	if firstT.Valid || firstS.Valid {
		first = earliestValid(firstT, firstS)
	}
	r = &ledger.PerformanceReport{Query: q, Currency: ledger.Currency(currency)}
	r.Window = q.Window(dateOf(today), dateOf(first))
	if q.GroupBy != "" {
		r.Groups, err = s.groups(ctx, q, r.Window, r.Currency)
		return r, err
	}
	return r, s.series(ctx, r)
}

// dateOf is a date read from Postgres as a UTC midnight.
func dateOf(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// earliestValid is the earlier of two dates, at least one valid.
func earliestValid(a, b sql.NullTime) time.Time {
	switch {
	case !a.Valid:
		return b.Time
	case !b.Valid:
		return a.Time
	case b.Time.Before(a.Time):
		return b.Time
	}
	return a.Time
}

// seriesQuery reads the window and the previous window ($2..$4: the
// earliest day read, the window's first day, its last day) as rows of a
// kind: the program's traffic per day (clicks, leads, visitors) and its
// sales per day and currency, from the program-wide rows (migration
// 00023: one row a day, and one a day and currency, whatever the number
// of links), then the active partners per day of the window and over the
// window (day NULL), from the set of active partners (migration 00024:
// one row a day and partner, whatever the number of links). Each table
// is read straight from its primary key range.
const seriesQuery = `
	WITH active AS (
		SELECT day, partner_id FROM rollup_partners_daily WHERE program_id = $1 AND day BETWEEN $3 AND $4
	)
	SELECT 't' AS kind, day, '' AS currency, clicks::numeric AS a, leads::numeric AS b, visitors::numeric AS c,
		0::numeric AS d, 0::numeric AS e
		FROM rollup_visitors_daily WHERE program_id = $1 AND day BETWEEN $2 AND $4
	UNION ALL
	SELECT 's', day, currency, conversions, revenue_minor, commission_minor, refunds, refunded_minor
		FROM rollup_program_sales_daily WHERE program_id = $1 AND day BETWEEN $2 AND $4
	UNION ALL
	SELECT 'p', day, '', count(*), 0, 0, 0, 0 FROM active GROUP BY day
	UNION ALL
	SELECT 'P', NULL, '', count(DISTINCT partner_id), 0, 0, 0, 0 FROM active`

// series fills the days, the totals and the previous totals of r.
func (s *PerformanceService) series(ctx context.Context, r *ledger.PerformanceReport) error {
	w := r.Window
	start := w.From
	if w.HasPrevious {
		start = w.PrevFrom
	}
	n := ledger.DaysBetween(w.From, w.To)
	r.Days = make([]ledger.PerformanceDay, n)
	for i := range r.Days {
		r.Days[i].Date = w.From.Add(time.Duration(i) * 24 * time.Hour)
		r.Days[i].Sales = map[ledger.Currency]ledger.SalesNumbers{}
	}
	r.Total.Sales = map[ledger.Currency]ledger.SalesNumbers{}
	r.Previous.Sales = map[ledger.Currency]ledger.SalesNumbers{}
	rows, err := s.db.QueryContext(ctx, seriesQuery, r.Query.ProgramID, start, w.From, w.To)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			kind, currency string
			d              sql.NullTime
			a, b, c, e, f  minorSum
		)
		if err := rows.Scan(&kind, &d, &currency, &a, &b, &c, &e, &f); err != nil {
			return err
		}
		if kind == "P" {
			r.Total.Partners = int64(a)
			continue
		}
		date := dateOf(d.Time)
		total := &r.Previous
		var dayNums *ledger.PerformanceNumbers
		if !date.Before(w.From) {
			total = &r.Total
			dayNums = &r.Days[ledger.DaysBetween(w.From, date)-1].PerformanceNumbers
		}
		for _, nums := range []*ledger.PerformanceNumbers{total, dayNums} {
			if nums == nil {
				continue
			}
			switch kind {
			case "t":
				nums.Clicks += int64(a)
				nums.Leads += int64(b)
				nums.Visitors += int64(c)
			case "s":
				nums.AddSales(ledger.Currency(currency), ledger.SalesNumbers{Conversions: int64(a), Revenue: int64(b),
					Commission: int64(c), Refunds: int64(e), Refunded: int64(f)})
			case "p":
				if nums == dayNums {
					nums.Partners = int64(a)
				}
			}
		}
	}
	return rows.Err()
}

// groupQueries read the top groups over the window ($2, $3), ranked by
// revenue in the program's currency ($4), then clicks, then id, at most
// $5: the window's rows are summed per partner or link (0, none, is left
// out), ranked, and only the top ones get their names and their sales per
// currency. Sums are sent as text so they are read exactly.
var groupQueries = map[string]string{
	ledger.GroupByPartner: groupQuery("partner_id", `
		SELECT top.k, p.name, p.email, '' AS code, top.k AS partner_id,`, `
		FROM top LEFT JOIN partners p ON p.id = top.k`),
	ledger.GroupByLink: groupQuery("link_id", `
		SELECT top.k, '' AS name, '' AS email, COALESCE(l.code, ''), COALESCE(l.partner_id, 0),`, `
		FROM top LEFT JOIN links l ON l.id = top.k`),
}

func groupQuery(key, head, from string) string {
	return `
	WITH t AS (
		SELECT ` + key + ` AS k, sum(clicks) AS clicks, sum(visitors) AS visitors, sum(leads) AS leads
		FROM rollup_traffic_daily
		WHERE program_id = $1 AND day BETWEEN $2 AND $3 AND ` + key + ` <> 0
		GROUP BY ` + key + `
	), s AS (
		SELECT ` + key + ` AS k, currency, sum(conversions) AS conversions, sum(revenue_minor) AS revenue,
			sum(commission_minor) AS commission, sum(refunds) AS refunds, sum(refunded_minor) AS refunded
		FROM rollup_sales_daily
		WHERE program_id = $1 AND day BETWEEN $2 AND $3 AND ` + key + ` <> 0
		GROUP BY ` + key + `, currency
	), g AS (
		SELECT k, sum(clicks) AS clicks, sum(visitors) AS visitors, sum(leads) AS leads
		FROM (SELECT k, clicks, visitors, leads FROM t UNION ALL SELECT k, 0, 0, 0 FROM s) x
		GROUP BY k
	), top AS (
		SELECT g.k, g.clicks, g.visitors, g.leads,
			COALESCE((SELECT s.revenue FROM s WHERE s.k = g.k AND s.currency = $4), 0) AS own_revenue
		FROM g
		ORDER BY own_revenue DESC, g.clicks DESC, g.k
		LIMIT $5
	)` + head + `
		top.clicks::text, top.visitors::text, top.leads::text,
		(SELECT COALESCE(jsonb_agg(jsonb_build_array(s.currency, s.conversions::text, s.revenue::text, s.commission::text,
			s.refunds::text, s.refunded::text)), '[]')
			FROM s WHERE s.k = top.k) AS sales` + from + `
	ORDER BY top.own_revenue DESC, top.clicks DESC, top.k`
}

// groups reads the top groups of the query over the window.
func (s *PerformanceService) groups(ctx context.Context, q ledger.PerformanceQuery, w ledger.PerformanceWindow, cur ledger.Currency) ([]ledger.PerformanceGroup, error) {
	rows, err := s.db.QueryContext(ctx, groupQueries[q.GroupBy], q.ProgramID, w.From, w.To, string(cur), q.Limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	groups := []ledger.PerformanceGroup{}
	for rows.Next() {
		var (
			g                       ledger.PerformanceGroup
			name, email             sql.NullString
			clicks, visitors, leads minorSum
			sales                   []byte
		)
		if err := rows.Scan(&g.ID, &name, &email, &g.Code, &g.PartnerID, &clicks, &visitors, &leads, &sales); err != nil {
			return nil, err
		}
		g.Name, g.Email = name.String, email.String
		g.Clicks, g.Visitors, g.Leads = int64(clicks), int64(visitors), int64(leads)
		g.Sales = map[ledger.Currency]ledger.SalesNumbers{}
		var cells [][6]string
		if err := json.Unmarshal(sales, &cells); err != nil {
			return nil, err
		}
		for _, c := range cells {
			var n [5]int64
			for i := range n {
				d, err := decimal.NewFromString(c[i+1])
				if err != nil {
					return nil, err
				}
				n[i] = ledger.ClampMinor(d)
			}
			g.AddSales(ledger.Currency(c[0]), ledger.SalesNumbers{Conversions: n[0], Revenue: n[1], Commission: n[2],
				Refunds: n[3], Refunded: n[4]})
		}
		groups = append(groups, g)
	}
	return groups, rows.Err()
}
