package reliability

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/lib/pq"
	"github.com/redis/go-redis/v9"

	"github.com/partnertrack/partnertrack/cmd/internal/proc"
)

// TestFailover: under click and sale load from concurrent clients, the
// Redis primary that holds a click shard is killed (SIGKILL) and its
// replica promoted, in a Redis Cluster and under Sentinel, with
// REDIS_WAIT_REPLICAS=0 and 1. The load goes on a while after the
// promotion, then a worker drains the queues, and every click and sale
// the edge answered 200 is looked up in Postgres by its id. What is
// acceptable (docs/reliability.md, "Redis failover"): with the setting
// on, no acknowledged click or sale lost; with it off, the loss is
// measured and reported with the clicks acknowledged in the last 100 ms
// before the kill (the window at risk), not asserted.
func TestFailover(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"cluster", "sentinel"} {
		for _, wait := range []int{0, 1} {
			t.Run(fmt.Sprintf("%s/wait-%d", mode, wait), func(t *testing.T) {
				t.Parallel()
				failover(t, mode, wait)
			})
		}
	}
}

// ack is a click the edge answered 200, when, and how long it took.
type ack struct {
	id   string
	at   time.Time
	took time.Duration
}

func failover(t *testing.T, mode string, wait int) {
	sc := report(t, fmt.Sprintf("failover/%s-primary-killed-wait-%d", mode, wait))
	rs := modeStack(t, mode)
	rs.extra["REDIS_WAIT_REPLICAS"] = strconv.Itoa(wait)
	e := rs.startEdge(t, nil)

	// Sales name clicks stored beforehand (a worker drains them, then
	// stops: no task is in a worker's hands when the primary dies, so
	// the drain after the kill needs no lease recovery). Sales are
	// spread over the keys of several programs (120 a minute a key).
	kills := scale(1, 3)
	ws := mustWorlds(t, e.client, scale(3, 20), nil)
	nClicks := scale(300, 1500)
	pre := make([]string, nClicks)
	first := rs.startWorker(t, []string{"--scheduler=false", "--concurrency", "4"}, nil)
	run(4, nClicks, func(i int) { pre[i] = mustClick(t, e.client, ws[i%len(ws)]) })
	rs.waitCount(t, nClicks, time.Minute, `SELECT count(*) FROM clicks`)
	if err := first.Stop(); err != nil {
		t.Fatalf("stop the first worker: %v", err)
	}
	shards := rs.queues(t, "clicks")
	if len(shards) == 0 {
		t.Fatal("no click queue after the first clicks")
	}

	// The load: 4 click clients and 2 sale clients until stop.
	var mu sync.Mutex
	var clicks []ack
	var sold []string
	var clickAnswers, saleAnswers tally
	var nextSale atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		runUntil(4, stop, func(i int) {
			time.Sleep(2 * time.Millisecond) // a steady load, not a benchmark
			start := time.Now()
			rep, err := e.call(req{method: "POST", path: "/api/v1/track/click", body: ws[i%len(ws)].clickBody(),
				header: map[string]string{"X-Forwarded-For": ipOf(1<<20 + i)}})
			if err != nil {
				clickAnswers.add(0)
				return
			}
			clickAnswers.add(rep.Status)
			if id, _ := rep.Body["click_id"].(string); rep.Status == 200 && id != "" {
				mu.Lock()
				clicks = append(clicks, ack{id, time.Now(), time.Since(start)})
				mu.Unlock()
			}
		})
	}()
	go func() {
		defer wg.Done()
		runUntil(2, stop, func(int) {
			time.Sleep(50 * time.Millisecond)
			i := int(nextSale.Add(1)) - 1
			if i >= nClicks {
				return // every stored click bought once
			}
			txn := fmt.Sprintf("txn-failover-%d", i)
			rep, err := e.call(req{method: "POST", path: "/api/v1/track/sale", token: ws[i%len(ws)].LiveKey,
				body: map[string]any{"transaction_id": txn, "amount_cents": 2500, "click_id": pre[i]}})
			if err != nil {
				saleAnswers.add(0)
				return
			}
			saleAnswers.add(rep.Status)
			if rep.Status == 200 {
				mu.Lock()
				sold = append(sold, txn)
				mu.Unlock()
			}
		})
	}()
	acked := func() int { mu.Lock(); defer mu.Unlock(); return len(clicks) }

	// Load, then each kill: the primary serving a click shard's pending
	// list dies, the replica is promoted, the load goes on. The phases
	// are the load's length, not waits for a condition.
	steady := scale(1500*time.Millisecond, 5*time.Second)
	var killedAt []time.Time
	var promotion []time.Duration
	time.Sleep(steady)
	for k := 0; k < kills; k++ {
		before := acked()
		waitLoad(t, "clicks acknowledged before the kill", func() bool { return acked() > before })
		// The next shard whose primary still has a replica to promote (in
		// a cluster a promoted replica has none; Sentinel restarts the
		// killed node as one).
		var at time.Time
		var took time.Duration
		for i := 0; i < len(shards) && at.IsZero(); i++ {
			at, took = killPrimary(t, rs, shards[(k+i)%len(shards)], k < kills-1)
		}
		if at.IsZero() {
			sc.note("no click shard's primary had a replica left after %d kills", k)
			break
		}
		killedAt = append(killedAt, at)
		promotion = append(promotion, took)
		time.Sleep(steady)
	}
	close(stop)
	wg.Wait()

	// Drain what Redis holds, then count by id. The test's own cluster
	// client is replaced: it would go on dialling the dead node for tens
	// of seconds before it reloads the slots.
	rs.reconnect()
	drainFrom := time.Now()
	drain := rs.startWorker(t, []string{"--concurrency", "4"}, nil)
	rs.waitIdle(t, rs.rdb, scale(2*time.Minute, 5*time.Minute))
	left := waitNoRetries(t, rs, scale(2*time.Minute, 5*time.Minute))
	drained := time.Since(drainFrom).Round(100 * time.Millisecond)
	mu.Lock()
	ids := make([]string, len(clicks))
	took := make([]time.Duration, len(clicks))
	for i, c := range clicks {
		ids[i], took[i] = c.id, c.took
	}
	txns := append([]string(nil), sold...)
	mu.Unlock()
	// The queues looked empty to the test's client; give the worker what
	// it may still hold until every acknowledged click is stored, bounded:
	// a click still missing then is lost.
	stored := storedClicks(t, rs, ids)
	atIdle := len(stored)
	_ = proc.WaitFor(scale(30*time.Second, time.Minute), func() error {
		if stored = storedClicks(t, rs, ids); len(stored) < len(ids) {
			return fmt.Errorf("%d of %d stored", len(stored), len(ids))
		}
		return nil
	})
	if late := len(stored) - atIdle; late > 0 {
		sc.note("%d clicks stored only after the queues looked empty to the test", late)
		t.Logf("%d clicks stored only after the queues looked empty to the test's client", late)
	}
	salesStored := rs.count(t, `SELECT count(*) FROM sales WHERE processor_event_id = ANY($1)`, pq.Array(txns))

	// The window at risk: clicks acknowledged in the 100 ms before a
	// kill; and the lost clicks' distance from the kill.
	var atRisk int
	var lostAges []string
	for _, c := range clicks {
		for _, k := range killedAt {
			if !c.at.After(k) && k.Sub(c.at) <= 100*time.Millisecond {
				atRisk++
			}
		}
		if !stored[c.id] {
			age := "after every kill"
			for _, k := range killedAt {
				if !c.at.After(k) {
					age = ms(k.Sub(c.at)) + " before a kill"
					break
				}
			}
			lostAges = append(lostAges, age)
		}
	}
	lost := len(ids) - len(stored)
	diverted := e.Logs.Count("queue write failed: batch written to Postgres")
	// A batch the drain failed once waits out its retry before it is
	// counted; how often that happened, and why, is part of the report.
	failedTries := drain.Logs.Count("task failed")
	if failedTries > 0 {
		t.Logf("the draining worker's failed tries:\n%s", problems(drain.Logs.Text()))
	}
	sc.counts(len(ids)+len(txns), len(stored)+salesStored)
	p50, p99, worst := percentile(took, 0.5), percentile(took, 0.99), percentile(took, 1)
	sc.note("clicks accepted %d, stored %d, lost %d (%d acknowledged in the 100 ms before a kill); sales accepted %d, stored %d",
		len(ids), len(stored), lost, atRisk, len(txns), salesStored)
	sc.note("click p50 %s, p99 %s, max %s", ms(p50), ms(p99), ms(worst))
	sc.note("clicks %s; sales %s; %d kills of a click shard's primary (%v), promoted after %v; %d batches diverted to Postgres; drained in %s, %d tries failed%s",
		clickAnswers.String(), saleAnswers.String(), len(killedAt), shards, promotion, diverted, drained, failedTries, left)
	t.Logf("%s, REDIS_WAIT_REPLICAS=%d: clicks accepted %d, stored %d, lost %d; at risk (acknowledged ≤ 100 ms before a kill) %d; sales accepted %d, stored %d; click p50 %s, p99 %s, max %s",
		mode, wait, len(ids), len(stored), lost, atRisk, len(txns), salesStored, ms(p50), ms(p99), ms(worst))
	if len(lostAges) > 0 {
		t.Logf("lost clicks acknowledged: %s", strings.Join(lostAges[:min(len(lostAges), 50)], ", "))
		// Lost and acknowledged by phase: before the first kill, between
		// two kills, after the last.
		lostIn, ackedIn := make([]int, len(killedAt)+1), make([]int, len(killedAt)+1)
		for _, c := range clicks {
			phase := len(killedAt)
			for k, at := range killedAt {
				if !c.at.After(at) {
					phase = k
					break
				}
			}
			ackedIn[phase]++
			if !stored[c.id] {
				lostIn[phase]++
			}
		}
		t.Logf("lost of acknowledged, by phase (before kill 1, …, after the last): %v of %v", lostIn, ackedIn)
		t.Logf("the edge's warnings and errors:\n%s", problems(e.Logs.Text()))
		t.Logf("the draining worker's warnings and errors:\n%s", problems(drain.Logs.Text()))
		if rs.sentinel != nil {
			// Who was promoted when, and how each replica synced: the
			// nodes' and the sentinels' own logs; what each node holds.
			for _, n := range append(rs.sentinel.Data, rs.sentinel.Sentinels...) {
				if n.P != nil {
					t.Logf("%s:\n%s", n.Addr(), n.P.Logs.Tail(60))
				}
			}
			for _, n := range rs.sentinel.Data {
				c := redis.NewClient(&redis.Options{Addr: n.Addr()})
				info, _ := c.Info(context.Background(), "replication", "keyspace").Result()
				pending, _ := c.LLen(context.Background(), "asynq:{"+rs.ns+"clicks}:pending").Result()
				c.Close()
				t.Logf("%s holds %d pending click tasks:\n%s", n.Addr(), pending, info)
			}
		}
	}
	if salesStored != len(txns) {
		t.Errorf("sales stored %d, accepted %d", salesStored, len(txns))
	}
	if wait > 0 && lost > 0 {
		t.Errorf("with REDIS_WAIT_REPLICAS=%d, %d of %d acknowledged clicks lost", wait, lost, len(ids))
	}
	if len(ids) == 0 || len(txns) == 0 {
		t.Errorf("no load: %d clicks and %d sales accepted", len(ids), len(txns))
	}
}

