package reliability

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/partnertrack/partnertrack/cmd/internal/faulttest"
	"github.com/partnertrack/partnertrack/cmd/internal/proc"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
)

// redisStack is a stack over a Redis deployment of one mode, with the
// test's own client of it (for the asynq inspector) and, in cluster and
// Sentinel mode, the servers, which the failover scenarios kill.
type redisStack struct {
	*stack
	mode     string
	rdb      redis.UniversalClient
	cluster  *proc.RedisCluster  // cluster mode only
	sentinel *proc.RedisSentinel // Sentinel mode only
}

// modeStack starts the stack of a mode: "single" runs over the shared
// Redis (a namespace of its own), "cluster" over a private 3+3 cluster
// (REDIS_CLUSTER_ADDRS, TRAFFIC_SHARDS=3), "sentinel" over a private
// primary, replica and three sentinels (REDIS_SENTINEL_ADDRS and
// REDIS_SENTINEL_MASTER). Every process of the stack gets the same
// choice, as in production.
func modeStack(t *testing.T, mode string) *redisStack {
	t.Helper()
	rs := &redisStack{mode: mode}
	switch mode {
	case "single":
		rs.stack = sharedStack(t)
		o, err := redis.ParseURL(rs.redisURL)
		if err != nil {
			t.Fatal(err)
		}
		rs.rdb = redis.NewClient(o)
	case "cluster":
		rs.cluster = faulttest.StartRedisCluster(t)
		addrs := rs.cluster.Addrs()
		rs.stack = privateRedisStack(t, addrs[0])
		rs.extra = map[string]string{"REDIS_CLUSTER_ADDRS": strings.Join(addrs, ","), "TRAFFIC_SHARDS": "3"}
		rs.rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	case "sentinel":
		rs.sentinel = faulttest.StartRedisSentinel(t)
		addrs := rs.sentinel.SentinelAddrs()
		rs.stack = privateRedisStack(t, rs.sentinel.Data[0].Addr())
		rs.extra = map[string]string{"REDIS_SENTINEL_ADDRS": strings.Join(addrs, ","), "REDIS_SENTINEL_MASTER": proc.SentinelMaster}
		rs.rdb = redis.NewFailoverClient(&redis.FailoverOptions{MasterName: proc.SentinelMaster, SentinelAddrs: addrs})
	default:
		t.Fatalf("unknown Redis mode %q", mode)
	}
	t.Cleanup(func() { rs.rdb.Close() })
	return rs
}

// reconnect replaces the test's cluster client by one seeded with the
// nodes still running (a no-op in the other modes).
func (rs *redisStack) reconnect() {
	if rs.cluster == nil {
		return
	}
	rs.rdb.Close()
	rs.rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: rs.cluster.Addrs()})
}

// privateRedisStack is a stack over a fresh database and a private Redis
// deployment: the namespace need not be unique, and REDIS_URL names one
// node (in cluster and Sentinel mode only its user, password and TLS
// settings are read).
func privateRedisStack(t *testing.T, addr string) *stack {
	t.Helper()
	pg := pgtest.New(t)
	return &stack{dbURL: pg.URL, db: pg.DB.DB.DB, redisURL: "redis://" + addr, ns: "rel:"}
}

// queues are the stack's queues known to asynq whose names (without the
// namespace) begin with prefix, sorted.
func (rs *redisStack) queues(t *testing.T, prefix string) []string {
	t.Helper()
	qs, err := asynq.NewInspectorFromRedisClient(rs.rdb).Queues()
	if err != nil {
		t.Fatalf("asynq queues: %v", err)
	}
	var out []string
	for _, q := range qs {
		if strings.HasPrefix(q, rs.ns+prefix) {
			out = append(out, q)
		}
	}
	sort.Strings(out)
	return out
}

// TestRedisModes runs the same end-to-end checks over one Redis, a Redis
// Cluster (with the click traffic over three queue shards) and Sentinel:
// clicks through edge, queue and worker into Postgres; a lead, a sale
// and a refund on a stored click; the refund's notification delivered
// from the outbox; the scheduler's maintenance tasks run; Redis-backed
// rate limits shared by two edges; a link disabled through one edge
// refused at once by the other (cache invalidation over Redis); and the
// queue dashboard listing the namespaced queues.
func TestRedisModes(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"single", "cluster", "sentinel"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			redisModeChecks(t, mode)
		})
	}
}

