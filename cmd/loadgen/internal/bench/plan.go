package bench

import "time"

// plan is how long and how hard each phase runs.
type plan struct {
	ceiling       time.Duration // each HTTP ceiling, max mode
	raw           time.Duration // the raw sale transaction baseline
	saleMax       time.Duration // sales (and refunds) at max
	saleRateFor   time.Duration // sales (and refunds) at targets.moneyShare of the raw sale transaction
	aux           time.Duration // leads and Stripe events at max
	clickMax      time.Duration // click intake at max
	aof           time.Duration // click intake at max on each private Redis, per round
	sustained     time.Duration // clicks at targets.sustainedShare of the fiber+enqueue ceiling
	listingClicks int64
	probe         time.Duration // each dashboard read on one connection, for its rate (readRate)
	listing       time.Duration // the listing's four queries at their rate
	performance   time.Duration // the performance endpoint's three queries at theirs
	drainWait     time.Duration // how long to wait for a click backlog to reach Postgres
	drainClicks   int64         // the backlog each run of the rollups' drain comparison takes
	outage        time.Duration // Redis killed this long under clicks…
	outageSteady  time.Duration // …with this long of clicks before and after
}

func planFor(quick bool) plan {
	if quick {
		return plan{ceiling: 2 * time.Second, raw: 2 * time.Second, saleMax: 3 * time.Second,
			saleRateFor: 5 * time.Second, aux: 2 * time.Second, clickMax: 4 * time.Second, aof: 1300 * time.Millisecond,
			sustained: 8 * time.Second, listingClicks: 1_000_000, probe: 200 * time.Millisecond, listing: 3 * time.Second,
			performance: 3 * time.Second, drainWait: 60 * time.Second, drainClicks: 10_000, outage: 3 * time.Second, outageSteady: time.Second}
	}
	return plan{ceiling: 10 * time.Second, raw: 10 * time.Second, saleMax: 10 * time.Second,
		saleRateFor: 20 * time.Second, aux: 5 * time.Second, clickMax: 10 * time.Second, aof: 4 * time.Second,
		sustained: 60 * time.Second, listingClicks: 10_000_000, probe: time.Second, listing: 10 * time.Second,
		performance: 6 * time.Second, drainWait: 120 * time.Second, drainClicks: 300_000, outage: 10 * time.Second, outageSteady: 3 * time.Second}
}

// perKey is how many sales one program key takes in a phase: with the
// refunds of those sales, 100 calls, under the limit of 120 a minute even
// when the sales and their refunds fall in the same minute.
const perKey = 50

// maxSaleRate bounds the sales a max phase can make, to size the number
// of programs (keys) it spreads over; the phase stops when they are used
// up (a run of 2026-11-27 made 4,942 sales/s, and the refunds of those
// beyond the keys' room were refused with 429).
const maxSaleRate = 6000

// salePrograms is how many programs a sale phase of d at rate (0: max)
// needs so that no key meets its limit.
func salePrograms(d time.Duration, rate float64) int {
	if rate <= 0 {
		rate = maxSaleRate
	}
	return int(d.Seconds()*rate)/perKey + 1
}
