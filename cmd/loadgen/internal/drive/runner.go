package drive

// The runner drives a request function either at a fixed arrival rate or
// as fast as a fixed number of workers can, and measures it.
//
// At a fixed rate there is no coordinated omission: request i is due at
// start + i/rate whatever happened before it, its latency is measured
// from that due time (so a stalled server is charged for every request
// that queued behind the stall), and a request that a busy pool could
// only start late is counted as late. The pool is bounded: requests still
// unsent when the drain period after the run ends are counted as unsent,
// never silently dropped.

import (
	"context"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Do sends request number i from worker w and returns its HTTP status (0
// for a transport error). Stop reports that the request source ran dry
// (for example no sale left to refund): the worker ends.
type Do func(ctx context.Context, w int, i int64) (status int, err error)

// ErrStop is returned by a Do whose source ran dry.
var ErrStop = stopError{}

type stopError struct{}

func (stopError) Error() string { return "load: request source exhausted" }

// Options shape a run.
type Options struct {
	Rate    float64 // requests per second; 0 runs as fast as Workers can
	Workers int     // connections (max mode) or pool size (rate mode)
	// Conns, in rate mode, is how many connections the pool's requests
	// share when the client holds fewer than Workers (0: one each); it
	// only names the run.
	Conns    int
	Duration time.Duration // how long requests are started
	Limit    int64         // at most this many requests (0: no limit)
	// Drain bounds how long past Duration a rate run may still send
	// requests that were due before Duration ended (default 10s).
	Drain time.Duration
	// LateAfter is how far past its due time a request may start before
	// it counts as late (default 1ms).
	LateAfter time.Duration
	// Accepted, when set, counts 2xx answers as they arrive (the bench
	// samples it while the run goes on).
	Accepted *atomic.Int64
	// Slow, when set, counts the answers that took longer, by the second
	// of the run they were due in (where a tail comes from).
	Slow time.Duration

	// clock is the wall clock, or in this package's tests a virtual one,
	// so that what they check does not depend on the machine's speed.
	clock clock
}

// clock tells the time and waits for it.
type clock interface {
	Now() time.Time
	// SleepUntil waits until t; false when ctx ended first.
	SleepUntil(ctx context.Context, t time.Time) bool
}

// wallClock is the real time.
type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) SleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Result is what a run measured.
type Result struct {
	Rate     float64 // the requested rate; 0 in max mode
	Workers  int
	Conns    int // Options.Conns
	Started  time.Time
	Elapsed  time.Duration // from the start to the last answer
	Latency  *Histogram
	Status   map[int]int64 // by HTTP status; 0 counts transport errors
	Sent     int64
	Late     int64 // rate mode: started more than LateAfter after due
	Unsent   int64 // rate mode: still unsent when the drain period ended
	FirstErr string
	// SlowBySecond counts answers slower than Options.Slow by the second
	// of the run they were due in.
	SlowBySecond map[int64]int64
}

// Throughput is answers per second over the run.
func (r *Result) Throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Sent) / r.Elapsed.Seconds()
}

// Count is how many answers had one of the statuses.
func (r *Result) Count(statuses ...int) int64 {
	var n int64
	for _, s := range statuses {
		n += r.Status[s]
	}
	return n
}

// SlowSeconds lists the slow answers by the second of the run they were
// due in, in order, as "second:count" ("none" when there were none).
func (r *Result) SlowSeconds() string {
	if len(r.SlowBySecond) == 0 {
		return "none"
	}
	seconds := slices.Sorted(maps.Keys(r.SlowBySecond))
	parts := make([]string, len(seconds))
	for i, sec := range seconds {
		parts[i] = strconv.FormatInt(sec, 10) + ":" + strconv.FormatInt(r.SlowBySecond[sec], 10)
	}
	return strings.Join(parts, " ")
}

// Success counts the 2xx answers.
func (r *Result) Success() int64 {
	var n int64
	for s, c := range r.Status {
		if s >= 200 && s < 300 {
			n += c
		}
	}
	return n
}

// Add merges another run's figures into r (throughput is then over the
// sum of the elapsed times: runs one after the other).
func (r *Result) Add(o *Result) {
	r.Latency.Merge(o.Latency)
	for s, n := range o.Status {
		r.Status[s] += n
	}
	r.Sent += o.Sent
	r.Late += o.Late
	r.Unsent += o.Unsent
	r.Elapsed += o.Elapsed
	if r.FirstErr == "" {
		r.FirstErr = o.FirstErr
	}
	if r.Rate == 0 {
		r.Rate, r.Workers, r.Conns = o.Rate, o.Workers, o.Conns
	}
}

// Due is when request i of a run at rate per second is due, after the start.
func Due(i int64, rate float64) time.Duration {
	return time.Duration(math.Round(float64(i) * float64(time.Second) / rate))
}

