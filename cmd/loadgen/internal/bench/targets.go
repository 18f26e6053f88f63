package bench

import (
	"fmt"
	"time"

	"github.com/partnertrack/partnertrack/cmd/loadgen/internal/drive"
)

// rateBound is what a fixed-rate run must meet: every request sent and
// answered 2xx, at most a share late of them started late (more than
// drive.Options.LateAfter after their due time), and the p99, measured
// from the due times, within p99. A run where most requests were late
// fails on the late bound alone, whatever its p99.
type rateBound struct {
	p99  time.Duration
	late float64
}

// maxLate is the share of a fixed-rate run's requests that may start late.
const maxLate = 0.01

// targetTable is every figure the bench holds the service to. The rates
// of the fixed-rate phases are shares of ceilings measured in the same
// run, so that a target asks as much of a machine at half the speed as of
// a fast one (issue 29).
type targetTable struct {
	clickEnqueue float64       // click intake at max ≥ this × the fiber+enqueue ceiling…
	clickBare    float64       // …and ≥ this × the bare fiber ceiling…
	clickP99     time.Duration // …with its p99 within this

	sustainedShare   float64       // sustained clicks at this × the fiber+enqueue ceiling
	sustained        rateBound     // (the worker draining all along)
	sustainedBacklog time.Duration // accepted clicks not yet in Postgres ≤ this much of the load
	sustainedDrain   time.Duration // every click in Postgres ≤ this after the load

	moneyShare float64   // sales and refunds at this × the raw sale transaction
	money      rateBound // each of them
	salesMax   float64   // sales at max ≥ this × the raw sale transaction
	refundsMax float64   // refunds at max ≥ this × the raw sale transaction

	// readShare is the share of its one-connection throughput a dashboard
	// read runs at (readRate).
	readShare   float64
	listing     rateBound // each of the listing's four queries
	performance rateBound // each of the performance endpoint's three (issue 25)
	page        rateBound // each dashboard page (issue 27)

	outage rateBound // clicks at outageRate through a Redis kill (and none lost)

	// rollupDrainCost bounds what the clicks' rollup trigger costs the
	// click worker: 1 − its drain rate with the trigger over without
	// (issue 25).
	rollupDrainCost float64

	edgeRSS, workerRSS int64 // peak RSS
}

// targets are issue 29's (issues 25 and 27 for the performance endpoint,
// the rollups' cost and the pages).
var targets = targetTable{
	clickEnqueue: 1.5, clickBare: 0.6, clickP99: 8 * time.Millisecond,

	sustainedShare:   0.5,
	sustained:        rateBound{p99: 20 * time.Millisecond, late: maxLate},
	sustainedBacklog: 5 * time.Second, sustainedDrain: 5 * time.Second,

	moneyShare: 0.3,
	money:      rateBound{p99: 20 * time.Millisecond, late: maxLate},
	salesMax:   1.5, refundsMax: 1.2,

	readShare:   0.5,
	listing:     rateBound{p99: 20 * time.Millisecond, late: maxLate},
	performance: rateBound{p99: 20 * time.Millisecond, late: maxLate},
	page:        rateBound{p99: 50 * time.Millisecond, late: maxLate},

	outage: rateBound{p99: 50 * time.Millisecond, late: maxLate},

	rollupDrainCost: 0.10,

	edgeRSS: 150 << 20, workerRSS: 256 << 20,
}

// lateShare is the share of a run's requests that started late.
func lateShare(res *drive.Result) float64 {
	if res.Sent+res.Unsent == 0 {
		return 0
	}
	return float64(res.Late) / float64(res.Sent+res.Unsent)
}

// met tells whether a fixed-rate run met the bound.
func (rb rateBound) met(res *drive.Result) bool {
	return res.Sent > 0 && res.Unsent == 0 && res.Success() == res.Sent &&
		lateShare(res) <= rb.late && res.Latency.Quantile(0.99) <= rb.p99
}

