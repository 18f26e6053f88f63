package workers

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/partnertrack/partnertrack/ledger/groupcommit"
)

// The click and visit tasks that run at the same time share one insert:
// a task hands its batch to a batchWriter and waits for the write that
// carries it. Under a backlog the worker then writes hundreds of clicks
// per statement instead of the few dozen the edge put in each task at
// that rate, and one statement's overhead in Postgres is spread over all
// of them. A task is acknowledged only once the write that carried it
// has committed, so nothing is acknowledged that is not stored.
//
// One merged insert runs at a time, so that a large one leaves the edge a
// core on a small shared machine; a faster drain comes from more worker
// processes (docs/decisions.md, "One click insert at a time").
const (
	tasksPerWrite  = 16               // task batches merged into one insert at most
	writesInFlight = 1                // merged inserts running at once
	writeTimeout   = 30 * time.Second // one merged insert, whatever its tasks' deadlines
)

// batchWriter merges the batches of concurrent tasks into one write.
type batchWriter[T any] struct {
	kind   string // "clicks" or "visits", for the log
	write  func(context.Context, []T) (int, error)
	logger *slog.Logger

	once   sync.Once
	commit *groupcommit.Committer[*taskBatch[T]]
}

// taskBatch is one task's items and the outcome of the write that
// carried them.
type taskBatch[T any] struct {
	items []T
	err   error
}

// Write stores items, alone or with the batches of other tasks, and
// returns once they are committed. When ctx ends first it returns ctx's
// error and the task is retried; the items may still be written, which
// the idempotent insert makes harmless.
func (w *batchWriter[T]) Write(ctx context.Context, items []T) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w.once.Do(func() { w.commit = groupcommit.New(tasksPerWrite, writesInFlight, w.flush) })
	b := &taskBatch[T]{items: items}
	if err := w.commit.Add(ctx, b); err != nil {
		return err
	}
	return b.err
}

// flush writes the batches as one insert. When that fails, each batch is
// written on its own, so that one batch Postgres refuses does not fail
// the others with it, every time they meet again on a retry.
func (w *batchWriter[T]) flush(batches []*taskBatch[T]) error {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if len(batches) == 1 {
		_, batches[0].err = w.write(ctx, batches[0].items)
		return nil
	}
	total := 0
	for _, b := range batches {
		total += len(b.items)
	}
	all := make([]T, 0, total)
	for _, b := range batches {
		all = append(all, b.items...)
	}
	n, err := w.write(ctx, all)
	if err == nil {
		w.logger.Debug(w.kind+" batches written", "tasks", len(batches), w.kind, total, "new", n)
		return nil
	}
	w.logger.Warn(w.kind+" batches failed together; writing each alone", "tasks", len(batches), "err", err)
	for _, b := range batches {
		_, b.err = w.write(ctx, b.items)
	}
	return nil
}