// Planned is how many requests a run at rate per second starts in d.
func Planned(d time.Duration, rate float64) int64 {
	return int64(math.Ceil(d.Seconds()*rate - 1e-9))
}

// PoolSize is the default pool for a rate: enough workers to keep
// rate × 25 ms of requests in flight (what a server answering within its
// p99 target needs), at least 16 and at most 512.
func PoolSize(rate float64) int {
	n := int(math.Ceil(rate * 0.025))
	return min(max(n, 16), 512)
}

// workerState is one worker's tally, merged at the end.
type workerState struct {
	start  time.Time
	slow   map[int64]int64
	lat    *Histogram
	status map[int]int64
	sent   int64
	late   int64
	unsent int64
	err    error
	last   time.Time
}

// Run drives do as opts say and returns what it measured. ctx cancels
// the run early (the result covers what was sent).
func Run(ctx context.Context, opts Options, do Do) *Result {
	if opts.Workers <= 0 {
		opts.Workers = 1
		if opts.Rate > 0 {
			opts.Workers = PoolSize(opts.Rate)
		}
	}
	if opts.Drain <= 0 {
		opts.Drain = 10 * time.Second
	}
	if opts.LateAfter <= 0 {
		opts.LateAfter = time.Millisecond
	}
	if opts.clock == nil {
		opts.clock = wallClock{}
	}
	planned := int64(math.MaxInt64)
	if opts.Rate > 0 {
		planned = Planned(opts.Duration, opts.Rate)
	}
	if opts.Limit > 0 && opts.Limit < planned {
		planned = opts.Limit
	}
	var next atomic.Int64
	states := make([]*workerState, opts.Workers)
	start := opts.clock.Now()
	end := start.Add(opts.Duration)
	hardEnd := end.Add(opts.Drain)
	var wg sync.WaitGroup
	for w := range states {
		st := &workerState{start: start, slow: make(map[int64]int64), lat: NewHistogram(), status: make(map[int]int64)}
		states[w] = st
		wg.Add(1)
		go func() {
			defer wg.Done()
			if opts.Rate > 0 {
				st.paced(ctx, w, opts, planned, start, hardEnd, &next, do)
			} else {
				st.flat(ctx, w, opts, planned, end, &next, do)
			}
		}()
	}
	wg.Wait()
	res := &Result{Rate: opts.Rate, Workers: opts.Workers, Conns: opts.Conns, Started: start, Latency: NewHistogram(), Status: make(map[int]int64),
		SlowBySecond: make(map[int64]int64)}
	last := start
	for _, st := range states {
		res.Latency.Merge(st.lat)
		for s, n := range st.status {
			res.Status[s] += n
		}
		res.Sent += st.sent
		res.Late += st.late
		res.Unsent += st.unsent
		for sec, n := range st.slow {
			res.SlowBySecond[sec] += n
		}
		if st.err != nil && res.FirstErr == "" {
			res.FirstErr = st.err.Error()
		}
		if st.last.After(last) {
			last = st.last
		}
	}
	res.Elapsed = last.Sub(start)
	return res
}

// paced sends the requests due at the fixed rate.
func (st *workerState) paced(ctx context.Context, w int, opts Options, planned int64, start, hardEnd time.Time, next *atomic.Int64, do Do) {
	for ctx.Err() == nil {
		i := next.Add(1) - 1
		if i >= planned {
			return
		}
		due := start.Add(Due(i, opts.Rate))
		if wait := due.Sub(opts.clock.Now()); wait > 0 {
			if !opts.clock.SleepUntil(ctx, due) {
				return
			}
		} else if -wait > opts.LateAfter {
			st.late++
		}
		if opts.clock.Now().After(hardEnd) {
			st.unsent++
			continue
		}
		if !st.send(ctx, w, i, due, opts, do) {
			return
		}
	}
}

// flat sends requests back to back until the run's end.
func (st *workerState) flat(ctx context.Context, w int, opts Options, planned int64, end time.Time, next *atomic.Int64, do Do) {
	for ctx.Err() == nil && opts.clock.Now().Before(end) {
		i := next.Add(1) - 1
		if i >= planned {
			return
		}
		if !st.send(ctx, w, i, opts.clock.Now(), opts, do) {
			return
		}
	}
}

// send makes one request and records it; false when the source ran dry.
func (st *workerState) send(ctx context.Context, w int, i int64, from time.Time, opts Options, do Do) bool {
	status, err := do(ctx, w, i)
	if err == ErrStop {
		return false
	}
	now := opts.clock.Now()
	st.last = now
	took := now.Sub(from)
	st.lat.Record(took)
	if opts.Slow > 0 && took > opts.Slow {
		st.slow[int64(from.Sub(st.start)/time.Second)]++
	}
	st.sent++
	st.status[status]++
	if err != nil && st.err == nil {
		st.err = err
	}
	if status >= 200 && status < 300 && opts.Accepted != nil {
		opts.Accepted.Add(1)
	}
	return true
}
