package traffic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/groupcommit"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/workers/redistest"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

type testBundle struct {
	db        *pgtest.DB
	rdb       *redis.Client
	ns        tasks.Namespace
	store     *postgres.TrafficStore
	programID int64
	partnerID int64
	linkID    int64
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	t.Parallel()
	db := pgtest.New(t)
	rdb := redistest.Client(t)
	fx := db.MustFixture(t, "pat")
	return &testBundle{db: db, rdb: rdb, ns: redistest.Namespace(t, rdb), store: postgres.NewTrafficStore(db.DB),
		programID: fx.ProgramID, partnerID: fx.PartnerID, linkID: fx.LinkID}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// pipeline returns a pipeline over the bundle's Redis (or over rdb).
func (b *testBundle) pipeline(rdb *redis.Client, store ledger.TrafficStore) *Pipeline {
	if rdb == nil {
		rdb = b.rdb
	}
	return New(Config{
		Redis: rdb, Queue: asynq.NewClientFromRedisClient(rdb), Namespace: b.ns,
		Breaker: tasks.NewRedisBreaker("test", nil), Store: store, Logger: quiet,
		RedisTimeout: 2 * time.Second,
	})
}

func (b *testBundle) click(i int) *ledger.Click {
	id := ledger.NewClickID(time.Now())
	at, _ := ledger.ClickTime(id)
	return &ledger.Click{ID: id, OccurredAt: at, ProgramID: b.programID, PartnerID: &b.partnerID, LinkID: &b.linkID,
		SessionID: fmt.Sprintf("sess_%d", i), IP: "203.0.113.7", DeviceType: "mobile"}
}

// deadRedis is a client of a port where nothing listens.
func deadRedis(t *testing.T) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1, DialTimeout: 200 * time.Millisecond, ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	return c
}

// queuedClicks returns the clicks of every pending task of the clicks
// queue, batch by batch.
func (b *testBundle) queuedClicks(t *testing.T) [][]ledger.Click {
	return b.queuedIn(t, tasks.QueueClicks)
}

// queuedIn returns the clicks of every pending task of a click queue (or
// shard), batch by batch.
func (b *testBundle) queuedIn(t *testing.T, queue string) [][]ledger.Click {
	t.Helper()
	insp := asynq.NewInspectorFromRedisClient(b.rdb)
	infos, err := insp.ListPendingTasks(b.ns.Queue(queue), asynq.PageSize(1000))
	if errors.Is(err, asynq.ErrQueueNotFound) {
		return nil
	} else if err != nil {
		t.Fatal(err)
	}
	var out [][]ledger.Click
	for _, ti := range infos {
		clicks, err := tasks.DecodeClickBatch(asynq.NewTask(ti.Type, ti.Payload))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, clicks)
	}
	return out
}

func (b *testBundle) rows(t *testing.T) int {
	t.Helper()
	var n int
	if err := b.db.QueryRow(`SELECT count(*) FROM clicks`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// hold makes the pipeline's first click flush wait until release is
// closed, and reports when that flush has started.
func hold(p *Pipeline) (started <-chan struct{}, release chan struct{}) {
	s, r := make(chan struct{}), make(chan struct{})
	var once sync.Once
	p.clicks = groupcommit.New(p.cfg.MaxBatch, p.cfg.MaxInflight, func(batch []queued[ledger.Click]) error {
		first := false
		once.Do(func() { first = true })
		if first {
			close(s)
			<-r
		}
		return p.flushClicks(batch)
	})
	return s, r
}

// waitWaiting waits until n clicks wait behind the held flush, and fails
// the test after a generous bound rather than hang.
func waitWaiting(t *testing.T, p *Pipeline, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); p.clicks.Waiting() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d clicks wait behind the held flush after 30 s, want %d", p.clicks.Waiting(), n)
		}
	}
}