// killPrimary kills (SIGKILL) the primary holding queue's pending list
// and waits until its replica is promoted and the deployment healthy
// again. Under Sentinel the killed node then rejoins as a replica of the
// new primary (proc.RedisSentinel.Rejoin: not promoted before it synced)
// when rejoin is set, so that a later kill has a replica to promote. It
// returns when the kill was sent and how long the promotion took, or the
// zero time when the cluster primary has no replica (nothing killed).
func killPrimary(t *testing.T, rs *redisStack, queue string, rejoin bool) (time.Time, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var victim *proc.RedisNode
	var err error
	switch {
	case rs.cluster != nil:
		victim, err = rs.cluster.PrimaryFor(ctx, "asynq:{"+queue+"}:pending")
	default:
		victim, err = rs.sentinel.Primary(ctx)
	}
	if err != nil {
		t.Fatalf("the primary of %s: %v", queue, err)
	}
	if rs.cluster != nil && !hasReplica(ctx, victim) {
		return time.Time{}, 0
	}
	at := time.Now()
	victim.Kill()
	if rs.cluster != nil {
		err = rs.cluster.WaitHealthy(time.Minute)
	} else {
		err = rs.sentinel.WaitHealthy(time.Minute)
	}
	took := time.Since(at).Round(10 * time.Millisecond)
	if err != nil {
		t.Fatalf("no promotion after killing %s: %v", victim.Addr(), err)
	}
	if rs.sentinel != nil && rejoin {
		if err := rs.sentinel.Rejoin(victim, time.Minute); err != nil {
			t.Fatalf("the killed node back as a replica: %v", err)
		}
	}
	return at, took
}

