package redistest

import (
	"context"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/partnertrack/partnertrack/workers/tasks"
)

// A test that ends with a task still active (asynq's DeleteQueue refuses
// such a queue) leaves no key of its namespace in the shared Redis.
func TestNamespaceLeavesNoKeysBehind(t *testing.T) {
	c := Client(t)
	ctx := context.Background()
	var ns tasks.Namespace
	t.Run("a test mid-task", func(t *testing.T) {
		ns = Namespace(t, c)
		queue := ns.Queue(tasks.QueueWebhooks)
		client := asynq.NewClientFromRedisClient(c)
		if _, err := client.Enqueue(asynq.NewTask("outbox", nil), asynq.Queue(queue), asynq.TaskID("outbox-1")); err != nil {
			t.Fatal(err)
		}
		// What a worker does when it takes the task: pending to active.
		if err := c.LMove(ctx, "asynq:{"+queue+"}:pending", "asynq:{"+queue+"}:active", "RIGHT", "LEFT").Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.Set(ctx, "asynq:{"+queue+"}:processed", 1, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.Set(ctx, ns.Key("clicks:pending:1"), "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
	})
	for _, pattern := range []string{"asynq:{" + string(ns) + "*", ns.Key("*")} {
		var keys []string
		iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Fatal(err)
		}
		if len(keys) > 0 {
			t.Errorf("keys left behind matching %s: %v", pattern, keys)
		}
	}
	member, err := c.SIsMember(ctx, "asynq:queues", ns.Queue(tasks.QueueWebhooks)).Result()
	if err != nil {
		t.Fatal(err)
	}
	if member {
		t.Errorf("asynq:queues still lists %s", ns.Queue(tasks.QueueWebhooks))
	}
}
