package workers_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/lib/pq"
	"github.com/redis/go-redis/v9"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/workers"
	"github.com/partnertrack/partnertrack/workers/redistest"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type trafficBundle struct {
	db        *pgtest.DB
	rdb       *redis.Client
	ns        tasks.Namespace
	store     *postgres.TrafficStore
	programID int64
	partnerID int64
}

func setupTraffic(t *testing.T) *trafficBundle {
	t.Helper()
	t.Parallel()
	db := pgtest.New(t)
	rdb := redistest.Client(t)
	fx := db.MustFixture(t, "pat")
	return &trafficBundle{db: db, rdb: rdb, ns: redistest.Namespace(t, rdb), store: postgres.NewTrafficStore(db.DB),
		programID: fx.ProgramID, partnerID: fx.PartnerID}
}

// enqueueBatch enqueues one click batch of n clicks the way the edge does
// and returns the clicks' ids.
func (b *trafficBundle) enqueueBatch(t *testing.T, n int) []string {
	t.Helper()
	ids := make([]string, n)
	wires := make([][]byte, n)
	for i := range ids {
		id := ledger.NewClickID(time.Now())
		at, _ := ledger.ClickTime(id)
		w, err := tasks.EncodeClick(&ledger.Click{ID: id, OccurredAt: at, ProgramID: b.programID, PartnerID: &b.partnerID, IP: "203.0.113.1"})
		if err != nil {
			t.Fatal(err)
		}
		ids[i], wires[i] = id, w
	}
	_, err := asynq.NewClientFromRedisClient(b.rdb).Enqueue(tasks.NewClickBatchTask(wires), asynq.Queue(b.ns.Queue(tasks.QueueClicks)))
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func (b *trafficBundle) rowsOf(t *testing.T, ids []string) (rows, distinct int) {
	t.Helper()
	if err := b.db.QueryRow(`SELECT count(*), count(DISTINCT click_id) FROM clicks WHERE click_id = ANY($1)`,
		pq.Array(ids)).Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	return rows, distinct
}

// server runs an asynq server on the bundle's clicks and visits queues.
func (b *trafficBundle) server(t *testing.T, store ledger.TrafficStore, shutdownTimeout time.Duration) *asynq.Server {
	t.Helper()
	srv := asynq.NewServerFromRedisClient(b.rdb, asynq.Config{
		Concurrency:     2,
		Queues:          map[string]int{b.ns.Queue(tasks.QueueClicks): 1, b.ns.Queue(tasks.QueueVisits): 1},
		Logger:          quietAsynq{},
		ShutdownTimeout: shutdownTimeout,
		RetryDelayFunc:  func(int, error, *asynq.Task) time.Duration { return 10 * time.Millisecond },
	})
	if err := srv.Start(workers.NewMux(workers.Handlers{Traffic: store, Redis: b.rdb, Namespace: b.ns, Logger: quiet})); err != nil {
		t.Fatal(err)
	}
	return srv
}

// waitUntil polls cond; it fails after a generous bound instead of
// asserting on timing.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never happened: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestClickBatchLandsOnce(t *testing.T) {
	b := setupTraffic(t)
	ids := b.enqueueBatch(t, 300)
	srv := b.server(t, b.store, time.Second)
	defer srv.Shutdown()
	waitUntil(t, "the batch is in Postgres", func() bool { rows, _ := b.rowsOf(t, ids); return rows == len(ids) })

	// A retry of the same task (the worker died after its commit, before
	// asynq recorded success) writes nothing more.
	h := &workers.ClickBatchHandler{Store: b.store, Logger: quiet}
	again := b.enqueueTaskOf(t, ids)
	for i := 0; i < 2; i++ {
		if err := h.ProcessTask(context.Background(), again); err != nil {
			t.Fatal(err)
		}
	}
	if rows, distinct := b.rowsOf(t, ids); rows != len(ids) || distinct != len(ids) {
		t.Fatalf("%d rows (%d distinct) after retries, want %d", rows, distinct, len(ids))
	}
}

