// Package ratelimit counts requests in fixed one-minute windows, per bucket
// and caller key, as the spec's Limits section describes: per server
// instance in memory by default ([Memory]), or shared by every instance
// through Redis ([Redis]).
//
// Windows are aligned to the clock (a window starts at a whole minute), so
// X-RateLimit-Reset is the same instant for every caller and the memory
// store can drop a whole window at once, which keeps it bounded.
package ratelimit

import (
	"context"
	"time"
)

// Window is the length of every rate-limit window: the spec's limits are
// per minute.
const Window = time.Minute

// Store counts hits of a key within a window.
type Store interface {
	// Incr adds one hit to key in the window starting at windowStart and
	// returns the hits counted so far in that window, this one included.
	Incr(ctx context.Context, key string, windowStart time.Time) (int64, error)
}

// Result is the verdict on one request, with what the X-RateLimit headers
// report.
type Result struct {
	Allowed   bool
	Limit     int
	Remaining int
	Reset     time.Time // end of the current window
}

// RetryAfterSeconds is the whole number of seconds (at least 1) until the
// window resets.
func (r Result) RetryAfterSeconds(now time.Time) int {
	s := int((r.Reset.Sub(now) + time.Second - 1) / time.Second)
	if s < 1 {
		return 1
	}
	return s
}

// Limiter applies limits over a Store.
type Limiter struct {
	store Store
	now   func() time.Time
}

// New returns a limiter over store using the given clock (time.Now when nil).
func New(store Store, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	return &Limiter{store: store, now: now}
}

// Now is the limiter's clock.
func (l *Limiter) Now() time.Time { return l.now() }

// Allow counts one request of key against limit. When the store fails the
// request is allowed (a limiter outage must not take the API down) and the
// error is returned for logging.
func (l *Limiter) Allow(ctx context.Context, key string, limit int) (Result, error) {
	now := l.now()
	start := now.Truncate(Window)
	res := Result{Limit: limit, Reset: start.Add(Window)}
	n, err := l.store.Incr(ctx, key, start)
	if err != nil {
		res.Allowed, res.Remaining = true, limit
		return res, err
	}
	res.Allowed = n <= int64(limit)
	if rem := int64(limit) - n; rem > 0 {
		res.Remaining = int(rem)
	}
	return res, nil
}
