package groupcommit

import (
	"context"
	"errors"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is a flush that records its batches and can be held shut.
type recorder struct {
	mu      sync.Mutex
	batches [][]int
	gate    chan struct{} // when set, each flush waits for a value
	started chan int      // when set, each flush sends its size on entry
	fail    func(batch []int) error
}

func held() *recorder {
	return &recorder{gate: make(chan struct{}, 100), started: make(chan int, 100)}
}

func (r *recorder) flush(items []int) error {
	if r.started != nil {
		r.started <- len(items)
	}
	if r.gate != nil {
		<-r.gate
	}
	r.mu.Lock()
	r.batches = append(r.batches, append([]int(nil), items...))
	r.mu.Unlock()
	if r.fail != nil {
		return r.fail(items)
	}
	return nil
}

func (r *recorder) sizes() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]int, len(r.batches))
	for i, b := range r.batches {
		out[i] = len(b)
	}
	return out
}

// waitFor polls cond until it holds; it fails the test after a generous
// bound rather than asserting on timing.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never reached: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestQuietCallerFlushesAlone(t *testing.T) {
	t.Parallel()
	r := &recorder{}
	c := New(10, 1, r.flush)
	for i := 0; i < 3; i++ {
		if err := c.Add(context.Background(), i); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing was in flight at any Add: three batches of one, no waiting.
	if got := r.sizes(); len(got) != 3 || got[0] != 1 || got[1] != 1 || got[2] != 1 {
		t.Fatalf("batches %v, want three of one", got)
	}
}

func TestConcurrentCallersShareOneBatch(t *testing.T) {
	t.Parallel()
	r := held()
	c := New(500, 1, r.flush)
	var wg sync.WaitGroup
	errs := make(chan error, 101)
	add := func(i int) {
		defer wg.Done()
		errs <- c.Add(context.Background(), i)
	}
	wg.Add(1)
	go add(0)   // opens the first flush, held by the gate
	<-r.started // the first flush is held
	for i := 1; i <= 100; i++ {
		wg.Add(1)
		go add(i)
	}
	waitFor(t, "100 items waiting behind the held flush", func() bool { return c.Waiting() == 100 })
	r.gate <- struct{}{} // the first batch
	r.gate <- struct{}{} // the second: every waiting item
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := r.sizes(); len(got) != 2 || got[0] != 1 || got[1] != 100 {
		t.Fatalf("batches %v, want [1 100]", got)
	}
}

func TestFullBatchFlushesWhileAnotherIsInFlight(t *testing.T) {
	t.Parallel()
	r := held()
	c := New(10, 2, r.flush)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); c.Add(context.Background(), -1) }()
	<-r.started
	for i := 0; i < 25; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); c.Add(context.Background(), i) }()
	}
	// One slot is free: the first 10 flush at once; the next 10 wait full
	// behind both slots; 5 wait open.
	waitFor(t, "15 items waiting", func() bool { return c.Waiting() == 15 })
	for i := 0; i < 5; i++ {
		r.gate <- struct{}{}
	}
	wg.Wait()
	sizes := r.sizes()
	sort.Ints(sizes)
	if len(sizes) != 4 || sizes[0] != 1 || sizes[1] != 5 || sizes[2] != 10 || sizes[3] != 10 {
		t.Fatalf("batches %v, want 1, 10, 10 and 5 (in any order)", sizes)
	}
}

// An eager committer flushes each item at once while a slot is free, and
// batches only the items that arrive while every slot is busy.
func TestEagerCommitterBatchesOnlyWhenEverySlotIsBusy(t *testing.T) {
	t.Parallel()
	r := held()
	c := NewEager(10, 2, r.flush)
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); c.Add(context.Background(), i) }()
		<-r.started // each of the first two has a slot of its own at once
	}
	for i := 2; i < 8; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); c.Add(context.Background(), i) }()
	}
	waitFor(t, "6 items waiting behind the two busy slots", func() bool { return c.Waiting() == 6 })
	for i := 0; i < 3; i++ {
		r.gate <- struct{}{}
	}
	wg.Wait()
	sizes := r.sizes()
	sort.Ints(sizes)
	if len(sizes) != 3 || sizes[0] != 1 || sizes[1] != 1 || sizes[2] != 6 {
		t.Fatalf("batches %v, want 1, 1 and 6 (in any order)", sizes)
	}
}

