package workers

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"
)

// recordingWrite is a write function that records the items of each call
// and can hold its first call until released.
type recordingWrite struct {
	mu      sync.Mutex
	calls   [][]int
	hold    chan struct{} // the first call waits for it when set
	refuses int           // an item that fails every write carrying it
}

func (r *recordingWrite) write(_ context.Context, items []int) (int, error) {
	r.mu.Lock()
	first := len(r.calls) == 0
	r.calls = append(r.calls, slices.Clone(items))
	r.mu.Unlock()
	if first && r.hold != nil {
		<-r.hold
	}
	if r.refuses != 0 && slices.Contains(items, r.refuses) {
		return 0, errors.New("refused")
	}
	return len(items), nil
}

func newTestWriter(r *recordingWrite) *batchWriter[int] {
	return &batchWriter[int]{kind: "clicks", write: r.write, logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// waitFor polls cond with a generous bound; it asserts nothing on timing.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never happened: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestConcurrentTaskBatchesShareOneWrite: while one write runs, the
// batches of the tasks that arrive meanwhile wait, then go out as one
// write, and every task learns that its batch was written.
func TestConcurrentTaskBatchesShareOneWrite(t *testing.T) {
	t.Parallel()
	r := &recordingWrite{hold: make(chan struct{})}
	w := newTestWriter(r)
	const waiting = tasksPerWrite - 1
	errs := make(chan error, waiting+1)
	go func() { errs <- w.Write(context.Background(), []int{0}) }()
	waitFor(t, "the first write started", func() bool { r.mu.Lock(); defer r.mu.Unlock(); return len(r.calls) == 1 })
	for i := 1; i <= waiting; i++ {
		go func(i int) { errs <- w.Write(context.Background(), []int{i, 100 + i}) }(i)
	}
	waitFor(t, "the other batches wait", func() bool { return w.commit.Waiting() == waiting })
	close(r.hold)
	for i := 0; i <= waiting; i++ {
		if err := <-errs; err != nil {
			t.Fatalf("task: %v", err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.calls) != 2 || len(r.calls[1]) != 2*waiting {
		t.Fatalf("writes %v: want the first batch alone, then the %d waiting batches in one write", r.calls, waiting)
	}
}

// TestRefusedBatchDoesNotFailItsNeighbours: when the merged write fails,
// each batch is written on its own; only the batch Postgres refuses fails.
func TestRefusedBatchDoesNotFailItsNeighbours(t *testing.T) {
	t.Parallel()
	r := &recordingWrite{hold: make(chan struct{}), refuses: 13}
	w := newTestWriter(r)
	first := make(chan error, 1)
	go func() { first <- w.Write(context.Background(), []int{0}) }()
	waitFor(t, "the first write started", func() bool { r.mu.Lock(); defer r.mu.Unlock(); return len(r.calls) == 1 })
	results := make(map[int]chan error)
	for n, item := range []int{12, 13, 14} {
		ch := make(chan error, 1)
		results[item] = ch
		go func() { ch <- w.Write(context.Background(), []int{item}) }()
		waitFor(t, "the batch waits", func() bool { return w.commit.Waiting() == n+1 })
	}
	close(r.hold)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for item, ch := range results {
		if err := <-ch; (err != nil) != (item == 13) {
			t.Fatalf("item %d: err %v", item, err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.calls) != 5 || len(r.calls[1]) != 3 {
		t.Fatalf("writes %v: want [0], the three together, then each alone", r.calls)
	}
}

// TestEndedTaskWritesNothing: a task whose context has ended hands
// nothing to the writer; asynq retries it.
func TestEndedTaskWritesNothing(t *testing.T) {
	t.Parallel()
	r := &recordingWrite{}
	w := newTestWriter(r)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Write(ctx, []int{1}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if len(r.calls) != 0 {
		t.Fatalf("writes: %v", r.calls)
	}
}