func TestConcurrentClicksShareOneTask(t *testing.T) {
	b := setup(t)
	p := b.pipeline(nil, b.store)
	started, release := hold(p)
	ctx := context.Background()

	first := b.click(0)
	errs := make(chan error, 101)
	go func() { errs <- p.RecordClick(ctx, first) }()
	<-started
	clicks := make([]*ledger.Click, 100)
	for i := range clicks {
		clicks[i] = b.click(i + 1)
		go func() { errs <- p.RecordClick(ctx, clicks[i]) }()
	}
	waitWaiting(t, p, 100)
	close(release)
	for i := 0; i < 101; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	batches := b.queuedClicks(t)
	sizes := map[int]bool{}
	for _, batch := range batches {
		sizes[len(batch)] = true
	}
	if len(batches) != 2 || !sizes[1] || !sizes[100] {
		t.Fatalf("%d tasks, sizes %v; want one task of the first click and one of the other 100", len(batches), sizes)
	}
	if got := p.Stats().Batches.Load(); got != 2 {
		t.Fatalf("%d batches written to Redis", got)
	}
	// Every acknowledged click has its record, readable as a pending click.
	pending := &Pending{Redis: b.rdb, Namespace: b.ns}
	for _, c := range append(clicks, first) {
		got, err := pending.PendingClick(ctx, c.ID)
		if err != nil {
			t.Fatalf("pending click %s: %v", c.ID, err)
		}
		if got.ProgramID != b.programID || *got.PartnerID != b.partnerID || got.SessionID != c.SessionID || !got.OccurredAt.Equal(c.OccurredAt) {
			t.Fatalf("pending click = %+v, want %+v", got, c)
		}
	}
	// One shard: the records are in the hash of the plain clicks queue.
	ttl := b.rdb.TTL(ctx, b.ns.PendingClicksKey(tasks.QueueClicks, first.OccurredAt)).Val()
	if ttl < 23*time.Hour || ttl > 24*time.Hour {
		t.Fatalf("record TTL %v, want about 24 h", ttl)
	}
	if b.rows(t) != 0 {
		t.Fatal("clicks reached Postgres from the edge while Redis was up")
	}
}

func TestPendingClickNotFound(t *testing.T) {
	b := setup(t)
	for _, shards := range []int{1, 3} {
		pending := &Pending{Redis: b.rdb, Namespace: b.ns, Shards: shards}
		for _, id := range []string{ledger.NewClickID(time.Now()), "user_42", ""} {
			if _, err := pending.PendingClick(context.Background(), id); ledger.ErrorCode(err) != ledger.ENotFound {
				t.Fatalf("%d shards: PendingClick(%q) = %v, want not found", shards, id, err)
			}
		}
		dead := &Pending{Redis: deadRedis(t), Namespace: b.ns, Shards: shards}
		if _, err := dead.PendingClick(context.Background(), ledger.NewClickID(time.Now())); err == nil ||
			ledger.ErrorCode(err) == ledger.ENotFound {
			t.Fatalf("%d shards: Redis down is not 'not found': %v", shards, err)
		}
	}
}

// forgetShards removes the namespace's shard queues from asynq's set of
// queues when the test ends (redistest deletes their keys, and the
// unsharded queues' names).
func forgetShards(t *testing.T, rdb *redis.Client, ns tasks.Namespace, shards int) {
	t.Cleanup(func() {
		for _, q := range []string{tasks.QueueClicks, tasks.QueueVisits} {
			for i := 0; i < shards; i++ {
				rdb.SRem(context.Background(), "asynq:queues", ns.Queue(tasks.TrafficQueue(q, i, shards)))
			}
		}
	})
}

