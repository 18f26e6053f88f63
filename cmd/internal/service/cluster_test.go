package service

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/lib/pq"
	"github.com/redis/go-redis/v9"

	"github.com/partnertrack/partnertrack/cmd/internal/config"
	"github.com/partnertrack/partnertrack/cmd/internal/faulttest"
	"github.com/partnertrack/partnertrack/cmd/internal/proc"
	"github.com/partnertrack/partnertrack/ingest/traffic"
	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

// TestTrafficShardsOnARedisCluster opens the backends as the binaries do
// on a 3-primary Redis Cluster with TRAFFIC_SHARDS=3: the click shards
// live on different primaries, batches go round robin over them, pending
// lookups find the clicks in any shard, and a worker serving "clicks"
// drains every shard into Postgres. With REDIS_WAIT_REPLICAS=1 batches
// are acknowledged through Redis while the replicas are in sync, and go
// to Postgres while they are paused.
func TestTrafficShardsOnARedisCluster(t *testing.T) {
	t.Parallel()
	cluster := faulttest.StartRedisCluster(t)
	db := pgtest.New(t)
	fx := db.MustFixture(t, "shard")
	ctx := context.Background()
	b := openOnCluster(t, db.URL, cluster.Addrs())
	if _, ok := b.Redis.(*redis.ClusterClient); !ok {
		t.Fatalf("backends hold a %T, want a cluster client", b.Redis)
	}

	// Each shard is a queue of its own, in the hash slot of {clicks-i}.
	primaries := map[string]bool{}
	for i := 0; i < 3; i++ {
		n, err := cluster.PrimaryFor(ctx, "asynq:{"+tasks.TrafficQueue(tasks.QueueClicks, i, 3)+"}:pending")
		if err != nil {
			t.Fatal(err)
		}
		primaries[n.Addr()] = true
	}
	if len(primaries) < 2 {
		t.Fatalf("the 3 click shards live on %d primaries, want at least 2", len(primaries))
	}

	// A second of Redis deadline per batch: a starved machine that misses
	// the edge's 50 ms would divert a batch and make the counts below
	// depend on timing. The deadline is a parameter, not what is tested.
	store := postgres.NewTrafficStore(b.DB)
	pipeline, pending, err := b.trafficPipeline(ctx, store, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	click := func() *ledger.Click {
		id := ledger.NewClickID(time.Now())
		at, _ := ledger.ClickTime(id)
		return &ledger.Click{ID: id, OccurredAt: at, ProgramID: fx.ProgramID, PartnerID: &fx.PartnerID, LinkID: &fx.LinkID}
	}
	var recorded []*ledger.Click
	record := func(p *traffic.Pipeline) *ledger.Click {
		t.Helper()
		c := click()
		if err := p.RecordClick(ctx, c); err != nil {
			t.Fatal(err)
		}
		recorded = append(recorded, c)
		return c
	}
	for i := 0; i < 6; i++ { // one at a time: a batch each
		record(pipeline)
	}
	insp := asynq.NewInspectorFromRedisClient(b.Redis)
	for i := 0; i < 3; i++ {
		q := tasks.TrafficQueue(tasks.QueueClicks, i, 3)
		if infos, err := insp.ListPendingTasks(q); err != nil || len(infos) != 2 {
			t.Fatalf("%s: %d tasks, %v; want 2 of the 6 batches", q, len(infos), err)
		}
	}
	if s := pipeline.Stats(); s.Batches.Load() != 6 || s.Diverted.Load() != 0 {
		t.Fatalf("stats: %d queued, %d diverted; want 6, 0", s.Batches.Load(), s.Diverted.Load())
	}
	// The edge's reader and the worker's (the processor's) both find every
	// click, whichever primary its shard is on.
	for _, r := range []ledger.PendingClicks{pending, b.PendingClicks()} {
		for _, c := range recorded {
			if got, err := r.PendingClick(ctx, c.ID); err != nil || got.ID != c.ID {
				t.Fatalf("pending click %s: %+v, %v", c.ID, got, err)
			}
		}
	}

	worker, err := b.Worker(WorkerOptions{Queues: "clicks", Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(worker.Shutdown)
	waitRows(t, db, recorded)

	// REDIS_WAIT_REPLICAS=1, replicas in sync: acknowledged through Redis.
	b.Config.Redis.WaitReplicas = 1
	waiting, _, err := b.trafficPipeline(ctx, store, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		record(waiting)
	}
	if s := waiting.Stats(); s.Batches.Load() != 3 || s.Diverted.Load() != 0 {
		t.Fatalf("WAIT 1, replicas in sync: %d queued, %d diverted; want 3, 0", s.Batches.Load(), s.Diverted.Load())
	}

	// Replicas paused: no replica acknowledges, so the batch goes to
	// Postgres, still acknowledged.
	replicas := clusterReplicas(t, cluster)
	for _, n := range replicas {
		if err := n.P.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			for _, n := range replicas {
				n.P.Signal(syscall.SIGCONT)
			}
		}
	}
	t.Cleanup(resume)
	paused := record(waiting)
	resume()
	if s := waiting.Stats(); s.Batches.Load() != 3 || s.Diverted.Load() != 1 {
		t.Fatalf("WAIT 1, replicas paused: %d queued, %d diverted; want 3, 1", s.Batches.Load(), s.Diverted.Load())
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM clicks WHERE click_id = $1`, paused.ID).Scan(&n); err != nil || n != 1 {
		t.Fatalf("diverted click: %d rows, %v", n, err)
	}
	// Replicas back in sync: once the breaker's probe passes, batches are
	// acknowledged through Redis again.
	if err := cluster.WaitHealthy(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := proc.WaitFor(30*time.Second, func() error {
		record(waiting)
		if q := waiting.Stats().Batches.Load(); q == 3 {
			return fmt.Errorf("no batch through Redis since the replicas resumed (breaker %s)", waiting.Breaker().State())
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	waitRows(t, db, recorded)
}

// waitRows waits until every recorded click is in Postgres.
func waitRows(t *testing.T, db *pgtest.DB, recorded []*ledger.Click) {
	t.Helper()
	ids := make([]string, len(recorded))
	for i, c := range recorded {
		ids[i] = c.ID
	}
	if err := proc.WaitFor(30*time.Second, func() error {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM clicks WHERE click_id = ANY($1)`, pq.Array(ids)).Scan(&n); err != nil {
			return err
		}
		if n != len(ids) {
			return fmt.Errorf("%d of %d clicks in Postgres", n, len(ids))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// clusterReplicas returns the cluster's replica nodes.
func clusterReplicas(t *testing.T, c *proc.RedisCluster) []*proc.RedisNode {
	t.Helper()
	var out []*proc.RedisNode
	for _, n := range c.Nodes {
		cl := redis.NewClient(&redis.Options{Addr: n.Addr()})
		info, err := cl.Info(context.Background(), "replication").Result()
		cl.Close()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(info, "role:slave") {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		t.Fatal("the cluster has no replica")
	}
	return out
}

// BenchmarkClickPipelineOnCluster records clicks through the edge's
// pipeline on a 3-primary cluster with TRAFFIC_SHARDS=3, 64 requests at
// once, without and with REDIS_WAIT_REPLICAS=1: the cost of waiting for
// a replica per batch (two round trips in a row, the second through the
// replica, instead of two at once), in throughput (ns/op) and in each
// request's wait (p50, p99). Batches that miss the deadline go to Postgres
// and are counted as diverted.
func BenchmarkClickPipelineOnCluster(bm *testing.B) {
	cluster := faulttest.StartRedisCluster(bm)
	db := pgtest.New(bm)
	fx := db.MustFixture(bm, "bench")
	ctx := context.Background()
	b := openOnCluster(bm, db.URL, cluster.Addrs())
	store := postgres.NewTrafficStore(b.DB)
	for _, wait := range []int{0, 1} {
		bm.Run(fmt.Sprintf("wait=%d", wait), func(bm *testing.B) {
			b.Config.Redis.WaitReplicas = wait
			p, _, err := b.trafficPipeline(ctx, store, 0)
			if err != nil {
				bm.Fatal(err)
			}
			var mu sync.Mutex
			var waits []time.Duration
			bm.SetParallelism(32) // 64 concurrent requests on two cores
			bm.ReportAllocs()
			bm.RunParallel(func(pb *testing.PB) {
				var mine []time.Duration
				defer func() { mu.Lock(); waits = append(waits, mine...); mu.Unlock() }()
				for pb.Next() {
					id := ledger.NewClickID(time.Now())
					at, _ := ledger.ClickTime(id)
					c := &ledger.Click{ID: id, OccurredAt: at, ProgramID: fx.ProgramID, PartnerID: &fx.PartnerID, LinkID: &fx.LinkID,
						PageURL: "https://shop.example/landing?aff=bench", IP: "203.0.113.7", UserAgent: "Mozilla/5.0"}
					start := time.Now()
					if err := p.RecordClick(ctx, c); err != nil {
						bm.Error(err)
						return
					}
					mine = append(mine, time.Since(start))
				}
			})
			slices.Sort(waits)
			if len(waits) > 0 {
				bm.ReportMetric(float64(waits[len(waits)/2].Microseconds()), "p50-µs")
				bm.ReportMetric(float64(waits[len(waits)*99/100].Microseconds()), "p99-µs")
			}
			bm.ReportMetric(float64(p.Stats().Batches.Load()), "batches")
			bm.ReportMetric(float64(p.Stats().Diverted.Load()), "diverted")
		})
	}
}

// openOnCluster opens the backends as the binaries do with
// REDIS_CLUSTER_ADDRS=addrs and TRAFFIC_SHARDS=3, closed at the end.
func openOnCluster(tb testing.TB, dbURL string, addrs []string) *Backends {
	tb.Helper()
	env := map[string]string{
		"DATABASE_URL":        dbURL,
		"REDIS_CLUSTER_ADDRS": strings.Join(addrs, ","),
		"TRAFFIC_SHARDS":      "3",
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		tb.Fatal(err)
	}
	b, err := Open(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { b.Close() })
	return b
}
