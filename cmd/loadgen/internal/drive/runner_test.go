package drive

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// virtualClock is time that passes only when the run waits for a due
// time or a request stands for work (advance): the tests check the
// pacing and the tallies exactly, whatever the machine's speed.
type virtualClock struct {
	mu  sync.Mutex
	now time.Time
}

func newVirtualClock() *virtualClock {
	return &virtualClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *virtualClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *virtualClock) SleepUntil(ctx context.Context, t time.Time) bool {
	c.mu.Lock()
	if t.After(c.now) {
		c.now = t
	}
	c.mu.Unlock()
	return ctx.Err() == nil
}

// advance stands for a request that takes d.
func (c *virtualClock) advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func TestPacingMath(t *testing.T) {
	if got := Due(0, 1000); got != 0 {
		t.Fatalf("Due(0) = %v", got)
	}
	if got := Due(1, 1000); got != time.Millisecond {
		t.Fatalf("Due(1, 1000/s) = %v, want 1ms", got)
	}
	if got := Due(10000, 10000); got != time.Second {
		t.Fatalf("Due(10000, 10000/s) = %v, want 1s", got)
	}
	if got := Due(1, 3); got != 333333333*time.Nanosecond {
		t.Fatalf("Due(1, 3/s) = %v", got)
	}
	for _, c := range []struct {
		d    time.Duration
		rate float64
		want int64
	}{{60 * time.Second, 10000, 600000}, {time.Second, 1000, 1000}, {1500 * time.Millisecond, 3, 5}, {0, 100, 0}} {
		if got := Planned(c.d, c.rate); got != c.want {
			t.Fatalf("Planned(%v, %v) = %d, want %d", c.d, c.rate, got, c.want)
		}
	}
	if PoolSize(1000) != 25 || PoolSize(10) != 16 || PoolSize(1e6) != 512 {
		t.Fatalf("pool sizes %d %d %d", PoolSize(1000), PoolSize(10), PoolSize(1e6))
	}
}

func TestRateRunSendsOnScheduleAndCountsStatuses(t *testing.T) {
	var mu sync.Mutex
	seen := map[int64]bool{}
	clk := newVirtualClock()
	start := clk.Now()
	res := Run(context.Background(), Options{Rate: 200, Workers: 4, Duration: 500 * time.Millisecond, clock: clk},
		func(ctx context.Context, w int, i int64) (int, error) {
			if early := start.Add(Due(i, 200)).Sub(clk.Now()); early > 0 {
				t.Errorf("request %d sent %v before it was due", i, early)
			}
			mu.Lock()
			seen[i] = true
			mu.Unlock()
			if i%10 == 0 {
				return 429, nil
			}
			return 200, nil
		})
	if res.Sent != 100 || len(seen) != 100 {
		t.Fatalf("sent %d (distinct %d), want 100", res.Sent, len(seen))
	}
	if res.Status[429] != 10 || res.Status[200] != 90 || res.Success() != 90 {
		t.Fatalf("statuses %v", res.Status)
	}
	if res.Elapsed != Due(99, 200) {
		t.Fatalf("100 requests at 200/s took %v, want the last one's due time %v", res.Elapsed, Due(99, 200))
	}
}

// A server that stalls for 200 ms with a pool of one: the requests due
// during the stall are charged the wait (no coordinated omission) and
// counted late.
func TestRateRunChargesAStallToEveryRequestBehindIt(t *testing.T) {
	clk := newVirtualClock()
	res := Run(context.Background(), Options{Rate: 100, Workers: 1, Duration: 500 * time.Millisecond, clock: clk},
		func(ctx context.Context, w int, i int64) (int, error) {
			if i == 10 {
				clk.advance(200 * time.Millisecond)
			}
			return 200, nil
		})
	if res.Sent != 50 {
		t.Fatalf("sent %d, want 50", res.Sent)
	}
	if res.Late != 19 {
		t.Fatalf("late %d, want the 19 requests due during the stall", res.Late)
	}
	// Request 11 was due 10 ms after the stalled one and waited ~190 ms.
	if p := res.Latency.Quantile(0.7); p < 50*time.Millisecond {
		t.Fatalf("p70 = %v: the stall was not charged to the requests behind it", p)
	}
	if res.Latency.Max() < 200*time.Millisecond {
		t.Fatalf("max = %v", res.Latency.Max())
	}
}

