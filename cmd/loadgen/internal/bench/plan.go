package bench

import "time"

// plan is how long and how hard each phase runs.
type plan struct {
	ceiling       time.Duration // each HTTP ceiling, max mode
	raw           time.Duration // the raw sale transaction baseline
	saleMax       time.Duration // sales (and refunds) at max
	saleRate      float64       // sales (and refunds) at a fixed rate…
	saleRateFor   time.Duration // …for this long
	aux           time.Duration // leads and Stripe events at max
	clickMax      time.Duration // click intake at max
	aof           time.Duration // click intake at max on each private Redis, per round
	sustainedRate float64
	sustained     time.Duration
	listingClicks int64
	listing       time.Duration
	listingRate   float64
	performance   time.Duration // the performance endpoint's three queries, at listingRate
	drainWait     time.Duration // how long to wait for a click backlog to reach Postgres
	outage        time.Duration // Redis killed this long under clicks…
	outageSteady  time.Duration // …with this long of clicks before and after
}

func planFor(quick bool) plan {
	if quick {
		return plan{ceiling: 2 * time.Second, raw: 2 * time.Second, saleMax: 3 * time.Second, saleRate: 1000,
			saleRateFor: 5 * time.Second, aux: 2 * time.Second, clickMax: 4 * time.Second, aof: 2 * time.Second,
			sustainedRate: 10000, sustained: 10 * time.Second, listingClicks: 1_000_000, listing: 3 * time.Second,
			listingRate: 100, performance: 3 * time.Second, drainWait: 60 * time.Second, outage: 3 * time.Second, outageSteady: time.Second}
	}
	return plan{ceiling: 10 * time.Second, raw: 10 * time.Second, saleMax: 10 * time.Second, saleRate: 1000,
		saleRateFor: 20 * time.Second, aux: 5 * time.Second, clickMax: 10 * time.Second, aof: 6 * time.Second,
		sustainedRate: 10000, sustained: 60 * time.Second, listingClicks: 10_000_000, listing: 10 * time.Second,
		listingRate: 100, performance: 6 * time.Second, drainWait: 120 * time.Second, outage: 10 * time.Second, outageSteady: 3 * time.Second}
}

// perKey is how many sales one program key takes in a phase: with the
// refunds of those sales, 100 calls, under the limit of 120 a minute even
// when the sales and their refunds fall in the same minute.
const perKey = 50

// maxSaleRate bounds the sales a max phase can make, to size the number
// of programs (keys) it spreads over.
const maxSaleRate = 4000

// salePrograms is how many programs a sale phase of d at rate (0: max)
// needs so that no key meets its limit.
func salePrograms(d time.Duration, rate float64) int {
	if rate <= 0 {
		rate = maxSaleRate
	}
	return int(d.Seconds()*rate)/perKey + 1
}
