// Package groupcommit lets concurrent callers share one write: each
// caller adds its item to the open batch and waits; the batch is flushed
// as soon as no flush is in flight (so a quiet system adds no delay), or
// as soon as it holds MaxBatch items while others are in flight, and every
// caller of a batch gets that batch's result. Under load, one write then
// carries many items while the next batch fills behind it.
//
// The package knows nothing of what a flush does: the edge's click and
// visit pipelines (package traffic, NewPaced) flush to Redis, the
// workers' click and visit tasks that run at the same time share one
// insert, and concurrent sales (NewLingering) and refunds (NewEager)
// share one Postgres transaction (ledger/postgres).
package groupcommit

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Committer groups items into batches and flushes them.
type Committer[T any] struct {
	flush       func(items []T) error
	maxBatch    int
	maxInflight int
	eager       bool          // start a flush whenever a slot is free (NewEager)
	linger      time.Duration // an open batch waits at most this long for a free slot (NewLingering)
	gap         time.Duration // a batch of fewer than enough items starts at least this long after the last start (NewPaced)
	enough      int           // …and a batch of this many starts at once
	// afterFunc starts the linger and pacing timers: time.AfterFunc, or in tests a
	// timer they fire themselves, so that no test depends on how fast the
	// machine runs it.
	afterFunc func(d time.Duration, f func())
	now       func() time.Time // the clock of the pacing: time.Now, or a test's

	mu       sync.Mutex
	open     *batch[T]   // filling; nil when no item waits
	full     []*batch[T] // reached maxBatch while every flush slot was taken
	inflight int
	waiting  int       // items added but not yet handed to a flush
	started  time.Time // when the last flush started (NewPaced)
}

type batch[T any] struct {
	items []T
	done  chan struct{} // closed once err is set
	err   error
	paced bool // a pacing timer will look at this batch (NewPaced)
}

// New returns a committer whose batches hold at most maxBatch items and
// of which at most maxInflight are flushed at once. flush owns its
// deadline: a caller that gives up does not cancel its batch's flush.
func New[T any](maxBatch, maxInflight int, flush func(items []T) error) *Committer[T] {
	if maxBatch < 1 {
		maxBatch = 1
	}
	if maxInflight < 1 {
		maxInflight = 1
	}
	return &Committer[T]{flush: flush, maxBatch: maxBatch, maxInflight: maxInflight,
		afterFunc: func(d time.Duration, f func()) { time.AfterFunc(d, f) }, now: time.Now}
}

// NewEager is New for a flush that is a unit of work of its own (a
// database transaction) rather than one shared write: a batch is flushed
// as soon as any of the maxInflight slots is free, so items share a batch
// only when every slot is busy. Below saturation each item is flushed
// alone at once, in parallel with the others; at saturation the batches
// grow, up to maxBatch, while the slots are busy.
func NewEager[T any](maxBatch, maxInflight int, flush func(items []T) error) *Committer[T] {
	c := New(maxBatch, maxInflight, flush)
	c.eager = true
	return c
}

// NewLingering is New for flushes that can stall (a transaction waiting
// for a lock): an open batch waits for the flush in flight to finish, or
// to fill up, as with New, but no longer than linger while a slot is
// free. A stalled flush then delays the others by linger, not by its
// stall, while under load batches still grow behind the flush in flight.
func NewLingering[T any](maxBatch, maxInflight int, linger time.Duration, flush func(items []T) error) *Committer[T] {
	c := New(maxBatch, maxInflight, flush)
	c.linger = linger
	return c
}

// NewPaced is New for a flush whose cost is paid downstream per batch as
// much as per item (a queued task that a worker must take and
// acknowledge): a batch of fewer than enough items starts no sooner than
// gap after the last flush started. A quiet system still flushes its
// first item at once; under a steady load each batch holds enough items,
// or gap's worth, rather than a round trip's. A batch of enough items
// starts as with New, so that callers who wait on each other (a client
// with a fixed number of connections) are not held to enough per gap.
func NewPaced[T any](maxBatch, maxInflight int, gap time.Duration, enough int, flush func(items []T) error) *Committer[T] {
	c := New(maxBatch, maxInflight, flush)
	c.gap, c.enough = gap, min(max(enough, 1), c.maxBatch)
	return c
}

