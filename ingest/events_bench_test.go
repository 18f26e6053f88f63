package ingest

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
)

// BenchmarkListTrackingEvents measures GET /api/tracking/events/:programId
// through the whole edge (session lookup, role, three indexed reads,
// merge, JSON) on a program with ten million clicks, and reports p50 and
// p99 latency next to ns/op. Benchmarks run only under -bench, never in
// `make test`:
//
//	go test ./ingest -run '^$' -bench ListTrackingEvents -benchtime 2000x
//
// LISTING_BENCH_CLICKS changes the number of clicks (default 10,000,000;
// seeding them with generate_series takes a few minutes on two cores).
func BenchmarkListTrackingEvents(b *testing.B) {
	clicks := 10_000_000
	if v := os.Getenv("LISTING_BENCH_CLICKS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1000 {
			b.Fatalf("LISTING_BENCH_CLICKS=%q: want an integer of at least 1000", v)
		}
		clicks = n
	}
	ctx := context.Background()
	db := pgtest.New(b)
	clock := &fakeClock{t: time.Now().UTC()}
	db.Now = clock.Now
	programID, otherID, token := benchWorld(b, db)

	// Clicks spread over the last 50 days (the monthly partitions the
	// migration prepares), one in twenty a test click; a tenth as many
	// for another program; leads and sales a tenth and a fiftieth.
	now := clock.Now()
	span := 50 * 24 * time.Hour
	start := time.Now()
	withClickIndexesRebuilt(b, db, func() {
		seedClicks(b, db, programID, clicks, now, span)
		seedClicks(b, db, otherID, clicks/10, now, span)
	})
	seedRows(b, db, `
		INSERT INTO leads (program_id, click_id, customer_key, session_id, page_url, mode, converted, is_test, occurred_at, created_at)
		SELECT $1, 'c' || i, 'cust_' || i, 'sess_' || i, 'https://acme.example/signup', 'server', i % 3 = 0, i % 20 = 0, t, t
		FROM generate_series(1, $2::int) AS g(i), LATERAL (SELECT $3::timestamptz - i * ($4::float8 * interval '1 microsecond')) AS x(t)`,
		programID, clicks/10, now, float64(span.Microseconds())/float64(clicks/10))
	seedRows(b, db, `
		INSERT INTO sales (program_id, processor_event_id, amount_cents, currency, is_test, source, click_id, occurred_at, created_at)
		SELECT $1, 'bench_txn_' || i, 1000 + i % 9000, 'USD', i % 20 = 0, 'api', 'c' || i, t, t
		FROM generate_series(1, $2::int) AS g(i), LATERAL (SELECT $3::timestamptz - i * ($4::float8 * interval '1 microsecond')) AS x(t)`,
		programID, clicks/50, now, float64(span.Microseconds())/float64(clicks/50))
	if _, err := db.ExecContext(ctx, `ANALYZE clicks; ANALYZE leads; ANALYZE sales`); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d clicks (+%d for another program), %d leads, %d sales in %s",
		clicks, clicks/10, clicks/10, clicks/50, time.Since(start).Round(time.Second))

	mid := now.Add(-span / 2)
	window := url.Values{"dateFrom": {formatTime(mid.Add(-24 * time.Hour))}, "dateTo": {formatTime(mid)}}
	benchPlans(b, db, programID, mid)

	srv := newTestServer(db, clock)
	for _, bc := range []struct {
		name  string
		query url.Values
	}{
		{"AllDefault", nil},
		{"AllPageSize100LastPage", url.Values{"pageSize": {"100"}, "page": {"9"}}},
		{"ClicksPageSize100", url.Values{"pageSize": {"100"}, "eventType": {"click"}}},
		{"AllOneDayWindowMidway", window},
		{"ConversionsOneDayWindowMidway", mergeQuery(window, url.Values{"eventType": {"conversion"}})},
	} {
		b.Run(bc.name, func(b *testing.B) {
			path := "/api/tracking/events/" + itoa(programID) + "?" + bc.query.Encode()
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				hr := httptest.NewRequest("GET", path, nil)
				hr.Header.Set("Authorization", "Bearer "+token)
				t0 := time.Now()
				resp, err := srv.App().Test(hr, -1)
				if err != nil {
					b.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				lat = append(lat, time.Since(t0))
				if resp.StatusCode != 200 || !strings.Contains(string(body), `"event_type"`) {
					b.Fatalf("%s: %d %.300s", path, resp.StatusCode, body)
				}
			}
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

func mergeQuery(a, b url.Values) url.Values {
	out := url.Values{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// benchWorld creates the benchmarked program, another program, and an
// owner's dashboard token.
func benchWorld(b *testing.B, db *pgtest.DB) (programID, otherID int64, token string) {
	ctx := context.Background()
	accounts, programs := postgres.NewAccountService(db.DB), postgres.NewProgramService(db.DB)
	ws, err := accounts.CreateWorkspace(ctx, "Bench", "bench@acme.example")
	if err != nil {
		b.Fatal(err)
	}
	in := ledger.ProgramInput{Name: ledger.Some("Big"), Domain: ledger.Some("big.example"),
		CommissionType: ledger.Some("percent"), CommissionRate: ledger.Some(decimal.NewFromInt(20))}
	p, err := programs.CreateProgram(ctx, ws.ID, in)
	if err != nil {
		b.Fatal(err)
	}
	other, err := programs.CreateProgram(ctx, ws.ID, in)
	if err != nil {
		b.Fatal(err)
	}
	sess, err := accounts.CreateSession(ctx, ws.OwnerUserID, ledger.DashboardSession)
	if err != nil {
		b.Fatal(err)
	}
	return p.ID, other.ID, sess.Token
}

// seedClicks inserts n clicks of a program spread evenly over span before
// now, in chunks of a million rows so that no statement runs for long.
// The click id is 26 characters, time-ordered like the ULIDs the click
// pipeline writes.
func seedClicks(b *testing.B, db *pgtest.DB, programID int64, n int, now time.Time, span time.Duration) {
	step := float64(span.Microseconds()) / float64(n)
	const chunk = 1_000_000
	for lo := 1; lo <= n; lo += chunk {
		hi := min(lo+chunk-1, n)
		seedRows(b, db, `
			INSERT INTO clicks (click_id, occurred_at, program_id, session_id, page_url, referrer_url,
				geo_country, device_type, device_os, browser_name, converted, is_test, created_at)
			SELECT lpad(to_hex((extract(epoch FROM t) * 1000)::bigint), 12, '0') || lpad(to_hex($1::bigint * 100000000 + i), 14, '0'),
				t, $1, 'sess_' || i, 'https://big.example/?aff=pat', 'https://blog.example/',
				'DE', 'desktop', 'macOS', 'Firefox', i % 50 = 0, i % 20 = 0, t
			FROM generate_series($2::int, $3::int) AS g(i),
				LATERAL (SELECT date_trunc('milliseconds', $4::timestamptz - i * ($5::float8 * interval '1 microsecond'))) AS x(t)`,
			programID, lo, hi, now, step)
	}
}

// withClickIndexesRebuilt runs seed with the clicks table's indexes
// dropped and builds them again afterwards, exactly as the migrations
// define them (their definitions are read from the catalog): one sorted
// build is several times faster than maintaining three indexes row by row.
func withClickIndexesRebuilt(b *testing.B, db *pgtest.DB, seed func()) {
	ctx := context.Background()
	var pk string
	if err := db.QueryRowContext(ctx,
		`SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'clicks_pkey'`).Scan(&pk); err != nil {
		b.Fatal(err)
	}
	var indexes []struct {
		Name string `db:"indexname"`
		Def  string `db:"indexdef"`
	}
	if err := db.SelectContext(ctx, &indexes, `
		SELECT indexname, indexdef FROM pg_indexes
		WHERE schemaname = current_schema() AND tablename = 'clicks' AND indexname <> 'clicks_pkey'`); err != nil {
		b.Fatal(err)
	}
	seedRows(b, db, `ALTER TABLE clicks DROP CONSTRAINT clicks_pkey`)
	for _, ix := range indexes {
		seedRows(b, db, `DROP INDEX `+ix.Name)
	}
	seed()
	conn, err := db.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	stmts := []string{`SET maintenance_work_mem = '256MB'`, `ALTER TABLE clicks ADD CONSTRAINT clicks_pkey ` + pk}
	for _, ix := range indexes {
		// The parent's definition reads "ON ONLY clicks"; without ONLY
		// the build also covers every partition.
		stmts = append(stmts, strings.Replace(ix.Def, " ON ONLY ", " ON ", 1))
	}
	for _, q := range stmts {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			b.Fatalf("%s: %v", q, err)
		}
	}
}

func seedRows(b *testing.B, db *pgtest.DB, query string, args ...any) {
	if _, err := db.ExecContext(context.Background(), query, args...); err != nil {
		b.Fatal(err)
	}
}

// benchPlans logs the plan of each per-type read as the listing runs it
// and fails when one scans a table sequentially instead of walking its
// listing index.
func benchPlans(b *testing.B, db *pgtest.DB, programID int64, mid time.Time) {
	for _, q := range []string{
		`SELECT click_id FROM clicks WHERE program_id = $1 AND NOT is_test ORDER BY occurred_at DESC, click_id DESC LIMIT 300`,
		`SELECT click_id FROM clicks WHERE program_id = $1 AND NOT is_test AND occurred_at >= $2 AND occurred_at <= $3 ORDER BY occurred_at DESC, click_id DESC LIMIT 30`,
		`SELECT id FROM leads WHERE program_id = $1 AND NOT is_test ORDER BY occurred_at DESC, id DESC LIMIT 300`,
		`SELECT id FROM sales WHERE program_id = $1 AND NOT is_test AND occurred_at >= $2 AND occurred_at <= $3 ORDER BY occurred_at DESC, id DESC LIMIT 30`,
	} {
		args := []any{programID}
		if strings.Contains(q, "$2") {
			args = append(args, mid.Add(-24*time.Hour), mid)
		}
		rows, err := db.QueryContext(context.Background(), "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "+q, args...)
		if err != nil {
			b.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var line string
			rows.Scan(&line)
			plan = append(plan, line)
		}
		rows.Close()
		text := strings.Join(plan, "\n")
		b.Logf("%s\n%s", q, text)
		if strings.Contains(text, "Seq Scan") {
			b.Fatalf("a listing read scans sequentially:\n%s", text)
		}
	}
}

// BenchmarkEventPageJSON measures rendering a page of a hundred listed
// events (two thirds clicks, the rest leads and conversions) to JSON,
// without the database: the part of a listing page that is the edge's
// own work.
//
//	go test ./ingest -run '^$' -bench EventPageJSON -benchmem
func BenchmarkEventPageJSON(b *testing.B) {
	str := func(s string) *string { return &s }
	at := time.Date(2026, 11, 30, 10, 11, 12, 345_000_000, time.UTC)
	events := make([]ledger.TrackingEvent, 100)
	for i := range events {
		e := ledger.TrackingEvent{ID: int64(i + 1), Timestamp: at, CreatedAt: at, ClickID: str("01JDKZ5Q8X1V6T3M2N4P7R9S0A")}
		switch i % 3 {
		case 0, 1:
			e.Type, e.SessionID, e.PageURL = ledger.EventClick, str("sess_1"), str("https://big.example/?aff=pat")
			e.ReferrerURL, e.GeoCountry, e.DeviceType = str("https://blog.example/"), str("DE"), str("desktop")
			e.DeviceOS, e.BrowserName = str("macOS"), str("Firefox")
		default:
			e.Type, e.AmountCents, e.Currency, e.SaleType = ledger.EventConversion, 4900, "USD", "sale"
			e.PaymentStatus, e.ProcessorEventID = "paid", "txn_1"
		}
		events[i] = e
	}
	b.ReportAllocs()
	for b.Loop() {
		data := make([]any, len(events))
		for i := range events {
			data[i] = eventJSON(&events[i])
		}
		if _, err := json.Marshal(map[string]any{"data": data}); err != nil {
			b.Fatal(err)
		}
	}
}
