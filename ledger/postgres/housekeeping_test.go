package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
)

// TestPruneDeletesOnlyDeliveredHistoryPastRetention fills the outbox and
// a delivery log with more old rows than one pruning batch holds, an old
// message never sent ahead of them, and recent rows after them: pruning
// deletes every old sent message and old attempt, across batches, and
// keeps the unsent message and everything recent.
func TestPruneDeletesOnlyDeliveredHistoryPastRetention(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	db.DB.Now = func() time.Time { return now }
	fx := db.MustFixture(t, "prune")
	old, recent := now.Add(-8*24*time.Hour), now.Add(-24*time.Hour)
	var endpoint int64
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO outbox (task_type, queue, payload, created_at) VALUES ('t', 'q', '{}', $1)`, []any{old}},
		{`INSERT INTO outbox (task_type, queue, payload, created_at, sent_at)
			SELECT 't', 'q', '{}', $1, $1 FROM generate_series(1, 12000)`, []any{old}},
		{`INSERT INTO outbox (task_type, queue, payload, created_at, sent_at)
			SELECT 't', 'q', '{}', $1, $1 FROM generate_series(1, 3)`, []any{recent}},
	} {
		if _, err := db.Exec(q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	e, err := postgres.NewWebhookService(db.DB, nil).CreateEndpoint(context.Background(), fx.ProgramID, ledger.WebhookInput{
		URL: ledger.Some("https://brand.example/hook"), Events: ledger.Some([]string{"sale.created"})})
	if err != nil {
		t.Fatal(err)
	}
	endpoint = e.ID
	for _, at := range []struct {
		n    int
		when time.Time
	}{{6000, now.Add(-31 * 24 * time.Hour)}, {2, now.Add(-29 * 24 * time.Hour)}} {
		if _, err := db.Exec(`INSERT INTO webhook_deliveries (endpoint_id, message_id, event_type, attempt, status_code, created_at)
			SELECT $1, 'msg_' || i, 'sale.created', 1, 200, $2 FROM generate_series(1, $3) i`, endpoint, at.when, at.n); err != nil {
			t.Fatal(err)
		}
	}

	h := postgres.NewHousekeeper(db.DB)
	p, err := h.Prune(context.Background(), ledger.DefaultRetention)
	if err != nil {
		t.Fatal(err)
	}
	if p.Outbox != 12000 || p.WebhookAttempts != 6000 {
		t.Fatalf("pruned %+v, want 12000 outbox messages and 6000 attempts", p)
	}
	count := func(query string) int {
		var n int
		if err := db.QueryRow(query).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(`SELECT count(*) FROM outbox WHERE sent_at IS NULL`); n != 1 {
		t.Fatalf("%d unsent messages left, want the one", n)
	}
	if n := count(`SELECT count(*) FROM outbox WHERE sent_at IS NOT NULL`); n != 3 {
		t.Fatalf("%d sent messages left, want the 3 recent ones", n)
	}
	if n := count(`SELECT count(*) FROM webhook_deliveries`); n != 2 {
		t.Fatalf("%d attempts left, want the 2 recent ones", n)
	}
	// A second run finds nothing more to delete.
	if p, err := h.Prune(context.Background(), ledger.DefaultRetention); err != nil || p != (ledger.Pruned{}) {
		t.Fatalf("second prune: %+v, %v", p, err)
	}
}

// TestPruneRollupSessions: the sessions the rollups remember are deleted
// once their day is past the retention, in batches and program by
// program; the rollup counters themselves, and younger days' sessions
// (a late click of those days still counts its session once), stay.
func TestPruneRollupSessions(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	db.DB.Now = func() time.Time { return now }
	a, b := db.MustFixture(t, "sessions-a"), db.MustFixture(t, "sessions-b")
	days := map[string]int{"2026-10-01": 6000, "2026-10-14": 3, "2026-10-18": 4, "2026-11-20": 5}
	for _, program := range []int64{a.ProgramID, b.ProgramID} {
		for day, n := range days {
			if _, err := db.Exec(`INSERT INTO rollup_sessions (program_id, day, partner_id, link_id, session_id)
				SELECT $1, $2::date, -1, -1, 'sess-' || i FROM generate_series(1, $3) i`, program, day, n); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.Exec(`INSERT INTO rollup_visitors_daily (program_id, day, visitors) VALUES ($1, '2026-10-01', 6000)`, program); err != nil {
			t.Fatal(err)
		}
	}
	h := postgres.NewHousekeeper(db.DB)
	// 35 days before now is 2026-10-17: days up to 2026-10-15 go.
	p, err := h.Prune(context.Background(), ledger.DefaultRetention)
	if err != nil {
		t.Fatal(err)
	}
	if p.RollupSessions != 2*(6000+3) {
		t.Fatalf("pruned %+v, want %d sessions", p, 2*(6000+3))
	}
	var left, visitors int
	if err := db.QueryRow(`SELECT count(*) FROM rollup_sessions WHERE day >= '2026-10-18'`).Scan(&left); err != nil || left != 2*(4+5) {
		t.Fatalf("%d younger sessions left (%v), want %d", left, err, 2*(4+5))
	}
	if err := db.QueryRow(`SELECT count(*) FROM rollup_sessions`).Scan(&left); err != nil || left != 2*(4+5) {
		t.Fatalf("%d sessions left in all (%v)", left, err)
	}
	if err := db.QueryRow(`SELECT sum(visitors) FROM rollup_visitors_daily`).Scan(&visitors); err != nil || visitors != 12000 {
		t.Fatalf("visitors %d (%v): the counters must stay", visitors, err)
	}
}