// A lingering committer does not let a stalled flush hold back the items
// behind it: once they have waited the linger, they take a free slot.
func TestLingeringBatchTakesAFreeSlotPastAStalledFlush(t *testing.T) {
	t.Parallel()
	r := held()
	c := NewLingering(10, 2, 200*time.Millisecond, r.flush)
	// The test fires the linger timer itself once all three items wait:
	// a real timer could fire before a slow machine added the third.
	timers := make(chan func(), 10)
	c.afterFunc = func(d time.Duration, f func()) {
		if d != 200*time.Millisecond {
			t.Errorf("linger timer of %v", d)
		}
		timers <- f
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); c.Add(context.Background(), 0) }()
	<-r.started // the first flush stalls
	for i := 1; i <= 3; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); c.Add(context.Background(), i) }()
	}
	waitFor(t, "3 items waiting", func() bool { return c.Waiting() == 3 })
	if len(timers) != 1 {
		t.Fatalf("%d linger timers started, want one for the open batch", len(timers))
	}
	go (<-timers)() // the linger passes (a timer runs its function in a goroutine of its own)
	if n := <-r.started; n != 3 {
		t.Fatalf("the lingering batch flushed %d items, want 3", n)
	}
	r.gate <- struct{}{}
	r.gate <- struct{}{}
	wg.Wait()
	sizes := r.sizes()
	sort.Ints(sizes)
	if len(sizes) != 2 || sizes[0] != 1 || sizes[1] != 3 {
		t.Fatalf("batches %v, want 1 and 3", sizes)
	}
}

func TestFailedFlushFailsEveryCallerOfItsBatch(t *testing.T) {
	t.Parallel()
	boom := errors.New("redis down")
	r := held()
	r.fail = func(b []int) error {
		if len(b) > 1 {
			return boom
		}
		return nil
	}
	c := New(500, 1, r.flush)
	var wg sync.WaitGroup
	first := make(chan error, 1)
	wg.Add(1)
	go func() { defer wg.Done(); first <- c.Add(context.Background(), 0) }()
	<-r.started
	errs := make(chan error, 20)
	for i := 1; i <= 20; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- c.Add(context.Background(), i) }()
	}
	waitFor(t, "20 waiting", func() bool { return c.Waiting() == 20 })
	r.gate <- struct{}{}
	r.gate <- struct{}{}
	wg.Wait()
	close(errs)
	if err := <-first; err != nil {
		t.Fatalf("the batch of one failed: %v", err)
	}
	n := 0
	for err := range errs {
		if !errors.Is(err, boom) {
			t.Fatalf("a caller of the failed batch got %v", err)
		}
		n++
	}
	if n != 20 {
		t.Fatalf("%d results", n)
	}
}

func TestPanickingFlushFailsItsBatchAndKeepsGoing(t *testing.T) {
	t.Parallel()
	calls := 0
	c := New(10, 1, func(items []int) error {
		calls++
		if calls == 1 {
			panic("bug")
		}
		return nil
	})
	if err := c.Add(context.Background(), 1); err == nil {
		t.Fatal("a panicking flush reported success")
	}
	if err := c.Add(context.Background(), 2); err != nil {
		t.Fatalf("after a panic: %v", err)
	}
}