// With three shards, batches go round robin to clicks-0, clicks-1 and
// clicks-2 (and visits to visits-0 …), each click's record sits in its
// shard's hash, and a pending lookup finds it in whichever shard it is.
func TestShardsSpreadBatchesRoundRobin(t *testing.T) {
	b := setup(t)
	forgetShards(t, b.rdb, b.ns, 3)
	p := New(Config{Redis: b.rdb, Queue: asynq.NewClientFromRedisClient(b.rdb), Namespace: b.ns, Shards: 3,
		Breaker: tasks.NewRedisBreaker("test", nil), Store: b.store, Logger: quiet, RedisTimeout: 2 * time.Second})
	ctx := context.Background()
	clicks := make([]*ledger.Click, 6)
	for i := range clicks { // one at a time: a batch each
		clicks[i] = b.click(i)
		if err := p.RecordClick(ctx, clicks[i]); err != nil {
			t.Fatal(err)
		}
	}
	if q := b.queuedIn(t, tasks.QueueClicks); len(q) != 0 {
		t.Fatalf("%d tasks on the plain clicks queue with 3 shards", len(q))
	}
	for i := 0; i < 3; i++ {
		shard := tasks.TrafficQueue(tasks.QueueClicks, i, 3)
		q := b.queuedIn(t, shard)
		if len(q) != 2 {
			t.Fatalf("%s holds %d tasks, want 2 of the 6 batches", shard, len(q))
		}
		for _, batch := range q {
			c := batch[0]
			if n, err := b.rdb.HExists(ctx, b.ns.PendingClicksKey(shard, c.OccurredAt), c.ID).Result(); err != nil || !n {
				t.Fatalf("record of %s (queued on %s) not in its shard's hash: %v, %v", c.ID, shard, n, err)
			}
		}
	}
	sharded := &Pending{Redis: b.rdb, Namespace: b.ns, Shards: 3}
	for _, c := range clicks {
		if got, err := sharded.PendingClick(ctx, c.ID); err != nil || got.SessionID != c.SessionID {
			t.Fatalf("pending click %s over 3 shards: %+v, %v", c.ID, got, err)
		}
	}
	// The plain queue's hash holds none of them.
	if _, err := (&Pending{Redis: b.rdb, Namespace: b.ns}).PendingClick(ctx, clicks[0].ID); ledger.ErrorCode(err) != ledger.ENotFound {
		t.Fatalf("a sharded click found in the unsharded hash: %v", err)
	}
	insp := asynq.NewInspectorFromRedisClient(b.rdb)
	for i := 0; i < 3; i++ {
		id := ledger.NewClickID(time.Now())
		at, _ := ledger.ClickTime(id)
		if err := p.RecordVisit(ctx, &ledger.Visit{ID: id, OccurredAt: at, ProgramID: b.programID}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 3; i++ {
		shard := b.ns.Queue(tasks.TrafficQueue(tasks.QueueVisits, i, 3))
		if infos, err := insp.ListPendingTasks(shard); err != nil || len(infos) != 1 {
			t.Fatalf("%s: %d tasks, %v; want 1", shard, len(infos), err)
		}
	}
	if s := p.Stats(); s.Batches.Load() != 9 || s.Diverted.Load() != 0 {
		t.Fatalf("stats: %d queued, %d diverted; want 9, 0", s.Batches.Load(), s.Diverted.Load())
	}
}

// After TRAFFIC_SHARDS goes from 1 to 3, a click queued before, on the
// plain clicks queue, is still found.
func TestShardedPendingFindsUnshardedClick(t *testing.T) {
	b := setup(t)
	c := b.click(0)
	if err := b.pipeline(nil, b.store).RecordClick(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	got, err := (&Pending{Redis: b.rdb, Namespace: b.ns, Shards: 3}).PendingClick(context.Background(), c.ID)
	if err != nil || got.ID != c.ID {
		t.Fatalf("pending click: %+v, %v", got, err)
	}
}

// replicas returns how many replicas the shared Redis has.
func replicas(t *testing.T, rdb *redis.Client) int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "replication").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_slaves:"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("INFO replication: %q", line)
			}
			return n
		}
	}
	t.Fatalf("INFO replication without connected_slaves: %q", info)
	return 0
}

// A batch that fewer replicas than REDIS_WAIT_REPLICAS acknowledge is not
// acknowledged through Redis: it is written to Postgres (its task, queued
// first, finds the rows there and skips them).
func TestWaitForMissingReplicasDivertsToPostgres(t *testing.T) {
	b := setup(t)
	want := replicas(t, b.rdb) + 1 // more than the shared Redis has
	newPipeline := func() *Pipeline {
		return New(Config{Redis: b.rdb, Queue: asynq.NewClientFromRedisClient(b.rdb), Namespace: b.ns,
			WaitReplicas: want, Store: b.store, Logger: quiet})
	}
	p := newPipeline()
	if p.cfg.RedisTimeout != DefaultWaitTimeout {
		t.Fatalf("Redis deadline %v while waiting for replicas, want %v", p.cfg.RedisTimeout, DefaultWaitTimeout)
	}
	ctx := context.Background()
	c := b.click(0)
	if err := p.RecordClick(ctx, c); err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); s.Batches.Load() != 0 || s.Diverted.Load() != 1 || b.rows(t) != 1 {
		t.Fatalf("stats: %d queued, %d diverted, %d rows; want 0, 1, 1", s.Batches.Load(), s.Diverted.Load(), b.rows(t))
	}
	// The records were written before the WAIT, on the same connection.
	if got, err := (&Pending{Redis: b.rdb, Namespace: b.ns}).PendingClick(ctx, c.ID); err != nil || got.ID != c.ID {
		t.Fatalf("pending click: %+v, %v", got, err)
	}
	// Visits wait on a marker in their queue's slot.
	v := b.visit()
	p = newPipeline()
	if err := p.RecordVisit(ctx, v); err != nil {
		t.Fatal(err)
	}
	var visits int
	if err := b.db.QueryRow(`SELECT count(*) FROM visits WHERE visit_id = $1`, v.ID).Scan(&visits); err != nil || visits != 1 {
		t.Fatalf("%d visit rows, %v; want the diverted visit", visits, err)
	}
	if id, err := b.rdb.Get(ctx, b.ns.ReplicatedKey(tasks.QueueVisits)).Result(); err != nil || id != v.ID {
		t.Fatalf("marker = %q, %v; want the batch's first visit id", id, err)
	}
	if d := p.Stats().Diverted.Load(); d != 1 {
		t.Fatalf("%d visit batches diverted, want 1", d)
	}
}