// A stall in the second second of a run shows there, and only there, in
// the slow answers by second.
func TestSlowAnswersCountedBySecondDue(t *testing.T) {
	clk := newVirtualClock()
	res := Run(context.Background(), Options{Rate: 100, Workers: 1, Duration: 1500 * time.Millisecond, Slow: 50 * time.Millisecond, clock: clk},
		func(ctx context.Context, w int, i int64) (int, error) {
			if i == 110 {
				clk.advance(150 * time.Millisecond)
			}
			return 200, nil
		})
	if res.SlowBySecond[0] != 0 {
		t.Fatalf("%d slow answers in second 0, before the stall", res.SlowBySecond[0])
	}
	// Request 110 took 150 ms; the nine due after it within 100 ms waited
	// more than 50 ms for it.
	if n := res.SlowBySecond[1]; n != 10 {
		t.Fatalf("%d slow answers in second 1, want the 10 due during the stall (%v)", n, res.SlowBySecond)
	}
	if got, want := res.SlowSeconds(), fmt.Sprintf("1:%d", res.SlowBySecond[1]); got != want {
		t.Fatalf("SlowSeconds() = %q, want %q", got, want)
	}
	if got := (&Result{}).SlowSeconds(); got != "none" {
		t.Fatalf("SlowSeconds() of a run without slow answers = %q", got)
	}
}

func TestRateRunCountsUnsentAfterDrain(t *testing.T) {
	clk := newVirtualClock()
	res := Run(context.Background(), Options{Rate: 100, Workers: 1, Duration: 200 * time.Millisecond, Drain: 50 * time.Millisecond, clock: clk},
		func(ctx context.Context, w int, i int64) (int, error) {
			clk.advance(60 * time.Millisecond)
			return 200, nil
		})
	// Requests start at 0, 60, …, 240 ms: the fifth is the last to start
	// before the drain ends at 250 ms.
	if res.Sent != 5 || res.Unsent != 15 {
		t.Fatalf("sent %d unsent %d, want 5 and 15", res.Sent, res.Unsent)
	}
}

func TestMaxRunStopsAtLimitOrSourceEnd(t *testing.T) {
	res := Run(context.Background(), Options{Workers: 8, Duration: 5 * time.Second, Limit: 1000},
		func(ctx context.Context, w int, i int64) (int, error) { return 201, nil })
	if res.Sent != 1000 || res.Status[201] != 1000 {
		t.Fatalf("sent %d statuses %v", res.Sent, res.Status)
	}
	boom := errors.New("connection refused")
	res = Run(context.Background(), Options{Workers: 2, Duration: 5 * time.Second},
		func(ctx context.Context, w int, i int64) (int, error) {
			if i >= 30 {
				return 0, ErrStop
			}
			if i == 3 {
				return 0, boom
			}
			return 200, nil
		})
	if res.Sent != 30 || res.Status[0] != 1 || res.FirstErr != boom.Error() {
		t.Fatalf("sent %d statuses %v err %q", res.Sent, res.Status, res.FirstErr)
	}
	if res.Throughput() <= 0 {
		t.Fatal("no throughput")
	}
}

func TestAddMergesRuns(t *testing.T) {
	do := func(ctx context.Context, w int, i int64) (int, error) { return 200, nil }
	a := Run(context.Background(), Options{Workers: 1, Duration: time.Second, Limit: 10}, do)
	b := Run(context.Background(), Options{Workers: 1, Duration: time.Second, Limit: 5},
		func(ctx context.Context, w int, i int64) (int, error) { return 500, nil })
	a.Add(b)
	if a.Sent != 15 || a.Status[200] != 10 || a.Status[500] != 5 || a.Latency.Count() != 15 {
		t.Fatalf("merged: sent %d statuses %v count %d", a.Sent, a.Status, a.Latency.Count())
	}
}
