package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/partnertrack/partnertrack/ledger"
)

// RollupService checks and rebuilds the analytics rollups (migrations
// 00016, 00017, 00023 to 00025, 00027 and 00028) against the raw tables
// they count. It is the operator's
// tool behind `partnerctl analytics verify` and `rebuild`.
type RollupService struct {
	db *DB
}

// NewRollupService returns the rollup checks over db.
func NewRollupService(db *DB) *RollupService { return &RollupService{db: db} }

// RollupDiff is one counter whose stored value is not what the raw tables
// say. Currency is empty for the traffic, visitor and partner tables;
// PartnerID and LinkID are 0 for the program-wide tables
// (rollup_visitors_daily, rollup_program_sales_daily), LinkID for the set
// of active partners (rollup_partners_daily, whose one counter, active,
// is 1 for a partner's day in the set).
type RollupDiff struct {
	Table      string
	Day        string // YYYY-MM-DD, the program's day; for rollup_clicks_hourly the UTC hour, YYYY-MM-DDTHH:MMZ
	PartnerID  int64
	LinkID     int64
	Currency   string
	Counter    string
	Stored     int64
	Recomputed int64
}

func (d RollupDiff) String() string {
	key := fmt.Sprintf("day=%s", d.Day)
	switch d.Table {
	case "rollup_clicks_hourly":
		key = fmt.Sprintf("hour=%s", d.Day)
	case "rollup_visitors_daily", "rollup_program_sales_daily":
	case "rollup_partners_daily":
		key += fmt.Sprintf(" partner=%d", d.PartnerID)
	default:
		key += fmt.Sprintf(" partner=%d link=%d", d.PartnerID, d.LinkID)
	}
	if d.Currency != "" {
		key += " currency=" + d.Currency
	}
	return fmt.Sprintf("%s %s %s: stored %d, recomputed %d", d.Table, key, d.Counter, d.Stored, d.Recomputed)
}

// rollupBounds is the program's timezone and the instants of its days
// [$2, $3] (NULL: unbounded), the CTE every recomputation starts with, so
// the raw tables are read by range on their timestamps.
const rollupBounds = `b AS (
	SELECT p.timezone AS tz,
		COALESCE(($2::date)::timestamp AT TIME ZONE p.timezone, '-infinity') AS lo,
		COALESCE((($3::date) + 1)::timestamp AT TIME ZONE p.timezone, 'infinity') AS hi
	FROM programs p WHERE p.id = $1)`

