package ratelimit_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ratelimit"
	"github.com/partnertrack/partnertrack/workers/redistest"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func TestCapSlidingWindow(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	ns := redistest.Namespace(t, rdb)
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	c := ratelimit.NewCap(rdb, ns.Key("cap-test:"), 10, time.Hour, clk.Now)
	ctx := context.Background()

	take := func(key string) (bool, int) {
		t.Helper()
		ok, retry, err := c.Take(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return ok, retry
	}
	// Ten runs spread over 45 minutes are allowed.
	for i := 0; i < 10; i++ {
		if ok, _ := take("chain:1"); !ok {
			t.Fatalf("run %d refused", i+1)
		}
		clk.Add(5 * time.Minute)
	}
	// now = 12:50; the first run (12:00) leaves the window at 13:00.
	ok, retry := take("chain:1")
	if ok || retry != 600 {
		t.Fatalf("11th run: allowed %v, retry %d s; want refused, 600 s", ok, retry)
	}
	// A refused run is not counted: another key is independent.
	if ok, _ := take("chain:2"); !ok {
		t.Fatal("another key refused")
	}
	// One second before 13:00 still refused; at 13:00 one slot is free.
	clk.Add(10*time.Minute - time.Second)
	if ok, retry := take("chain:1"); ok || retry != 1 {
		t.Fatalf("at 12:59:59: allowed %v retry %d", ok, retry)
	}
	clk.Add(time.Second)
	if ok, _ := take("chain:1"); !ok {
		t.Fatal("at 13:00 the oldest run left the window, yet refused")
	}
	if ok, _ := take("chain:1"); ok {
		t.Fatal("a second slot opened at 13:00")
	}
}

func TestCapConcurrentExact(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	ns := redistest.Namespace(t, rdb)
	c := ratelimit.NewCap(rdb, ns.Key("cap-test:"), 10, time.Hour, nil)
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, _, err := c.Take(context.Background(), "k")
			if err != nil {
				t.Error(err)
			}
			if ok {
				allowed.Add(1)
			}
		}()
	}
	wg.Wait()
	if allowed.Load() != 10 {
		t.Fatalf("%d of 40 concurrent runs allowed, want 10", allowed.Load())
	}
}