// TestStoredClicksLeaveRedis: once a batch is in Postgres the worker
// deletes its clicks' pending records, and only theirs: a record of a
// click still queued in the same second stays for the leads that need it.
func TestStoredClicksLeaveRedis(t *testing.T) {
	b := setupTraffic(t)
	ctx := context.Background()
	ids := b.enqueueBatch(t, 20)
	queuedID := ledger.NewClickID(time.Now())
	// The records as the edge writes them, with a click of a batch not
	// queued here beside them.
	byKey := map[string][]any{}
	for _, id := range append([]string{queuedID}, ids...) {
		at, _ := ledger.ClickTime(id)
		key := b.ns.PendingClicksKey(tasks.QueueClicks, at)
		byKey[key] = append(byKey[key], id, `{"id":"`+id+`"}`)
	}
	queuedAt, _ := ledger.ClickTime(queuedID)
	queuedKey := b.ns.PendingClicksKey(tasks.QueueClicks, queuedAt)
	for key, fields := range byKey {
		if err := b.rdb.HSet(ctx, key, fields...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	left := func() int {
		n := 0
		for _, id := range ids {
			at, _ := ledger.ClickTime(id)
			if ok, _ := b.rdb.HExists(ctx, b.ns.PendingClicksKey(tasks.QueueClicks, at), id).Result(); ok {
				n++
			}
		}
		return n
	}
	if n := left(); n != len(ids) {
		t.Fatalf("%d of %d records written", n, len(ids))
	}

	srv := b.server(t, b.store, time.Second)
	defer srv.Shutdown()
	waitUntil(t, "the batch's records are deleted", func() bool { return left() == 0 })
	if rows, _ := b.rowsOf(t, ids); rows != len(ids) {
		t.Fatalf("records deleted with %d of %d clicks in Postgres", rows, len(ids))
	}
	if ok, err := b.rdb.HExists(ctx, queuedKey, queuedID).Result(); err != nil || !ok {
		t.Fatalf("the record of a click still queued was deleted too (%v)", err)
	}
}

// enqueueTaskOf rebuilds a batch task naming the stored clicks.
func (b *trafficBundle) enqueueTaskOf(t *testing.T, ids []string) *asynq.Task {
	t.Helper()
	wires := make([][]byte, len(ids))
	for i, id := range ids {
		at, _ := ledger.ClickTime(id)
		w, err := tasks.EncodeClick(&ledger.Click{ID: id, OccurredAt: at, ProgramID: b.programID, PartnerID: &b.partnerID})
		if err != nil {
			t.Fatal(err)
		}
		wires[i] = w
	}
	return tasks.NewClickBatchTask(wires)
}

// stallingStore writes its first batch, then stalls until the worker is
// stopped, as a worker killed between its commit and its acknowledgement.
type stallingStore struct {
	*postgres.TrafficStore
	calls atomic.Int64
}

func (s *stallingStore) WriteClicks(ctx context.Context, clicks []ledger.Click) (int, error) {
	n, err := s.TrafficStore.WriteClicks(ctx, clicks)
	if s.calls.Add(1) == 1 {
		<-ctx.Done()
		return 0, ctx.Err()
	}
	return n, err
}

func TestKilledWorkersBatchIsRedoneWithoutDuplicates(t *testing.T) {
	b := setupTraffic(t)
	ids := b.enqueueBatch(t, 200)
	stalling := &stallingStore{TrafficStore: b.store}
	first := b.server(t, stalling, 200*time.Millisecond)
	waitUntil(t, "the first worker wrote the batch", func() bool { rows, _ := b.rowsOf(t, ids); return rows == len(ids) })
	// Stopped mid-task: asynq puts the unacknowledged task back.
	first.Shutdown()
	insp := asynq.NewInspectorFromRedisClient(b.rdb)
	info, err := insp.GetQueueInfo(b.ns.Queue(tasks.QueueClicks))
	if err != nil || info.Pending+info.Retry != 1 {
		t.Fatalf("queue after the stop: %+v, %v; want the batch back", info, err)
	}

	second := b.server(t, stalling, time.Second)
	defer second.Shutdown()
	waitUntil(t, "the batch was redone", func() bool { return stalling.calls.Load() >= 2 })
	waitUntil(t, "the queue is empty", func() bool {
		info, err := insp.GetQueueInfo(b.ns.Queue(tasks.QueueClicks))
		return err == nil && info.Size == 0
	})
	if rows, distinct := b.rowsOf(t, ids); rows != len(ids) || distinct != len(ids) {
		t.Fatalf("%d rows (%d distinct), want %d once each", rows, distinct, len(ids))
	}
}

func TestFailedBatchWriteIsRetried(t *testing.T) {
	b := setupTraffic(t)
	ids := b.enqueueBatch(t, 50)
	// The first attempt fails before it commits anything (its context is
	// gone, as when Postgres drops the connection mid-write)...
	h := &workers.ClickBatchHandler{Store: b.store, Logger: quiet}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h.ProcessTask(ctx, b.enqueueTaskOf(t, ids)); err == nil {
		t.Fatal("a write with a dead context succeeded")
	}
	if rows, _ := b.rowsOf(t, ids); rows != 0 {
		t.Fatalf("a failed attempt left %d rows", rows)
	}
	// ...and the queued task, processed by a worker, stores all of it.
	srv := b.server(t, b.store, time.Second)
	defer srv.Shutdown()
	waitUntil(t, "the batch is in Postgres", func() bool { rows, _ := b.rowsOf(t, ids); return rows == len(ids) })
}

func TestUndecodableBatchIsNotRetried(t *testing.T) {
	t.Parallel()
	h := &workers.ClickBatchHandler{Logger: quiet}
	err := h.ProcessTask(context.Background(), asynq.NewTask(tasks.TypeClickBatch, []byte(`{"not":"an array"}`)))
	if !errors.Is(err, asynq.SkipRetry) {
		t.Fatalf("err = %v, want SkipRetry", err)
	}
	v := &workers.VisitBatchHandler{Logger: quiet}
	if err := v.ProcessTask(context.Background(), asynq.NewTask(tasks.TypeVisitBatch, []byte(`[{"id":"x"}]`))); !errors.Is(err, asynq.SkipRetry) {
		t.Fatalf("visit err = %v, want SkipRetry", err)
	}
}

func TestVisitBatchLands(t *testing.T) {
	b := setupTraffic(t)
	id := ledger.NewClickID(time.Now())
	at, _ := ledger.ClickTime(id)
	w, _ := tasks.EncodeVisit(&ledger.Visit{ID: id, OccurredAt: at, ProgramID: b.programID, PageURL: "https://p.example/"})
	if _, err := asynq.NewClientFromRedisClient(b.rdb).Enqueue(tasks.NewVisitBatchTask([][]byte{w}), asynq.Queue(b.ns.Queue(tasks.QueueVisits))); err != nil {
		t.Fatal(err)
	}
	srv := b.server(t, b.store, time.Second)
	defer srv.Shutdown()
	waitUntil(t, "the visit is in Postgres", func() bool {
		var n int
		b.db.QueryRow(`SELECT count(*) FROM visits WHERE visit_id = $1`, id).Scan(&n)
		return n == 1
	})
}

type quietAsynq struct{}

func (quietAsynq) Debug(...any) {}
func (quietAsynq) Info(...any)  {}
func (quietAsynq) Warn(...any)  {}
func (quietAsynq) Error(...any) {}
func (quietAsynq) Fatal(...any) {}