// The recomputations, from the raw tables, with the pinned semantics
// (docs/analytics.md, "Rollups"): real rows only, the program's days, the
// lead's and the sale's link their customer's. Each returns the counters
// of program $1 for days [$2, $3].
const (
	recomputeTraffic = `WITH ` + rollupBounds + `,
	cl AS (
		SELECT (c.occurred_at AT TIME ZONE b.tz)::date AS day, COALESCE(c.partner_id, 0) AS partner_id,
			COALESCE(c.link_id, 0) AS link_id, count(*) AS clicks, count(DISTINCT c.session_id) AS visitors,
			0::bigint AS leads
		FROM clicks c CROSS JOIN b
		WHERE c.program_id = $1 AND NOT c.is_test AND c.occurred_at >= b.lo AND c.occurred_at < b.hi
		GROUP BY 1, 2, 3
	), ld AS (
		SELECT (l.occurred_at AT TIME ZONE b.tz)::date, COALESCE(l.partner_id, 0), COALESCE(cu.link_id, 0),
			0::bigint, 0::bigint, count(*)
		FROM leads l LEFT JOIN customers cu ON cu.id = l.customer_id CROSS JOIN b
		WHERE l.program_id = $1 AND NOT l.is_test AND l.settled_at IS NOT NULL
			AND l.occurred_at >= b.lo AND l.occurred_at < b.hi
		GROUP BY 1, 2, 3
	)
	SELECT day, partner_id, link_id, sum(clicks)::bigint AS clicks, sum(visitors)::bigint AS visitors,
		sum(leads)::bigint AS leads
	FROM (SELECT * FROM cl UNION ALL SELECT * FROM ld) x
	GROUP BY 1, 2, 3`

	// The program's row of a day: its clicks, its distinct sessions across
	// partners and links (not the sum of theirs) and its settled leads.
	recomputeVisitors = `WITH ` + rollupBounds + `,
	cl AS (
		SELECT (c.occurred_at AT TIME ZONE b.tz)::date AS day, count(*) AS clicks,
			count(DISTINCT c.session_id) AS visitors, 0::bigint AS leads
		FROM clicks c CROSS JOIN b
		WHERE c.program_id = $1 AND NOT c.is_test AND c.occurred_at >= b.lo AND c.occurred_at < b.hi
		GROUP BY 1
	), ld AS (
		SELECT (l.occurred_at AT TIME ZONE b.tz)::date, 0::bigint, 0::bigint, count(*)
		FROM leads l CROSS JOIN b
		WHERE l.program_id = $1 AND NOT l.is_test AND l.settled_at IS NOT NULL
			AND l.occurred_at >= b.lo AND l.occurred_at < b.hi
		GROUP BY 1
	)
	SELECT day, sum(clicks)::bigint AS clicks, sum(visitors)::bigint AS visitors, sum(leads)::bigint AS leads
	FROM (SELECT * FROM cl UNION ALL SELECT * FROM ld) x
	GROUP BY 1`

	recomputeSessions = `WITH ` + rollupBounds + `,
	s AS (
		SELECT (c.occurred_at AT TIME ZONE b.tz)::date AS day, COALESCE(c.partner_id, 0) AS partner_id,
			COALESCE(c.link_id, 0) AS link_id, c.session_id
		FROM clicks c CROSS JOIN b
		WHERE c.program_id = $1 AND NOT c.is_test AND c.session_id IS NOT NULL
			AND c.occurred_at >= b.lo AND c.occurred_at < b.hi
	)
	SELECT DISTINCT day, partner_id, link_id, session_id FROM s
	UNION
	SELECT DISTINCT day, -1, -1, session_id FROM s`

	recomputeSales = `WITH ` + rollupBounds + `,
	sa AS (
		SELECT (s.occurred_at AT TIME ZONE b.tz)::date AS day, COALESCE(s.partner_id, 0) AS partner_id,
			COALESCE(cu.link_id, 0) AS link_id, s.currency, count(*) AS conversions,
			sum(s.amount_cents) AS revenue_minor, 0::numeric AS commission_minor, 0::bigint AS refunds,
			0::numeric AS refunded_minor
		FROM sales s LEFT JOIN customers cu ON cu.id = s.customer_id CROSS JOIN b
		WHERE s.program_id = $1 AND NOT s.is_test AND s.occurred_at >= b.lo AND s.occurred_at < b.hi
		GROUP BY 1, 2, 3, 4
	), cm AS (
		SELECT (s.occurred_at AT TIME ZONE b.tz)::date, COALESCE(s.partner_id, 0), COALESCE(cu.link_id, 0),
			c.currency, 0::bigint, 0::numeric, sum(c.amount_minor), 0::bigint, 0::numeric
		FROM commissions c JOIN sales s ON s.id = c.sale_id
		LEFT JOIN customers cu ON cu.id = s.customer_id CROSS JOIN b
		WHERE s.program_id = $1 AND NOT s.is_test AND s.occurred_at >= b.lo AND s.occurred_at < b.hi
		GROUP BY 1, 2, 3, 4
	), rf AS (
		SELECT (r.created_at AT TIME ZONE b.tz)::date, COALESCE(s.partner_id, 0), COALESCE(cu.link_id, 0),
			s.currency, 0::bigint, 0::numeric, 0::numeric, count(*), sum(r.amount_cents)
		FROM refunds r JOIN sales s ON s.id = r.sale_id
		LEFT JOIN customers cu ON cu.id = s.customer_id CROSS JOIN b
		WHERE s.program_id = $1 AND NOT s.is_test AND r.created_at >= b.lo AND r.created_at < b.hi
		GROUP BY 1, 2, 3, 4
	)
	SELECT day, partner_id, link_id, currency, sum(conversions)::bigint AS conversions,
		sum(revenue_minor)::bigint AS revenue_minor, sum(commission_minor)::bigint AS commission_minor,
		sum(refunds)::bigint AS refunds, sum(refunded_minor)::bigint AS refunded_minor
	FROM (SELECT * FROM sa UNION ALL SELECT * FROM cm UNION ALL SELECT * FROM rf) x
	GROUP BY 1, 2, 3, 4`

	// The program's sales of a day and currency: the same definitions,
	// from the raw rows, over every partner and link.
	recomputeProgramSales = `SELECT day, currency, sum(conversions)::bigint AS conversions,
		sum(revenue_minor)::bigint AS revenue_minor, sum(commission_minor)::bigint AS commission_minor,
		sum(refunds)::bigint AS refunds, sum(refunded_minor)::bigint AS refunded_minor
	FROM (` + recomputeSales + `) r
	GROUP BY 1, 2`

	// The active partners of a day (migration 00024): partners (id <> 0)
	// with a real click, a settled real lead or a real sale that day, or a
	// refund of a real sale created that day.
	recomputePartners = `WITH ` + rollupBounds + `
	SELECT day, partner_id, 1::bigint AS active FROM (
		SELECT (c.occurred_at AT TIME ZONE b.tz)::date AS day, c.partner_id
		FROM clicks c CROSS JOIN b
		WHERE c.program_id = $1 AND NOT c.is_test AND c.partner_id <> 0 AND c.occurred_at >= b.lo AND c.occurred_at < b.hi
		UNION
		SELECT (l.occurred_at AT TIME ZONE b.tz)::date, l.partner_id
		FROM leads l CROSS JOIN b
		WHERE l.program_id = $1 AND NOT l.is_test AND l.settled_at IS NOT NULL AND l.partner_id <> 0
			AND l.occurred_at >= b.lo AND l.occurred_at < b.hi
		UNION
		SELECT (s.occurred_at AT TIME ZONE b.tz)::date, s.partner_id
		FROM sales s CROSS JOIN b
		WHERE s.program_id = $1 AND NOT s.is_test AND s.partner_id <> 0 AND s.occurred_at >= b.lo AND s.occurred_at < b.hi
		UNION
		SELECT (r.created_at AT TIME ZONE b.tz)::date, s.partner_id
		FROM refunds r JOIN sales s ON s.id = r.sale_id CROSS JOIN b
		WHERE s.program_id = $1 AND NOT s.is_test AND s.partner_id <> 0 AND r.created_at >= b.lo AND r.created_at < b.hi
	) x`
)

