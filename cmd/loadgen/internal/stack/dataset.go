package stack

// LoadClicks bulk-loads the clicks the listing is measured on straight
// into the bench database: generate_series inserts in parallel ranges with
// the secondary indexes of clicks dropped during the load and rebuilt
// after it (from their own definitions, read from the catalog), and
// foreign-key triggers off for the loading sessions only; then the table
// is vacuumed and analyzed.

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	_ "github.com/lib/pq" // the Postgres driver
	"golang.org/x/sync/errgroup"
)

// Clicks describes the clicks to load.
type Clicks struct {
	ProgramID, PartnerID, LinkID int64
	N                            int64         // how many
	Span                         time.Duration // spread evenly over the span before now
	Workers                      int           // parallel loading sessions
}

// Load inserts the clicks and returns how long it took.
func LoadClicks(ctx context.Context, dsn string, c Clicks) (time.Duration, error) {
	start := time.Now()
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	if c.Workers <= 0 {
		c.Workers = 2
	}
	db.SetMaxOpenConns(c.Workers + 1)
	var defs []string
	rows, err := db.QueryContext(ctx, `
		SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid)
		FROM pg_index i WHERE i.indrelid = 'clicks'::regclass AND NOT i.indisprimary AND NOT i.indisunique`)
	if err != nil {
		return 0, err
	}
	var names []string
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			rows.Close()
			return 0, err
		}
		// The definition of a partitioned table's index reads "ON ONLY
		// clicks", which would build the parent's index alone; without
		// ONLY it is built on every partition too.
		names, defs = append(names, name), append(defs, strings.Replace(def, " ON ONLY ", " ON ", 1))
	}
	rows.Close()
	for _, n := range names {
		if _, err := db.ExecContext(ctx, `DROP INDEX `+n); err != nil {
			return 0, fmt.Errorf("drop index %s: %w", n, err)
		}
	}
	now := time.Now().UTC()
	step := c.Span / time.Duration(max(c.N, 1))
	g, gctx := errgroup.WithContext(ctx)
	per := (c.N + int64(c.Workers) - 1) / int64(c.Workers)
	for w := 0; w < c.Workers; w++ {
		lo, hi := int64(w)*per+1, min(int64(w+1)*per, c.N)
		g.Go(func() error { return insertRange(gctx, db, c, lo, hi, now, step) })
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	// The indexes come back one at a time: each build uses Postgres's own
	// parallel workers.
	for _, def := range defs {
		if _, err := db.ExecContext(ctx, def); err != nil {
			return 0, fmt.Errorf("rebuild %s: %w", def, err)
		}
	}
	// Vacuumed as autovacuum leaves a month of clicks in production: hint
	// bits set and a visibility map, so that reads see settled pages.
	if _, err := db.ExecContext(ctx, `VACUUM (ANALYZE) clicks`); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// insertRange inserts clicks lo..hi in chunks of a million, in one session
// whose foreign-key triggers are off (the ids are the program's own).
func insertRange(ctx context.Context, db *sql.DB, c Clicks, lo, hi int64, now time.Time, step time.Duration) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, s := range []string{`SET session_replication_role = replica`, `SET synchronous_commit = off`} {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	defer conn.ExecContext(context.Background(), `SET session_replication_role = origin`)
	const chunk = 1_000_000
	for from := lo; from <= hi; from += chunk {
		to := min(from+chunk-1, hi)
		_, err := conn.ExecContext(ctx, `
			INSERT INTO clicks (click_id, occurred_at, program_id, partner_id, link_id, session_id, page_url,
				referrer_url, geo_country, device_type, device_os, browser_name, ip, user_agent, converted, is_test, created_at)
			SELECT 'bench' || lpad(g::text, 12, '0'), t, $3, $4, $5, 'sess_' || g, 'https://shop.example.com/landing?aff=bench',
				'https://news.example.org/', 'DE', 'desktop', 'Windows', 'Chrome', '10.1.2.3'::inet,
				'Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/120.0', g % 50 = 0, false, t
			FROM generate_series($1::bigint, $2::bigint) AS g,
				LATERAL (SELECT $6::timestamptz - ($7::bigint - g) * $8::bigint * interval '1 microsecond' AS t) AS ts`,
			from, to, c.ProgramID, c.PartnerID, c.LinkID, now, c.N, step.Microseconds())
		if err != nil {
			return fmt.Errorf("load clicks %d..%d: %w", from, to, err)
		}
	}
	return nil
}

// LoadClickRollups writes the traffic rollups of a program's clicks
// (clicks and distinct sessions per UTC day, partner and link, and the
// program's clicks and distinct sessions per day, its active partners
// per day, and its clicks per UTC hour of the last two days), replacing
// what the rows held:
// LoadClicks bypasses the triggers that keep them (migration 00017), so
// the performance endpoint would otherwise read nothing. The program's
// timezone is UTC in the bench.
func LoadClickRollups(ctx context.Context, dsn string, programID int64) (time.Duration, error) {
	start := time.Now()
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	for _, q := range []string{`
		INSERT INTO rollup_traffic_daily (program_id, day, partner_id, link_id, clicks, visitors)
		SELECT program_id, (occurred_at AT TIME ZONE 'UTC')::date, COALESCE(partner_id, 0), COALESCE(link_id, 0),
			count(*), count(DISTINCT session_id)
		FROM clicks WHERE program_id = $1 AND NOT is_test
		GROUP BY 1, 2, 3, 4
		ON CONFLICT (program_id, day, partner_id, link_id) DO UPDATE SET clicks = EXCLUDED.clicks, visitors = EXCLUDED.visitors`, `
		INSERT INTO rollup_visitors_daily (program_id, day, clicks, visitors)
		SELECT program_id, (occurred_at AT TIME ZONE 'UTC')::date, count(*), count(DISTINCT session_id)
		FROM clicks WHERE program_id = $1 AND NOT is_test
		GROUP BY 1, 2
		ON CONFLICT (program_id, day) DO UPDATE SET clicks = EXCLUDED.clicks, visitors = EXCLUDED.visitors`, `
		INSERT INTO rollup_partners_daily (program_id, day, partner_id)
		SELECT DISTINCT program_id, (occurred_at AT TIME ZONE 'UTC')::date, partner_id
		FROM clicks WHERE program_id = $1 AND NOT is_test AND partner_id <> 0
		ON CONFLICT DO NOTHING`, `
		INSERT INTO rollup_clicks_hourly (program_id, hour, clicks)
		SELECT program_id, date_trunc('hour', occurred_at, 'UTC'), count(*)
		FROM clicks WHERE program_id = $1 AND NOT is_test AND occurred_at >= now() - interval '48 hours'
		GROUP BY 1, 2
		ON CONFLICT (program_id, hour) DO UPDATE SET clicks = EXCLUDED.clicks`,
		`ANALYZE rollup_traffic_daily`, `ANALYZE rollup_visitors_daily`, `ANALYZE rollup_partners_daily`} {
		args := []any{programID}
		if !strings.Contains(q, "$1") {
			args = nil
		}
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			return 0, fmt.Errorf("click rollups: %w", err)
		}
	}
	return time.Since(start), nil
}