func (b *testBundle) visit() *ledger.Visit {
	id := ledger.NewClickID(time.Now())
	at, _ := ledger.ClickTime(id)
	return &ledger.Visit{ID: id, OccurredAt: at, ProgramID: b.programID, PageURL: "https://p.example/"}
}

func TestRedisDownDivertsWholeBatchToPostgres(t *testing.T) {
	b := setup(t)
	p := b.pipeline(deadRedis(t), b.store)
	started, release := hold(p)
	ctx := context.Background()
	errs := make(chan error, 21)
	go func() { errs <- p.RecordClick(ctx, b.click(0)) }()
	<-started
	for i := 1; i <= 20; i++ {
		go func() { errs <- p.RecordClick(ctx, b.click(i)) }()
	}
	waitWaiting(t, p, 20)
	close(release)
	for i := 0; i < 21; i++ {
		if err := <-errs; err != nil {
			t.Fatalf("a click failed although Postgres took the batch: %v", err)
		}
	}
	// Every acknowledged click is in Postgres, written by the edge.
	if n := b.rows(t); n != 21 {
		t.Fatalf("%d rows, want 21", n)
	}
	if d := p.Stats().Diverted.Load(); d != 2 {
		t.Fatalf("%d batches diverted, want 2", d)
	}
}

func TestBreakerOpensAndSkipsRedis(t *testing.T) {
	b := setup(t)
	p := b.pipeline(deadRedis(t), b.store)
	ctx := context.Background()
	for i := 0; i < 5; i++ { // five consecutive Redis failures open it
		if err := p.RecordClick(ctx, b.click(i)); err != nil {
			t.Fatal(err)
		}
	}
	if st := p.cfg.Breaker.State(); st != gobreaker.StateOpen {
		t.Fatalf("breaker %s after five failures", st)
	}
	if err := p.Ready(ctx); err == nil {
		t.Fatal("Ready reports no open breaker")
	}
	// While open, batches go straight to Postgres.
	before := p.cfg.Breaker.Counts()
	if err := p.RecordClick(ctx, b.click(5)); err != nil {
		t.Fatal(err)
	}
	if after := p.cfg.Breaker.Counts(); after.Requests != before.Requests {
		t.Fatal("Redis was tried while the breaker was open")
	}
	if n := b.rows(t); n != 6 {
		t.Fatalf("%d rows, want 6", n)
	}
}