// The program's clicks per UTC hour (migration 00028) of the hours that
// start in days [$2, $3] and at or after $4, the oldest hour kept
// (ledger.ClickHoursKept): older ones are pruned, not wrong.
const (
	recomputeClickHours = `WITH ` + rollupBounds + `
	SELECT date_trunc('hour', c.occurred_at, 'UTC') AS hour, count(*)::bigint AS clicks
	FROM clicks c CROSS JOIN b
	WHERE c.program_id = $1 AND NOT c.is_test AND c.occurred_at >= $4::timestamptz
		AND c.occurred_at >= b.lo - interval '1 hour' AND c.occurred_at < b.hi
		AND date_trunc('hour', c.occurred_at, 'UTC') >= b.lo AND date_trunc('hour', c.occurred_at, 'UTC') < b.hi
	GROUP BY 1`
	storedClickHours = `WITH ` + rollupBounds + `
	SELECT h.hour, h.clicks FROM rollup_clicks_hourly h CROSS JOIN b
	WHERE h.program_id = $1 AND h.hour >= $4::timestamptz AND h.hour >= b.lo AND h.hour < b.hi`
)

// pendingVisitors (pv) is what the next tallies will add to program $1's
// visitors of days [$2, $3]: per key (the program's as -1, -1), the
// pending sessions the tallied set does not hold yet. The stored
// counters are compared with it added, so that the verification holds
// between two tallies too.
const pendingVisitors = `ps AS (
		SELECT DISTINCT p.day, p.partner_id, p.link_id, s.session_id
		FROM rollup_pending_sessions p CROSS JOIN LATERAL unnest(p.session_ids) AS s(session_id)
		WHERE p.program_id = $1 AND day >= COALESCE($2::date, '-infinity') AND day <= COALESCE($3::date, 'infinity')
	), pk AS (
		SELECT day, partner_id, link_id, session_id FROM ps
		UNION
		SELECT day, -1, -1, session_id FROM ps
	), pv AS (
		SELECT day, partner_id, link_id, count(*) AS n FROM pk
		WHERE NOT EXISTS (SELECT 1 FROM rollup_sessions r WHERE r.program_id = $1 AND r.day = pk.day
			AND r.partner_id = pk.partner_id AND r.link_id = pk.link_id AND r.session_id = pk.session_id)
		GROUP BY 1, 2, 3
	)`

