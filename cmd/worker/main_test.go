package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/workers/redistest"
)

// TestWorkerSchedulerSweepsOutbox runs the real worker with the scheduler:
// an outbox row that no relay sent is enqueued by the periodic sweep.
func TestWorkerSchedulerSweepsOutbox(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	rdb := redistest.Client(t)
	ns := redistest.Namespace(t, rdb)
	var id int64
	if err := db.QueryRow(`INSERT INTO outbox (task_type, queue, payload, created_at)
		VALUES ('notification:test', 'notifications', '{}', now() - interval '1 minute') RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	// The month three ahead of this one, counted from its first day:
	// AddDate from the 29th to the 31st can skip a short month.
	now := time.Now().UTC()
	future := "clicks_" + time.Date(now.Year(), now.Month()+3, 1, 0, 0, 0, 0, time.UTC).Format("2006_01")
	if _, err := db.Exec(`DROP TABLE ` + future); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATABASE_URL": db.URL, "REDIS_URL": redistest.URL(), "QUEUE_NAMESPACE": string(ns), "LOG_LEVEL": "error"}
	m := NewMain()
	if err := m.ParseFlags([]string{"--queues", "maintenance", "--concurrency", "2"}, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m.Close()

	waitUntil(t, "the scheduled sweep sends the outbox row", func() bool {
		var sent bool
		db.QueryRow(`SELECT sent_at IS NOT NULL FROM outbox WHERE id = $1`, id).Scan(&sent)
		return sent
	})
	// The partitions of the coming months are prepared by a task enqueued
	// at start, which may still run after the first sweep: waited for.
	waitUntil(t, "partition "+future+" prepared", func() bool {
		var exists bool
		db.QueryRow(`SELECT to_regclass($1) IS NOT NULL`, future).Scan(&exists)
		return exists
	})
}

func TestWorkerRefusesUnknownQueue(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	m := NewMain()
	env := map[string]string{"DATABASE_URL": db.URL}
	if err := m.ParseFlags([]string{"--queues", "clicks,nope"}, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	err := m.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), `unknown queue "nope"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestWorkerRefusesNiceOutOfRange(t *testing.T) {
	for _, n := range []string{"-1", "20"} {
		err := NewMain().ParseFlags([]string{"--nice", n}, func(string) string { return "" })
		if err == nil || !strings.Contains(err.Error(), "want 0 (as started) to 19") {
			t.Errorf("--nice %s: err = %v", n, err)
		}
	}
}