// closedStore is a traffic store over a closed pool: Postgres refuses
// every write at once, as it does while it is down.
func (b *testBundle) closedStore(t *testing.T) *postgres.TrafficStore {
	t.Helper()
	db, err := postgres.Open(context.Background(), b.db.URL, postgres.PoolConfig{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	return postgres.NewTrafficStore(db)
}

func TestBothDownFailsTheBatchAndAcknowledgesNothing(t *testing.T) {
	b := setup(t)
	closed := b.closedStore(t)
	p := b.pipeline(deadRedis(t), closed)
	started, release := hold(p)
	ctx := context.Background()
	errs := make(chan error, 11)
	go func() { errs <- p.RecordClick(ctx, b.click(0)) }()
	<-started
	for i := 1; i <= 10; i++ {
		go func() { errs <- p.RecordClick(ctx, b.click(i)) }()
	}
	waitWaiting(t, p, 10)
	close(release)
	for i := 0; i < 11; i++ {
		if err := <-errs; err == nil {
			t.Fatal("a click was acknowledged that neither Redis nor Postgres stored")
		}
	}
	if n := b.rows(t); n != 0 {
		t.Fatalf("%d rows", n)
	}
	if f := p.Stats().Failed.Load(); f != 2 {
		t.Fatalf("%d batches failed, want 2", f)
	}
}

func TestVisitsQueuedAsOneTaskPerBatch(t *testing.T) {
	b := setup(t)
	p := b.pipeline(nil, b.store)
	id := ledger.NewClickID(time.Now())
	at, _ := ledger.ClickTime(id)
	v := &ledger.Visit{ID: id, OccurredAt: at, ProgramID: b.programID, PageURL: "https://p.example/"}
	if err := p.RecordVisit(context.Background(), v); err != nil {
		t.Fatal(err)
	}
	infos, err := asynq.NewInspectorFromRedisClient(b.rdb).ListPendingTasks(b.ns.Queue(tasks.QueueVisits))
	if err != nil || len(infos) != 1 {
		t.Fatalf("visit tasks: %v, %v", infos, err)
	}
	visits, err := tasks.DecodeVisitBatch(asynq.NewTask(infos[0].Type, infos[0].Payload))
	if err != nil || len(visits) != 1 || visits[0].ID != v.ID || visits[0].PageURL != v.PageURL || !visits[0].OccurredAt.Equal(at) {
		t.Fatalf("visits %+v, %v", visits, err)
	}
}

func BenchmarkClickPipeline(b *testing.B) {
	rdb := redistest.Client(b)
	ns := redistest.Namespace(b, rdb)
	p := New(Config{Redis: rdb, Queue: asynq.NewClientFromRedisClient(rdb), Namespace: ns,
		Breaker: tasks.NewRedisBreaker("bench", nil), Logger: quiet, PendingTTL: time.Minute})
	partner, link := int64(1), int64(1)
	b.SetParallelism(32) // 64 concurrent requests on two cores
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := ledger.NewClickID(time.Now())
			at, _ := ledger.ClickTime(id)
			c := &ledger.Click{ID: id, OccurredAt: at, ProgramID: 1, PartnerID: &partner, LinkID: &link,
				PageURL: "https://shop.example/landing?aff=pat", IP: "203.0.113.7", UserAgent: "Mozilla/5.0", DeviceType: "desktop"}
			if err := p.RecordClick(context.Background(), c); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(p.Stats().Batches.Load()), "batches")
}

// hungRedis is a client of a server that accepts connections and never
// answers: Redis stopped (SIGSTOP) or a network that drops packets.
func hungRedis(t *testing.T) *redis.Client {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go io.Copy(io.Discard, c) // read everything, answer nothing
		}
	}()
	c := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() {
		c.Close()
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return c
}

// A pipeline with its defaults (as the edge runs it) opens its breaker on
// the first batch Redis fails, so that the next clicks of an outage go
// straight to Postgres instead of each waiting out a Redis deadline.
func TestHungRedisOpensBreakerOnFirstBatch(t *testing.T) {
	b := setup(t)
	hung := hungRedis(t)
	p := New(Config{Redis: hung, Queue: asynq.NewClientFromRedisClient(hung), Namespace: b.ns, Store: b.store, Logger: quiet})
	ctx := context.Background()
	if err := p.RecordClick(ctx, b.click(0)); err != nil {
		t.Fatal(err)
	}
	if err := p.Ready(ctx); err == nil {
		t.Fatal("breaker not open after a failed batch")
	}
	if d := p.Stats().Diverted.Load(); d != 1 {
		t.Fatalf("%d batches diverted, want 1", d)
	}
	if n := b.rows(t); n != 1 {
		t.Fatalf("%d rows, want 1", n)
	}
	// The next click of the outage does not wait on Redis: it goes
	// straight to Postgres through the open breaker.
	before := p.Breaker().Counts()
	if err := p.RecordClick(ctx, b.click(1)); err != nil {
		t.Fatal(err)
	}
	if st := p.Breaker().State(); st != gobreaker.StateOpen {
		t.Fatalf("breaker %s, want open", st)
	}
	if after := p.Breaker().Counts(); after.Requests != before.Requests {
		t.Fatal("Redis was tried while the breaker was open")
	}
	if n := b.rows(t); n != 2 || p.Stats().Diverted.Load() != 2 || p.Stats().Batches.Load() != 0 {
		t.Fatalf("%d rows, stats %d diverted %d queued; want 2, 2, 0", n, p.Stats().Diverted.Load(), p.Stats().Batches.Load())
	}
	// While the breaker is open, a lead or sale naming a click still in
	// the queue fails at once (its client retries) instead of waiting on
	// Redis inside its transaction.
	pending := &Pending{Redis: hung, Namespace: b.ns, Breaker: p.Breaker()}
	if _, err := pending.PendingClick(ctx, ledger.NewClickID(time.Now())); !errors.Is(err, ErrRedisAway) {
		t.Fatalf("pending click while the breaker is open: %v, want ErrRedisAway", err)
	}
}