// want is the bound as the target line gives it.
func (rb rateBound) want() string {
	return fmt.Sprintf("≤ %g %% late, p99 ≤ %s, all sent and answered 2xx", 100*rb.late, drive.Ms(rb.p99))
}

// shareOf is the rate of a phase run at share of a ceiling (0 when the
// ceiling was not measured).
func shareOf(share, ceiling float64) float64 {
	if ceiling <= 0 {
		return 0
	}
	return share * ceiling
}

// readRate is the fixed rate of a dashboard read whose slowest query went
// at serial a second on one connection, back to back, at most ceiling
// when above 0 (and at least 1 a second). That probe took at most the
// whole machine, so a share of its rate takes at most that share of the
// machine: readShare (0.5) keeps the reads under half load however fast
// or busy the machine is, and however the query spreads over processes
// (Postgres's parallel workers included).
func readRate(serial, ceiling float64) float64 {
	rate := targets.readShare * serial
	if ceiling > 0 {
		rate = min(rate, ceiling)
	}
	return max(rate, 1)
}

// atMaxMet tells whether a max run reached ratio × its ceiling with every
// answer 2xx.
func atMaxMet(res *drive.Result, ceiling, ratio float64) bool {
	return ceiling > 0 && res.Sent > 0 && res.Success() == res.Sent && res.Throughput() >= ratio*ceiling
}

// clickIntakeMet tells whether the click intake at max met both of its
// ratios (to the fiber+enqueue and to the bare fiber ceiling) and its p99.
func clickIntakeMet(res *drive.Result, enqueue, bare float64) bool {
	return atMaxMet(res, enqueue, targets.clickEnqueue) && atMaxMet(res, bare, targets.clickBare) &&
		res.Latency.Quantile(0.99) <= targets.clickP99
}

// sustainedRun is what the sustained clicks measured.
type sustainedRun struct {
	res     *drive.Result
	rate    float64       // the rate asked
	backlog int64         // the most accepted clicks not yet in Postgres
	drained bool          // every accepted click reached Postgres…
	drain   time.Duration // …this long after the load
}

// backlogBound is the backlog allowed at rate: sustainedBacklog of load.
func backlogBound(rate float64) int64 {
	return int64(rate * targets.sustainedBacklog.Seconds())
}

// sustainedMet tells whether the sustained clicks met their rate bound,
// kept up with the rate, kept the backlog within its bound and had every
// click in Postgres within sustainedDrain.
func sustainedMet(s sustainedRun) bool {
	return s.rate > 0 && targets.sustained.met(s.res) && s.res.Throughput() >= 0.98*s.rate &&
		s.backlog <= backlogBound(s.rate) && s.drained && s.drain <= targets.sustainedDrain
}

// outageMet tells whether the clicks through a Redis kill met their rate
// bound and every accepted click was stored exactly once.
func outageMet(res *drive.Result, stored int64, drained bool) bool {
	return targets.outage.met(res) && drained && stored == res.Success()
}

// drainCost is the share of the click worker's drain rate the rollup
// trigger costs, from the better run with it (on) and without it (off);
// 1 when a side has no drained run.
func drainCost(runs []drainRun) (cost, off, on float64) {
	for _, r := range runs {
		if r.rollups {
			on = max(on, r.rate())
		} else {
			off = max(off, r.rate())
		}
	}
	if off <= 0 || on <= 0 {
		return 1, off, on
	}
	return 1 - on/off, off, on
}

// drainMet tells whether every run drained its backlog and the rollups
// cost at most rollupDrainCost of the drain rate.
func drainMet(runs []drainRun) bool {
	if len(runs) == 0 {
		return false
	}
	for _, r := range runs {
		if !r.ok {
			return false
		}
	}
	cost, _, _ := drainCost(runs)
	return cost <= targets.rollupDrainCost
}
