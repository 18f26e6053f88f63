package main

import (
	"context"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/workers/redistest"
)

// TestWorkerDeliversNotifications runs the real worker: an in-app
// notification left in the outbox (its relay failed) is swept to the
// notifications queue and stored for the partner.
func TestWorkerDeliversNotifications(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	rdb := redistest.Client(t)
	ns := redistest.Namespace(t, rdb)
	var partnerID int64
	if err := db.QueryRow(`INSERT INTO partners (email, name) VALUES ('p@p.example', 'P') RETURNING id`).Scan(&partnerID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO outbox (task_type, queue, payload, created_at)
		VALUES ('notification:deliver', 'notifications',
			jsonb_build_object('partner_id', $1::bigint, 'kind', 'commission.reversed', 'title', 'Commission reversed', 'body', 'Your commission was reversed.'),
			now() - interval '1 minute')`, partnerID); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATABASE_URL": db.URL, "REDIS_URL": redistest.URL(), "QUEUE_NAMESPACE": string(ns), "LOG_LEVEL": "error"}
	m := NewMain()
	if err := m.ParseFlags([]string{"--queues", "notifications,maintenance", "--concurrency", "2"}, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		db.QueryRow(`SELECT count(*) FROM notifications WHERE partner_id = $1 AND kind = 'commission.reversed'`, partnerID).Scan(&n)
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the notification was not delivered within 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