// tooSoon tells, with c.mu held, whether the open batch b must wait for
// the pacing gap, and if so makes sure a timer will start it.
func (c *Committer[T]) tooSoon(b *batch[T]) bool {
	if c.gap <= 0 || len(b.items) >= c.enough {
		return false
	}
	wait := c.gap - c.now().Sub(c.started)
	if wait <= 0 {
		return false
	}
	if !b.paced {
		b.paced = true
		c.afterFunc(wait, func() { c.flushPaced(b) })
	}
	return true
}

// flushPaced starts b once its pacing gap has passed, if it is still the
// open batch and no flush is in flight (a flush in flight hands it over
// when it ends, as with New).
func (c *Committer[T]) flushPaced(b *batch[T]) {
	c.mu.Lock()
	b.paced = false
	if c.open != b || c.inflight > 0 || c.tooSoon(b) {
		c.mu.Unlock()
		return
	}
	c.open = nil
	c.inflight++
	c.waiting -= len(b.items)
	c.started = c.now()
	c.mu.Unlock()
	c.run(b)
}

// Add puts item in the open batch and returns the error of that batch's
// flush once it is done (nil: the item was written). When ctx ends first,
// Add returns ctx's error; the item may still be written.
func (c *Committer[T]) Add(ctx context.Context, item T) error {
	c.mu.Lock()
	b := c.open
	if b == nil {
		b = &batch[T]{items: make([]T, 0, min(c.maxBatch, 64)), done: make(chan struct{})}
		c.open = b
	}
	b.items = append(b.items, item)
	c.waiting++
	var lead bool
	switch {
	case (c.inflight == 0 && !c.tooSoon(b)) || ((c.eager || len(b.items) >= c.maxBatch) && c.inflight < c.maxInflight):
		c.open = nil
		c.inflight++
		c.waiting -= len(b.items)
		c.started = c.now()
		lead = true
	case len(b.items) >= c.maxBatch:
		c.open = nil
		c.full = append(c.full, b)
	case len(b.items) == 1 && c.linger > 0:
		c.afterFunc(c.linger, func() { c.flushLingering(b) })
	}
	c.mu.Unlock()

	if lead {
		// The caller that opens a flush runs it itself: on a quiet system
		// a click costs no hand-off between goroutines.
		c.run(b)
		return b.err
	}
	select {
	case <-b.done:
		return b.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// flushLingering flushes b if it is still the open batch and a slot is
// free; otherwise b waits for the flush that frees a slot, as any batch.
func (c *Committer[T]) flushLingering(b *batch[T]) {
	c.mu.Lock()
	if c.open != b || c.inflight >= c.maxInflight {
		c.mu.Unlock()
		return
	}
	c.open = nil
	c.inflight++
	c.waiting -= len(b.items)
	c.started = c.now()
	c.mu.Unlock()
	c.run(b)
}

// run flushes b, then hands its flush slot to the next waiting batch, if
// any, in a goroutine of its own (the caller that led b must answer).
func (c *Committer[T]) run(b *batch[T]) {
	b.err = c.safeFlush(b.items)
	close(b.done)
	c.mu.Lock()
	var next *batch[T]
	switch {
	case len(c.full) > 0:
		next = c.full[0]
		c.full[0] = nil
		c.full = c.full[1:]
	case c.open != nil && !c.tooSoon(c.open):
		next = c.open
		c.open = nil
	}
	if next == nil {
		c.inflight--
	} else {
		c.waiting -= len(next.items)
		c.started = c.now()
	}
	c.mu.Unlock()
	if next != nil {
		go c.run(next)
	}
}

// safeFlush turns a panicking flush into its batch's error, so that one
// bad batch cannot leave the committer without a flush in flight.
func (c *Committer[T]) safeFlush(items []T) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("groupcommit: flush panicked: %v", r)
		}
	}()
	return c.flush(items)
}

// Waiting returns how many items are waiting for a flush to start (not
// those being flushed).
func (c *Committer[T]) Waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waiting
}
