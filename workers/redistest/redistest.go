// Package redistest gives tests a Redis client and an asynq namespace of
// their own. asynq has no key prefix, so isolation comes from queue names:
// every queue a test uses carries its namespace, and the queues are
// deleted when the test ends.
//
// The server is TEST_REDIS_URL (default redis://127.0.0.1:6379/0). A test
// never skips when Redis is missing: it fails and says how to start it.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/partnertrack/partnertrack/workers/tasks"
)

// URL is the Redis server of the tests.
func URL() string {
	if u := os.Getenv("TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// Client returns a client closed when the test ends.
func Client(tb testing.TB) *redis.Client {
	tb.Helper()
	opts, err := redis.ParseURL(URL())
	if err != nil {
		tb.Fatalf("redistest: TEST_REDIS_URL: %v", err)
	}
	opts.ContextTimeoutEnabled = true
	c := redis.NewClient(opts)
	if err := c.Ping(context.Background()).Err(); err != nil {
		tb.Fatalf("redistest: Redis is not reachable at %s (%v); start it with "+
			"`redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save \"\" --appendonly no` or set TEST_REDIS_URL", URL(), err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// Namespace returns a fresh namespace whose asynq queues, and the plain
// keys named with it (tasks.Namespace.Key: click records), are deleted
// when the test ends.
func Namespace(tb testing.TB, c *redis.Client) tasks.Namespace {
	tb.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	ns := tasks.Namespace("t" + hex.EncodeToString(b) + ":")
	tb.Cleanup(func() {
		ctx := context.Background()
		insp := asynq.NewInspectorFromRedisClient(c)
		for q := range tasks.AllQueues {
			// DeleteQueue refuses a queue with a task still active (a test
			// that ended mid-task): the scan below takes its keys anyway.
			insp.DeleteQueue(ns.Queue(q), true)
			c.SRem(ctx, "asynq:queues", ns.Queue(q))
		}
		unlinkMatching(ctx, c, ns.Key("*"))
		// asynq's own keys of the namespace's queues: task hashes of a
		// queue DeleteQueue refused, and the processed/failed counters it
		// leaves behind.
		unlinkMatching(ctx, c, "asynq:{"+string(ns)+"*")
	})
	return ns
}

// unlinkMatching unlinks every key matching the glob pattern.
func unlinkMatching(ctx context.Context, c *redis.Client, pattern string) {
	iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		if keys = append(keys, iter.Val()); len(keys) == 1000 {
			c.Unlink(ctx, keys...)
			keys = keys[:0]
		}
	}
	if len(keys) > 0 {
		c.Unlink(ctx, keys...)
	}
}