// hasReplica reports whether the cluster node n has a connected replica.
func hasReplica(ctx context.Context, n *proc.RedisNode) bool {
	c := redis.NewClient(&redis.Options{Addr: n.Addr()})
	defer c.Close()
	info, err := c.Info(ctx, "replication").Result()
	return err == nil && !strings.Contains(info, "connected_slaves:0")
}

// storedClicks is the set of ids stored in Postgres.
func storedClicks(t *testing.T, rs *redisStack, ids []string) map[string]bool {
	t.Helper()
	rows, err := rs.db.Query(`SELECT click_id FROM clicks WHERE click_id = ANY($1)`, pq.Array(ids))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := make(map[string]bool, len(ids))
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out[id] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// waitNoRetries waits until no task of the stack's queues waits for a
// retry or a schedule either (waitIdle looks at pending and active ones
// only), so that a batch the worker failed once is counted after its
// retry; it returns a note of the archived tasks, if any.
func waitNoRetries(t *testing.T, rs *redisStack, timeout time.Duration) string {
	t.Helper()
	insp := asynq.NewInspectorFromRedisClient(rs.rdb)
	var archived int
	err := proc.WaitFor(timeout, func() error {
		archived = 0
		qs, err := insp.Queues()
		if err != nil {
			return err
		}
		for _, q := range qs {
			if !strings.HasPrefix(q, rs.ns) {
				continue
			}
			info, err := insp.GetQueueInfo(q)
			if err != nil {
				return err
			}
			archived += info.Archived
			if n := info.Pending + info.Active + info.Retry + info.Scheduled + info.Aggregating; n > 0 {
				return fmt.Errorf("%s: %d pending, %d active, %d retry, %d scheduled, %d aggregating",
					q, info.Pending, info.Active, info.Retry, info.Scheduled, info.Aggregating)
			}
		}
		return nil
	})
	if err != nil {
		t.Errorf("the queues did not drain: %v", err)
	}
	if archived > 0 {
		return fmt.Sprintf("; %d tasks archived", archived)
	}
	return ""
}

// problems are the distinct warning and error messages of a JSON log,
// with how often each came, for a failure's diagnosis.
func problems(logs string) string {
	seen := map[string]int{}
	var order []string
	for _, l := range strings.Split(logs, "\n") {
		if !strings.Contains(l, `"level":"WARN"`) && !strings.Contains(l, `"level":"ERROR"`) {
			continue
		}
		key := l
		if i := strings.Index(l, `"msg":`); i >= 0 {
			key = l[i:min(len(l), i+300)]
		}
		if seen[key] == 0 {
			order = append(order, key)
		}
		seen[key]++
	}
	var b strings.Builder
	for _, k := range order {
		fmt.Fprintf(&b, "%d× %s\n", seen[k], k)
	}
	return b.String()
}
