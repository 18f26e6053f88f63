package ratelimit

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// clock is a settable fake clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

func redisClient(t *testing.T) *redis.Client {
	t.Helper()
	addr := os.Getenv("TEST_REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("Redis is not reachable at %s (%v): start it with "+
			"`redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save \"\" --appendonly no`", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func stores(t *testing.T) map[string]Store {
	return map[string]Store{
		"memory": NewMemory(10000),
		"redis":  NewRedis(redisClient(t), fmt.Sprintf("test:%s:%d:", t.Name(), time.Now().UnixNano())),
	}
}

func TestLimiterWindow(t *testing.T) {
	t.Parallel()
	for name, store := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c := &clock{t: time.Date(2026, 11, 21, 10, 0, 30, 0, time.UTC)}
			l := New(store, c.now)
			for i := 1; i <= 3; i++ {
				r, err := l.Allow(ctx, "click:1.2.3.4", 3)
				if err != nil || !r.Allowed || r.Remaining != 3-i || r.Limit != 3 {
					t.Fatalf("hit %d: %+v, %v", i, r, err)
				}
				if want := time.Date(2026, 11, 21, 10, 1, 0, 0, time.UTC); !r.Reset.Equal(want) {
					t.Fatalf("reset = %v, want %v", r.Reset, want)
				}
			}
			r, _ := l.Allow(ctx, "click:1.2.3.4", 3)
			if r.Allowed || r.Remaining != 0 {
				t.Fatalf("4th hit allowed: %+v", r)
			}
			if s := r.RetryAfterSeconds(c.now()); s != 30 {
				t.Fatalf("retry after %d s, want 30", s)
			}
			// Another key has its own bucket.
			if r, _ := l.Allow(ctx, "click:5.6.7.8", 3); !r.Allowed || r.Remaining != 2 {
				t.Fatalf("other key: %+v", r)
			}
			// The next window starts afresh.
			c.set(time.Date(2026, 11, 21, 10, 1, 0, 0, time.UTC))
			if r, _ := l.Allow(ctx, "click:1.2.3.4", 3); !r.Allowed || r.Remaining != 2 {
				t.Fatalf("next window: %+v", r)
			}
		})
	}
}

func TestLimiterConcurrentExactCount(t *testing.T) {
	t.Parallel()
	for name, store := range stores(t) {
		t.Run(name, func(t *testing.T) {
			c := &clock{t: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}
			l := New(store, c.now)
			var wg sync.WaitGroup
			var mu sync.Mutex
			allowed := 0
			for i := 0; i < 200; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r, err := l.Allow(context.Background(), "sale:aff_x", 120)
					if err != nil {
						t.Error(err)
					}
					if r.Allowed {
						mu.Lock()
						allowed++
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if allowed != 120 {
				t.Fatalf("allowed %d of 200, want exactly 120", allowed)
			}
		})
	}
}

func TestMemoryBounded(t *testing.T) {
	t.Parallel()
	m := NewMemory(6400)
	c := &clock{t: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}
	l := New(m, c.now)
	for i := 0; i < 100000; i++ {
		l.Allow(context.Background(), fmt.Sprintf("ip:%d", i), 60)
	}
	if n := m.Len(); n > 6400 {
		t.Fatalf("memory store holds %d keys, bound is 6400", n)
	}
	// In the next window every shard that is touched drops the last
	// window's keys: a flood of new callers fills it afresh, still bounded.
	c.set(c.now().Add(time.Minute))
	for i := 0; i < 100000; i++ {
		l.Allow(context.Background(), fmt.Sprintf("ip2:%d", i), 60)
	}
	if n := m.Len(); n > 6400 {
		t.Fatalf("memory store holds %d keys in the next window, bound is 6400", n)
	}
	if r, _ := l.Allow(context.Background(), "ip:99999", 60); r.Remaining != 59 {
		t.Fatalf("a key of the last window kept its count: %+v", r)
	}
}

func TestRedisFailureAllows(t *testing.T) {
	t.Parallel()
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	defer dead.Close()
	l := New(NewRedis(dead, "x:"), nil)
	r, err := l.Allow(context.Background(), "k", 5)
	if err == nil || !r.Allowed || r.Remaining != 5 {
		t.Fatalf("store outage: %+v, %v (must allow and report the error)", r, err)
	}
}