// Once Redis answers again, the first probe after DefaultProbeEvery
// closes the breaker and batches are queued in Redis again.
func TestBreakerProbesAndClosesWhenRedisReturns(t *testing.T) {
	b := setup(t)
	p := New(Config{Redis: b.rdb, Queue: asynq.NewClientFromRedisClient(b.rdb), Namespace: b.ns, Store: b.store, Logger: quiet})
	// Open it as a failed batch would.
	p.Breaker().Execute(func() (struct{}, error) { return struct{}{}, errors.New("redis down") })
	if st := p.Breaker().State(); st != gobreaker.StateOpen {
		t.Fatalf("breaker %s after one failure, want open", st)
	}
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; p.Stats().Batches.Load() == 0; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("no batch reached Redis: breaker %s", p.Breaker().State())
		}
		if err := p.RecordClick(context.Background(), b.click(i)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := p.Breaker().State(); st != gobreaker.StateClosed {
		t.Fatalf("breaker %s after a batch reached Redis, want closed", st)
	}
}

// A batch diverted by the open breaker while Postgres is also away is not
// lost when Redis answers: the breaker opened on one slow batch, not on a
// dead Redis, so the batch gets one more Redis attempt before its
// requests fail.
func TestOpenBreakerAndPostgresDownStillQueuesInRedis(t *testing.T) {
	b := setup(t)
	closed := b.closedStore(t)
	p := New(Config{Redis: b.rdb, Queue: asynq.NewClientFromRedisClient(b.rdb), Namespace: b.ns,
		Store: closed, Logger: quiet})
	// Open it as one batch that missed its deadline would.
	p.Breaker().Execute(func() (struct{}, error) { return struct{}{}, errors.New("deadline exceeded") })
	if err := p.RecordClick(context.Background(), b.click(0)); err != nil {
		t.Fatalf("click refused with Redis up: %v", err)
	}
	if q := b.queuedClicks(t); len(q) != 1 || len(q[0]) != 1 {
		t.Fatalf("queued %v, want one task of one click", q)
	}
	if s := p.Stats(); s.Batches.Load() != 1 || s.Failed.Load() != 0 {
		t.Fatalf("stats: %d queued, %d failed; want 1, 0", s.Batches.Load(), s.Failed.Load())
	}
}

// A first Redis attempt that timed out on the client may still have
// queued the batch's task; the last try then meets the task's id. That
// conflict means the batch is queued, which is success, not a 500.
func TestLastTryFindsTheBatchAlreadyQueued(t *testing.T) {
	b := setup(t)
	closed := b.closedStore(t)
	p := New(Config{Redis: b.rdb, Queue: asynq.NewClientFromRedisClient(b.rdb), Namespace: b.ns,
		Store: closed, Logger: quiet})
	c := b.click(0)
	// The task the timed-out attempt queued, under the batch's task id.
	wire, err := tasks.EncodeClick(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.enqueue(context.Background(), tasks.NewClickBatchTask([][]byte{wire}), tasks.QueueClicks, c.ID); err != nil {
		t.Fatal(err)
	}
	p.Breaker().Execute(func() (struct{}, error) { return struct{}{}, errors.New("deadline exceeded") })
	if err := p.RecordClick(context.Background(), c); err != nil {
		t.Fatalf("click refused although its batch is queued: %v", err)
	}
	if q := b.queuedClicks(t); len(q) != 1 || len(q[0]) != 1 {
		t.Fatalf("queued %v, want the one task of one click", q)
	}
}