// The stored rows of program $1 for days [$2, $3], in the recomputations'
// shape.
const (
	storedTraffic = `WITH ` + pendingVisitors + `
	SELECT t.day, t.partner_id, t.link_id, t.clicks, t.visitors + COALESCE(p.n, 0), t.leads
	FROM rollup_traffic_daily t LEFT JOIN pv p USING (day, partner_id, link_id)
	WHERE t.program_id = $1 AND t.day >= COALESCE($2::date, '-infinity') AND t.day <= COALESCE($3::date, 'infinity')`
	storedVisitors = `WITH ` + pendingVisitors + `
	SELECT t.day, t.clicks, t.visitors + COALESCE(p.n, 0), t.leads
	FROM rollup_visitors_daily t LEFT JOIN pv p ON p.day = t.day AND p.partner_id = -1
	WHERE t.program_id = $1 AND t.day >= COALESCE($2::date, '-infinity') AND t.day <= COALESCE($3::date, 'infinity')`
	storedSales = `SELECT day, partner_id, link_id, currency, conversions, revenue_minor, commission_minor, refunds,
		refunded_minor FROM rollup_sales_daily
	WHERE program_id = $1 AND day >= COALESCE($2::date, '-infinity') AND day <= COALESCE($3::date, 'infinity')`
	storedProgramSales = `SELECT day, currency, conversions, revenue_minor, commission_minor, refunds, refunded_minor
		FROM rollup_program_sales_daily
	WHERE program_id = $1 AND day >= COALESCE($2::date, '-infinity') AND day <= COALESCE($3::date, 'infinity')`
	storedPartners = `SELECT day, partner_id, 1::bigint FROM rollup_partners_daily
	WHERE program_id = $1 AND day >= COALESCE($2::date, '-infinity') AND day <= COALESCE($3::date, 'infinity')`
)

// rollupTable describes one rollup table for the comparison: its key
// columns (after day) and its counters, in the order the queries return
// them.
type rollupTable struct {
	name      string
	keys      int // key columns after day: 1 currency; 2 partner_id, link_id; 3 and currency; 4 partner_id
	counters  []string
	stored    string
	recompute string
	// hourly: the rows are UTC hours, not days, and the queries take the
	// oldest hour kept as $4.
	hourly bool
}

var rollupTables = []rollupTable{
	{"rollup_traffic_daily", 2, []string{"clicks", "visitors", "leads"}, storedTraffic, recomputeTraffic, false},
	{"rollup_visitors_daily", 0, []string{"clicks", "visitors", "leads"}, storedVisitors, recomputeVisitors, false},
	{"rollup_sales_daily", 3, []string{"conversions", "revenue_minor", "commission_minor", "refunds", "refunded_minor"},
		storedSales, recomputeSales, false},
	{"rollup_program_sales_daily", 1, []string{"conversions", "revenue_minor", "commission_minor", "refunds", "refunded_minor"},
		storedProgramSales, recomputeProgramSales, false},
	{"rollup_partners_daily", 4, []string{"active"}, storedPartners, recomputePartners, false},
	{"rollup_clicks_hourly", 0, []string{"clicks"}, storedClickHours, recomputeClickHours, true},
}