func redisModeChecks(t *testing.T, mode string) {
	sc := report(t, "redis-modes/"+mode)
	rs := modeStack(t, mode)
	limits := map[string]string{"RATE_LIMIT_STORE": "redis"}
	a, b := rs.startEdge(t, limits), rs.startEdge(t, limits)
	rs.startWorker(t, []string{"--concurrency", "4"}, nil)
	w := mustWorld(t, a.client, nil)

	// Clicks through both edges reach Postgres.
	const n = 30
	var clicks []string
	for i := 0; i < n; i++ {
		c := a.client
		if i%2 == 1 {
			c = b.client
		}
		clicks = append(clicks, mustClick(t, c, w))
	}
	rs.waitCount(t, n, time.Minute, `SELECT count(*) FROM clicks`)
	if mode == "cluster" {
		// With TRAFFIC_SHARDS=3 the edges spread batches over shards;
		// before the shards are implemented there is one click queue.
		sc.note("click queues %v", rs.queues(t, "clicks"))
	}

	// A lead, a sale and a partial refund on a stored click; the
	// refund's partner notification leaves the outbox.
	a.must(t, 200, req{method: "POST", path: "/api/v1/track/lead", token: w.LiveKey,
		body: map[string]any{"click_id": clicks[0], "customer_key": "modes-user"}, header: map[string]string{"X-Forwarded-For": nextIP()}})
	b.must(t, 200, req{method: "POST", path: "/api/v1/track/sale", token: w.LiveKey,
		body: map[string]any{"transaction_id": "txn-modes", "amount_cents": 5000, "click_id": clicks[0]}})
	a.must(t, 200, req{method: "POST", path: "/api/v1/track/refund", token: w.LiveKey,
		body: map[string]any{"transaction_id": "txn-modes", "refund_amount_cents": 1000, "refund_id": "modes-r1"}})
	rs.waitCount(t, 1, time.Minute, `SELECT count(*) FROM sales WHERE processor_event_id = 'txn-modes' AND refunded_cents = 1000`)
	rs.waitIdle(t, rs.rdb, time.Minute)
	sent := rs.count(t, `SELECT count(*) FROM outbox WHERE sent_at IS NOT NULL`)
	if sent == 0 {
		t.Errorf("no outbox message was delivered after the sale and the refund")
	}

	// The scheduler runs: its outbox sweep (every 5 s) is processed from
	// the maintenance queue.
	maint := rs.ns + "maintenance"
	insp := asynq.NewInspectorFromRedisClient(rs.rdb)
	if err := proc.WaitFor(30*time.Second, func() error {
		info, err := insp.GetQueueInfo(maint)
		if err != nil {
			return err
		}
		if info.Processed == 0 {
			return fmt.Errorf("%s: nothing processed yet", maint)
		}
		return nil
	}); err != nil {
		t.Errorf("the scheduler's maintenance tasks: %v", err)
	}

	// Rate limits in Redis hold across the two edges: one address gets
	// its 60 clicks a minute in all, not 60 on each. The limiter counts
	// per clock minute, so a round that the clock split into two minutes
	// proves nothing about sharing and is sent again from a new address.
	var limited tally
	limitedAccepted := 0 // clicks accepted over every round, all stored
	for round := 1; ; round++ {
		startEarlyInMinute()
		ip := nextIP()
		limited = tally{}
		var calls []windowed
		unlimited := 0 // answers of a limiter that could not count (Remaining is the whole limit only then)
		for i := 0; i < 70; i++ {
			c := a.client
			if i%2 == 1 {
				c = b.client
			}
			sent := time.Now()
			rep, err := c.call(req{method: "POST", path: "/api/v1/track/click", body: w.clickBody(), header: map[string]string{"X-Forwarded-For": ip}})
			if err != nil {
				t.Fatalf("click %d: %v", i, err)
			}
			limited.add(rep.Status)
			if rep.Header.Get("X-RateLimit-Remaining") == "60" {
				unlimited++
			}
			calls = append(calls, windowed{sent, time.Now(), rep.Status == 200})
		}
		limitedAccepted += limited.get(200)
		if err := checkMinuteLimit(calls, 60); err != nil {
			t.Errorf("70 clicks from one address over two edges (%s, %d allowed by an unavailable limiter): %v", limited.String(), unlimited, err)
			break
		}
		if busiestMinute(calls) > 60 {
			break
		}
		if round == 3 {
			t.Errorf("70 clicks from one address over two edges never fell in one minute in %d rounds", round)
			break
		}
	}

	// A link disabled through edge a is refused by edge b, whose cache
	// held it, well within the cache's 30 s lifetime.
	mustClick(t, b.client, w)
	a.must(t, 200, req{method: "PATCH", path: "/api/v1/programs/" + itoa(w.ProgramID) + "/links/" + itoa(w.LinkID), token: w.OwnerToken,
		body: map[string]any{"status": "disabled"}})
	var last reply
	acceptedWhileStale := 0 // clicks edge b accepted before the invalidation reached it; stored like any other
	if err := proc.WaitFor(5*time.Second, func() error {
		rep, err := b.call(req{method: "POST", path: "/api/v1/track/click", body: w.clickBody(), header: map[string]string{"X-Forwarded-For": nextIP()}})
		if err != nil {
			return err
		}
		last = rep
		if rep.Status == 200 {
			acceptedWhileStale++
			return fmt.Errorf("edge b still accepts clicks on the disabled link")
		}
		return nil
	}); err != nil {
		t.Errorf("link cache invalidation: %v", err)
	} else if last.Status/100 != 4 {
		t.Errorf("a click on the disabled link: %s, want a 4xx", last)
	}

	// The queue dashboard answers and lists the namespaced queues.
	list := a.must(t, 200, req{method: "GET", path: "/ops/queues/api/queues", token: opToken})
	var body struct {
		Queues []struct {
			Queue string `json:"queue"`
		} `json:"queues"`
	}
	if err := json.Unmarshal(list.Raw, &body); err != nil {
		t.Fatalf("queue list %s: %v", list.Raw, err)
	}
	var names []string
	for _, q := range body.Queues {
		names = append(names, q.Queue)
	}
	for _, want := range append(rs.queues(t, "clicks"), maint) {
		if !contains(names, want) {
			t.Errorf("the queue dashboard lists %v, not %s", names, want)
		}
	}
	a.must(t, 200, req{method: "GET", path: "/ops/queues", token: opToken})

	// Every click answered 200 is stored.
	accepted := n + limitedAccepted + 1 + acceptedWhileStale
	rs.waitCount(t, accepted, time.Minute, `SELECT count(*) FROM clicks`)
	sc.counts(accepted, rs.count(t, `SELECT count(*) FROM clicks`))
	sc.note("clicks %d; sale, lead and refund on a stored click; %d outbox messages sent; one address over two edges %s; dashboard lists %d queues",
		n, sent, limited.String(), len(names))
}
