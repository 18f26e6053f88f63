package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/workers/redistest"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

func insertOutboxRow(t *testing.T, db *pgtest.DB, age time.Duration) int64 {
	t.Helper()
	var id int64
	err := db.QueryRow(`INSERT INTO outbox (task_type, queue, payload, created_at)
		VALUES ('notification:test', 'notifications', '{"hello":"world"}', now() - $1::interval) RETURNING id`,
		age.String()).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestOutboxSweepEnqueuesOnceAndSurvivesRedisOutage(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	rdb := redistest.Client(t)
	ns := redistest.Namespace(t, rdb)
	ctx := context.Background()

	fresh := insertOutboxRow(t, db, 0)
	old := insertOutboxRow(t, db, time.Minute)

	// Redis unreachable: nothing is marked sent, nothing is lost.
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 50 * time.Millisecond})
	defer dead.Close()
	down := postgres.NewOutbox(db.DB, &tasks.Enqueuer{Client: asynq.NewClientFromRedisClient(dead), Namespace: ns})
	if n, err := down.Sweep(ctx, 5*time.Second, 100); err == nil || n != 0 {
		t.Fatalf("sweep with Redis down: n=%d err=%v", n, err)
	}
	var unsent int
	db.QueryRow(`SELECT count(*) FROM outbox WHERE sent_at IS NULL`).Scan(&unsent)
	if unsent != 2 {
		t.Fatalf("%d unsent rows after a failed sweep, want 2", unsent)
	}

	// Redis back: the old row is swept (the fresh one is within its grace,
	// left for the relay after commit).
	up := postgres.NewOutbox(db.DB, &tasks.Enqueuer{Client: asynq.NewClientFromRedisClient(rdb), Namespace: ns})
	if n, err := up.Sweep(ctx, 5*time.Second, 100); err != nil || n != 1 {
		t.Fatalf("sweep: n=%d err=%v", n, err)
	}
	insp := asynq.NewInspectorFromRedisClient(rdb)
	info, err := insp.GetTaskInfo(ns.Queue("notifications"), tasks.OutboxTaskID(old))
	if err != nil {
		t.Fatalf("swept task not in Redis: %v", err)
	}
	if id, err := tasks.DecodeOutbox(asynq.NewTask(info.Type, info.Payload), &map[string]string{}); err != nil || id != old {
		t.Fatalf("payload outbox id = %d, %v", id, err)
	}

	// Relay right after commit, and a duplicate enqueue of the same row, make
	// one task.
	if err := up.Relay(ctx, rowsByID(t, db, fresh)); err != nil {
		t.Fatal(err)
	}
	if err := up.Relay(ctx, rowsByID(t, db, fresh)); err != nil {
		t.Fatal(err)
	}
	q, err := insp.GetQueueInfo(ns.Queue("notifications"))
	if err != nil || q.Pending != 2 {
		t.Fatalf("queue = %+v, %v; want 2 pending tasks", q, err)
	}
	db.QueryRow(`SELECT count(*) FROM outbox WHERE sent_at IS NULL`).Scan(&unsent)
	if unsent != 0 {
		t.Fatalf("%d rows still unsent", unsent)
	}
	// A further sweep finds nothing.
	if n, err := up.Sweep(ctx, 0, 100); err != nil || n != 0 {
		t.Fatalf("second sweep: n=%d err=%v", n, err)
	}
}

func rowsByID(t *testing.T, db *pgtest.DB, id int64) []ledger.OutboxMessage {
	t.Helper()
	m := ledger.OutboxMessage{ID: id}
	var payload []byte
	if err := db.QueryRow(`SELECT task_type, queue, payload FROM outbox WHERE id = $1`, id).
		Scan(&m.TaskType, &m.Queue, &payload); err != nil {
		t.Fatal(err)
	}
	m.Payload = payload
	return []ledger.OutboxMessage{m}
}