// hourFormat is how an hour's row is named in a difference.
const hourFormat = "2006-01-02T15:04Z"

// oldestClickHour is the first hour whose clicks per hour are kept at now.
func oldestClickHour(now time.Time) time.Time {
	return now.UTC().Add(-ledger.ClickHoursKept).Truncate(time.Hour).Add(time.Hour)
}

// rollupKey is a row's key: day, partner, link, currency.
type rollupKey struct {
	day       string
	partnerID int64
	linkID    int64
	currency  string
}

// readRollupRows reads a query of a table's shape into key → counters.
func readRollupRows(ctx context.Context, tx *sqlx.Tx, t rollupTable, query string, args ...any) (map[rollupKey][]int64, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[rollupKey][]int64{}
	for rows.Next() {
		var k rollupKey
		var day time.Time
		counters := make([]int64, len(t.counters))
		dest := []any{&day}
		switch t.keys {
		case 1:
			dest = append(dest, &k.currency)
		case 2:
			dest = append(dest, &k.partnerID, &k.linkID)
		case 3:
			dest = append(dest, &k.partnerID, &k.linkID, &k.currency)
		case 4:
			dest = append(dest, &k.partnerID)
		}
		for i := range counters {
			dest = append(dest, &counters[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		if t.hourly {
			k.day = day.UTC().Format(hourFormat)
		} else {
			k.day = day.Format(time.DateOnly)
		}
		out[k] = counters
	}
	return out, rows.Err()
}

// dateArg is a day bound for the queries: NULL when zero (unbounded).
func dateArg(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.Format(time.DateOnly)
}

// VerifyRollups recomputes every counter of the program's days [from, to]
// (zero: unbounded) from the raw tables and returns each one that differs
// from the stored rollups (a missing row counts as zeros), sorted by table
// and key. It reads both in one repeatable-read snapshot, so it can run
// under load: the triggers write the rollups in the raw rows' transaction,
// and the visitors not tallied yet are counted from the pending sessions
// (pendingVisitors).
func (s *RollupService) VerifyRollups(ctx context.Context, programID int64, from, to time.Time) (diffs []RollupDiff, err error) {
	defer wrap(&err, "postgres.VerifyRollups(%d)", programID)
	tx, err := s.db.BeginTxx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	var exists bool
	if err := tx.GetContext(ctx, &exists, `SELECT EXISTS (SELECT 1 FROM programs WHERE id = $1)`, programID); err != nil {
		return nil, err
	}
	if !exists {
		return nil, notFound("program")
	}
	diffs = []RollupDiff{}
	oldestHour := oldestClickHour(s.db.now())
	for _, t := range rollupTables {
		args := []any{programID, dateArg(from), dateArg(to)}
		if t.hourly {
			args = append(args, oldestHour)
		}
		stored, err := readRollupRows(ctx, tx, t, t.stored, args...)
		if err != nil {
			return nil, err
		}
		recomputed, err := readRollupRows(ctx, tx, t, t.recompute, args...)
		if err != nil {
			return nil, err
		}
		keys := make([]rollupKey, 0, len(stored)+len(recomputed))
		for k := range stored {
			keys = append(keys, k)
		}
		for k := range recomputed {
			if _, ok := stored[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Slice(keys, func(i, j int) bool {
			a, b := keys[i], keys[j]
			if a.day != b.day {
				return a.day < b.day
			}
			if a.partnerID != b.partnerID {
				return a.partnerID < b.partnerID
			}
			if a.linkID != b.linkID {
				return a.linkID < b.linkID
			}
			return a.currency < b.currency
		})
		zero := make([]int64, len(t.counters))
		for _, k := range keys {
			have, want := stored[k], recomputed[k]
			if have == nil {
				have = zero
			}
			if want == nil {
				want = zero
			}
			for i, c := range t.counters {
				if have[i] != want[i] {
					diffs = append(diffs, RollupDiff{Table: t.name, Day: k.day, PartnerID: k.partnerID, LinkID: k.linkID,
						Currency: k.currency, Counter: c, Stored: have[i], Recomputed: want[i]})
				}
			}
		}
	}
	return diffs, tx.Commit()
}

// RebuildRollups deletes and recomputes the rollups of the program
// (programID 0: of every program, one transaction each) and returns the
// programs rebuilt.
func (s *RollupService) RebuildRollups(ctx context.Context, programID int64) (rebuilt []int64, err error) {
	defer wrap(&err, "postgres.RebuildRollups(%d)", programID)
	ids := []int64{programID}
	if programID == 0 {
		ids = nil
		if err := s.db.SelectContext(ctx, &ids, `SELECT id FROM programs ORDER BY id`); err != nil {
			return nil, err
		}
	}
	for _, id := range ids {
		err := s.db.Transact(ctx, func(tx *sqlx.Tx) error {
			var exists bool
			if err := tx.GetContext(ctx, &exists, `SELECT EXISTS (SELECT 1 FROM programs WHERE id = $1)`, id); err != nil {
				return err
			}
			if !exists {
				return notFound("program")
			}
			return rebuildRollups(ctx, tx, id, s.db.now())
		})
		if err != nil {
			return rebuilt, err
		}
		rebuilt = append(rebuilt, id)
	}
	return rebuilt, nil
}

// rebuildRollups replaces the program's rollups by their recomputation,
// in tx (read committed). It first takes the program's rollup lock
// exclusively: the triggers take it shared before they write, so the
// rebuild waits for the writers in flight to commit (their rows are then
// visible to the recomputation, which takes its snapshot after the lock)
// and holds new ones back until it commits (their rows, not visible to
// it, are then added by their own triggers, whose statements take their
// snapshots after the lock and so see a new timezone: every write path
// runs in read committed). Click batches of the
// program wait for the length of the rebuild, which is proportional to
// the program's events; other programs are not held.
func rebuildRollups(ctx context.Context, tx *sqlx.Tx, programID int64, now time.Time) error {
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(17, ($1::bigint & 2147483647)::int)`, programID); err != nil {
		return err
	}
	for _, table := range []string{"rollup_traffic_daily", "rollup_sessions", "rollup_pending_sessions",
		"rollup_visitors_daily", "rollup_sales_daily", "rollup_program_sales_daily", "rollup_partners_daily",
		"rollup_clicks_hourly"} {
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE program_id = $1`, programID); err != nil {
			return err
		}
	}
	for _, q := range []string{
		`INSERT INTO rollup_traffic_daily (program_id, day, partner_id, link_id, clicks, visitors, leads)
		SELECT $1, day, partner_id, link_id, clicks, visitors, leads FROM (` + recomputeTraffic + `) x`,
		`INSERT INTO rollup_sessions (program_id, day, partner_id, link_id, session_id)
		SELECT $1, day, partner_id, link_id, session_id FROM (` + recomputeSessions + `) x`,
		`INSERT INTO rollup_visitors_daily (program_id, day, clicks, visitors, leads)
		SELECT $1, day, clicks, visitors, leads FROM (` + recomputeVisitors + `) x`,
		`INSERT INTO rollup_sales_daily (program_id, day, partner_id, link_id, currency, conversions, revenue_minor,
			commission_minor, refunds, refunded_minor)
		SELECT $1, day, partner_id, link_id, currency, conversions, revenue_minor, commission_minor, refunds,
			refunded_minor FROM (` + recomputeSales + `) x`,
		`INSERT INTO rollup_program_sales_daily (program_id, day, currency, conversions, revenue_minor, commission_minor,
			refunds, refunded_minor)
		SELECT $1, day, currency, conversions, revenue_minor, commission_minor, refunds, refunded_minor
		FROM (` + recomputeProgramSales + `) x`,
		`INSERT INTO rollup_partners_daily (program_id, day, partner_id)
		SELECT $1, day, partner_id FROM (` + recomputePartners + `) x`,
	} {
		if _, err := tx.ExecContext(ctx, q, programID, nil, nil); err != nil {
			return err
		}
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO rollup_clicks_hourly (program_id, hour, clicks)
		SELECT $1, hour, clicks FROM (`+recomputeClickHours+`) x`, programID, nil, nil, oldestClickHour(now))
	return err
}
