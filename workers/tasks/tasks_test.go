package tasks

import (
	"context"
	"errors"
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
	ns := Namespace("t1:")
	all, err := ns.Queues("all")
	if err != nil || len(all) != len(AllQueues) || all["t1:clicks"] == 0 {
		t.Fatalf("all = %v, %v", all, err)
	}
	some, err := ns.Queues("notifications, webhooks")
	if err != nil || len(some) != 2 || some["t1:webhooks"] == 0 {
		t.Fatalf("some = %v, %v", some, err)
	}
	if _, err := ns.Queues("clicks,bogus"); err == nil {
		t.Fatal("unknown queue accepted")
	}
}

func TestSplitTraffic(t *testing.T) {
	t.Parallel()
	ns := Namespace("t1:")
	all, err := ns.Queues("all")
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
}
