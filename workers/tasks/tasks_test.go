package tasks

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

func TestEnqueuerBreakerFailsFastWhileRedisIsDown(t *testing.T) {
	t.Parallel()
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer dead.Close()
	e := &Enqueuer{Client: asynq.NewClientFromRedisClient(dead), Breaker: NewRedisBreaker("test", nil)}
	msg := []ledger.OutboxMessage{{ID: 1, TaskType: "x", Queue: QueueNotifications, Payload: []byte(`{}`)}}
	for i := 0; i < 5; i++ {
		if sent, err := e.Enqueue(context.Background(), msg); err == nil || len(sent) != 0 {
			t.Fatalf("attempt %d: sent %v, err %v", i, sent, err)
		}
	}
	if e.Breaker.State() != gobreaker.StateOpen {
		t.Fatalf("breaker %s after five failures, want open", e.Breaker.State())
	}
	// While open, the breaker answers without calling Redis at all.
	_, err := e.Enqueue(context.Background(), msg)
	if !errors.Is(err, gobreaker.ErrOpenState) {
		t.Fatalf("err = %v, want the open-state error", err)
	}
}

func TestNamespaceQueues(t *testing.T) {
	t.Parallel()
	ns := Namespace("t1:")
	all, err := ns.Queues("all", 1)
	if err != nil || len(all) != len(AllQueues) || all["t1:clicks"] == 0 {
		t.Fatalf("all = %v, %v", all, err)
	}
	some, err := ns.Queues("notifications, webhooks", 1)
	if err != nil || len(some) != 2 || some["t1:webhooks"] == 0 {
		t.Fatalf("some = %v, %v", some, err)
	}
	if _, err := ns.Queues("clicks,bogus", 1); err == nil {
		t.Fatal("unknown queue accepted")
	}
}

// With shards, "clicks" and "all" serve every click shard and the plain
// clicks queue (what was queued before the shards); a shard named alone
// is served alone; money and notification queues stay one queue each.
func TestNamespaceQueuesWithShards(t *testing.T) {
	t.Parallel()
	ns := Namespace("t1:")
	keys := func(m map[string]int) []string { return slices.Sorted(maps.Keys(m)) }
	for _, tt := range []struct {
		desc   string
		names  string
		shards int
		want   []string
	}{
		{"OneShardKeepsThePlainQueue", "clicks", 1, []string{"t1:clicks"}},
		{"ZeroMeansOne", "clicks,visits", 0, []string{"t1:clicks", "t1:visits"}},
		{"EveryShardAndThePlainQueue", "clicks", 3, []string{"t1:clicks", "t1:clicks-0", "t1:clicks-1", "t1:clicks-2"}},
		{"OneShardAlone", "clicks-2", 3, []string{"t1:clicks-2"}},
		{"VisitShardAndAMoneyQueue", "visits-0,processor", 2, []string{"t1:processor", "t1:visits-0"}},
		{"All", "all", 2, []string{"t1:clicks", "t1:clicks-0", "t1:clicks-1", "t1:emails", "t1:maintenance",
			"t1:notifications", "t1:processor", "t1:visits", "t1:visits-0", "t1:visits-1", "t1:webhooks"}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			got, err := ns.Queues(tt.names, tt.shards)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(keys(got), tt.want) {
				t.Fatalf("Queues(%q, %d) = %v, want %v", tt.names, tt.shards, keys(got), tt.want)
			}
			for q, w := range got {
				base := strings.TrimPrefix(q, "t1:")
				base, _, _ = strings.Cut(base, "-")
				if w != AllQueues[base] {
					t.Fatalf("%s weighs %d, want its queue's %d", q, w, AllQueues[base])
				}
			}
		})
	}
	for _, tt := range []struct {
		desc   string
		names  string
		shards int
		want   string
	}{
		{"ErrShardPastTheLast", "clicks-3", 3, "clicks-0 … clicks-2"},
		{"ErrShardWithoutShards", "clicks-0", 1, "TRAFFIC_SHARDS is 1"},
		{"ErrNotAShard", "clicks-01", 3, "unknown queue"},
		{"ErrNoMoneyShards", "processor-0", 3, "unknown queue"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			if _, err := ns.Queues(tt.names, tt.shards); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Queues(%q, %d) error = %v, want one saying %q", tt.names, tt.shards, err, tt.want)
			}
		})
	}
}

func TestTrafficQueue(t *testing.T) {
	t.Parallel()
	if q := TrafficQueue(QueueClicks, 0, 1); q != "clicks" {
		t.Fatalf("one shard: %q, want clicks", q)
	}
	if q := TrafficQueue(QueueVisits, 4, 5); q != "visits-4" {
		t.Fatalf("shard 4 of 5: %q, want visits-4", q)
	}
	// A shard's pending records share its queue's hash tag, and so asynq's
	// keys' slot.
	at := time.Unix(1700000000, 0)
	if k := Namespace("t1:").PendingClicksKey("clicks-2", at); k != "t1:clicks:pending:{t1:clicks-2}:1700000000" {
		t.Fatalf("pending key %q", k)
	}
}

func TestSplitTraffic(t *testing.T) {
	t.Parallel()
	ns := Namespace("t1:")
	all, err := ns.Queues("all", 1)
	if err != nil {
		t.Fatal(err)
	}
	traffic, others := ns.SplitTraffic(all)
	if len(traffic) != 2 || traffic["t1:clicks"] != AllQueues[QueueClicks] || traffic["t1:visits"] != AllQueues[QueueVisits] {
		t.Fatalf("traffic = %v, want the namespace's clicks and visits with their weights", traffic)
	}
	if len(others) != len(AllQueues)-2 || others["t1:processor"] == 0 || others["t1:maintenance"] == 0 {
		t.Fatalf("others = %v", others)
	}
	traffic, others = ns.SplitTraffic(map[string]int{"t1:webhooks": 2})
	if len(traffic) != 0 || len(others) != 1 {
		t.Fatalf("webhooks only: traffic %v, others %v", traffic, others)
	}
	// Every shard is traffic; a queue of another namespace is not.
	sharded, err := ns.Queues("all", 3)
	if err != nil {
		t.Fatal(err)
	}
	traffic, others = ns.SplitTraffic(sharded)
	if len(traffic) != 8 || traffic["t1:clicks-2"] != AllQueues[QueueClicks] || traffic["t1:visits-0"] != AllQueues[QueueVisits] ||
		traffic["t1:clicks"] == 0 || len(others) != len(AllQueues)-2 {
		t.Fatalf("3 shards: traffic %v, others %v", traffic, others)
	}
	traffic, _ = ns.SplitTraffic(map[string]int{"t2:clicks-0": 4})
	if len(traffic) != 0 {
		t.Fatalf("another namespace's shard is traffic: %v", traffic)
	}
}