func TestCallerGivingUpGetsItsContextError(t *testing.T) {
	t.Parallel()
	r := held()
	c := New(10, 1, r.flush)
	go c.Add(context.Background(), 0)
	<-r.started
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Add(ctx, 1) }()
	waitFor(t, "one waiting", func() bool { return c.Waiting() == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	r.gate <- struct{}{}
	r.gate <- struct{}{}
	waitFor(t, "both batches flushed", func() bool { return len(r.sizes()) == 2 })
}

func BenchmarkGroupCommit(b *testing.B) {
	c := New(500, 4, func(items []int) error {
		time.Sleep(100 * time.Microsecond) // about one loopback Redis round trip
		return nil
	})
	b.SetParallelism(64)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := c.Add(context.Background(), 1); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkGroupCommitPaced is BenchmarkGroupCommit with the edge's
// pacing: batches per op shows how many items each flush carries.
func BenchmarkGroupCommitPaced(b *testing.B) {
	var flushes atomic.Int64
	c := NewPaced(500, 4, 5*time.Millisecond, 32, func(items []int) error {
		flushes.Add(1)
		time.Sleep(100 * time.Microsecond) // about one loopback Redis round trip
		return nil
	})
	b.SetParallelism(64)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := c.Add(context.Background(), 1); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/float64(max(flushes.Load(), 1)), "items/flush")
}

// pacedCommitter is a NewPaced committer on a clock and timers the test
// moves and fires itself; advance moves the clock.
func pacedCommitter(t *testing.T, enough int, gap time.Duration, r *recorder) (c *Committer[int], advance func(time.Duration), timers chan func()) {
	c = NewPaced(100, 2, gap, enough, r.flush)
	var mu sync.Mutex
	now := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	c.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance = func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	timers = make(chan func(), 10)
	c.afterFunc = func(d time.Duration, f func()) {
		if d <= 0 || d > gap {
			t.Errorf("pacing timer of %v with a gap of %v", d, gap)
		}
		timers <- f
	}
	return c, advance, timers
}

// A paced committer flushes a quiet caller at once, and holds the items
// that come within the gap after it for one batch, started by the timer.
func TestPacedBatchWaitsOutTheGap(t *testing.T) {
	t.Parallel()
	r := &recorder{}
	c, advance, timers := pacedCommitter(t, 10, 5*time.Millisecond, r)
	if err := c.Add(context.Background(), 0); err != nil { // the first flush: at once
		t.Fatal(err)
	}
	if len(timers) != 0 {
		t.Fatal("a quiet caller waited for a pacing timer")
	}
	var wg sync.WaitGroup
	for i := 1; i <= 3; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); c.Add(context.Background(), i) }()
	}
	waitFor(t, "3 items waiting", func() bool { return c.Waiting() == 3 })
	if len(timers) != 1 {
		t.Fatalf("%d pacing timers, want one for the open batch", len(timers))
	}
	(<-timers)() // the clock did not move: the batch waits on, under a new timer
	if c.Waiting() != 3 || len(timers) != 1 {
		t.Fatalf("%d items waiting and %d timers after an early timer, want 3 and 1", c.Waiting(), len(timers))
	}
	advance(5 * time.Millisecond) // the gap has passed
	(<-timers)()
	wg.Wait()
	if sizes := r.sizes(); len(sizes) != 2 || sizes[0] != 1 || sizes[1] != 3 {
		t.Fatalf("batches %v, want 1 then 3", sizes)
	}
}

// A batch of enough items does not wait for the gap.
func TestPacedBatchOfEnoughStartsAtOnce(t *testing.T) {
	t.Parallel()
	r := &recorder{}
	c, _, timers := pacedCommitter(t, 3, time.Hour, r)
	if err := c.Add(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 1; i <= 3; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); c.Add(context.Background(), i) }()
	}
	wg.Wait() // no timer fired: the third item made the batch enough
	if sizes := r.sizes(); len(sizes) != 2 || sizes[0] != 1 || sizes[1] != 3 {
		t.Fatalf("batches %v, want 1 then 3", sizes)
	}
	if len(timers) != 1 {
		t.Fatalf("%d pacing timers, want the one the first waiting item armed", len(timers))
	}
}
