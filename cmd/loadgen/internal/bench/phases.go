package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/partnertrack/partnertrack/cmd/loadgen/internal/drive"
	"github.com/partnertrack/partnertrack/cmd/loadgen/internal/stack"
)

// The dashboard's pages run at their readRate, at most pageRate: a page
// calls the API in process with its session's token, and the API's
// per-token limits (readiness: 30 a minute) allow pageRate a second over
// pageSessions sessions.
const (
	pageRate     = 15 // pages a second: a busy team, far under the API's per-token limits…
	pageSessions = 40 // …spread over this many sessions
)

// maxLeadRate bounds the leads a max phase can send, to size the clicks
// made for them beforehand.
const maxLeadRate = 3000

// world is the provisioned programs, by use.
type world struct {
	*drive.World
	salesMax, salesRate          []drive.Program // sales then refunds; keys spread so none meets its limit
	saleRateCap                  float64         // the fixed rate salesRate has keys enough for
	clickMax, sustained, listing drive.Program
	leads                        drive.Program
	drain                        drive.Program // the rollups' drain comparison
	aof                          [len(aofModes)]drive.Program
}

// measureService runs every phase against the real binaries.
func (b *bench) measureService(ctx context.Context) error {
	b.say("== edge and worker")
	n, err := b.startNode("bench", b.cfg.RedisURL, true)
	if err != nil {
		return err
	}
	w, err := b.provision(ctx, n)
	if err != nil {
		return fmt.Errorf("provision: %w", err)
	}
	// Click intake right after the second round of ceilings, and sales
	// right after the second raw baseline: each as near in time to its
	// ceiling as can be.
	b.say("== ceilings again")
	if err := b.ceilings(ctx); err != nil {
		return fmt.Errorf("ceilings: %w", err)
	}
	b.say("== clicks at max")
	if err := b.clickIntake(ctx, n, w); err != nil {
		return err
	}
	b.say("== raw sale transaction again")
	if err := b.rawBaseline(ctx); err != nil {
		return fmt.Errorf("raw sale transaction: %w", err)
	}
	b.say("== sales, leads, Stripe events")
	b.settle(ctx, "sales at max")
	salesMax, salesRate := b.sales(ctx, n, w)
	b.settle(ctx, "leads")
	b.aux(ctx, n, w)
	b.say("== sustained clicks")
	b.settle(ctx, "sustained clicks")
	if err := b.sustainedClicks(ctx, n, w); err != nil {
		return err
	}
	b.say("== clicks at max again")
	b.settle(ctx, "clicks at max (2)")
	if err := b.clickIntake(ctx, n, w); err != nil {
		return err
	}
	b.say("== worker drain with and without the rollup trigger")
	if err := b.rollupDrain(ctx, n, w.drain); err != nil {
		return fmt.Errorf("rollups' drain comparison: %w", err)
	}
	b.say("== Redis AOF")
	if err := b.aofCost(ctx, w); err != nil {
		return fmt.Errorf("AOF comparison: %w", err)
	}
	b.say("== Redis Cluster and REDIS_WAIT_REPLICAS")
	if err := b.redisScale(ctx); err != nil {
		return fmt.Errorf("Redis Cluster and REDIS_WAIT_REPLICAS: %w", err)
	}
	b.say("== clicks through a Redis kill")
	b.settle(ctx, "clicks through a Redis kill")
	if err := b.redisKill(ctx); err != nil {
		return fmt.Errorf("Redis kill: %w", err)
	}
	b.say("== refunds")
	b.settle(ctx, "refunds at max")
	b.refunds(ctx, n, salesMax, salesRate)
	b.say("== listing")
	b.settle(ctx, "listing")
	if err := b.listingRun(ctx, n, w); err != nil {
		return fmt.Errorf("listing: %w", err)
	}
	edgePeak, err := n.edge.PeakRSS()
	if err != nil {
		return err
	}
	workerPeak, err := n.peakWorkerRSS()
	if err != nil {
		return err
	}
	b.fact("edge peak RSS (whole run)", mb(edgePeak))
	b.fact("worker peak RSS (whole run)", mb(workerPeak))
	b.target("worker RSS bounded", mb(workerPeak)+" peak over the whole run", "≤ "+mb(targets.workerRSS), workerPeak <= targets.workerRSS)
	n.stop()
	return nil
}

// provision creates the programs of every phase through the operator API.
func (b *bench) provision(ctx context.Context, n *node) (*world, error) {
	a := salePrograms(b.p.saleMax, 0)
	// The fixed rate is a share of the better raw sale transaction, and
	// its second run comes after the provisioning: keys for a second run
	// up to 1.5× the first (a wider gap is noted as the machine's speed
	// changing, see ceilingDrift).
	rateCap := shareOf(targets.moneyShare, max(maxSaleRate, 1.5*b.ceil["raw"]))
	r := salePrograms(b.p.saleRateFor, rateCap)
	const singles = 5 + len(aofModes) // clicks at max, sustained, listing, leads, drain and the AOF runs
	c := drive.NewClient(n.addr, 16)
	start := time.Now()
	pw, err := drive.Provision(ctx, c, drive.ProvisionOptions{OperatorToken: b.opToken, Tag: b.tag,
		Programs: a + r + singles, Accounts: true, SeedClicks: 2, Concurrency: 8})
	if err != nil {
		return nil, err
	}
	ps := pw.Programs
	w := &world{World: pw, salesMax: ps[:a], salesRate: ps[a : a+r], clickMax: ps[a+r], sustained: ps[a+r+1],
		listing: ps[a+r+2], leads: ps[a+r+3], drain: ps[a+r+4], saleRateCap: rateCap}
	copy(w.aof[:], ps[a+r+5:])
	// Every seed click in Postgres, so that each phase's count starts at 2.
	want := int64(2 * len(ps))
	if err := b.waitSeedClicks(ctx, want); err != nil {
		return nil, err
	}
	b.say("provisioned %d programs (%d seed clicks) in %s", len(ps), want, time.Since(start).Round(100*time.Millisecond))
	return w, nil
}

// sales measures sales at max and at the fixed rate, on programs of
// their own, and returns them for the refunds.
func (b *bench) sales(ctx context.Context, n *node, w *world) (*drive.Sales, *drive.Sales) {
	conns := b.cfg.Conns
	max := drive.NewSales(drive.NewClient(n.addr, conns), w.salesMax, "txn-"+b.tag+"-max", conns)
	room := int64(len(w.salesMax) * perKey) // more sales would leave their refunds over the keys' limit
	limit := room
	if b.cfg.SalesMax > 0 {
		limit = min(b.cfg.SalesMax, room)
	}
	res := drive.Run(ctx, drive.Options{Workers: conns, Duration: b.p.saleMax, Limit: limit}, max.Do)
	row := drive.Row{Name: "sales at max", Result: res, Ceiling: "raw tx", Base: b.ceil["raw"]}
	switch {
	case b.cfg.SalesMax > 0 && limit == b.cfg.SalesMax:
		row.Note = fmt.Sprintf("stopped at %d sales (--sales-max)", b.cfg.SalesMax)
	case res.Sent >= room:
		row.Note = fmt.Sprintf("stopped at %d sales, the room of its %d keys", room, len(w.salesMax))
	}
	b.row(row)
	b.target("sales at max", b.maxMeasured(row), fmt.Sprintf("≥ %.2f× raw tx, all answered 2xx", targets.salesMax),
		atMaxMet(res, b.ceil["raw"], targets.salesMax))

	b.settle(ctx, "sales at fixed rate")
	b.moneyRate = shareOf(targets.moneyShare, b.ceil["raw"])
	if b.moneyRate < 1 { // a rate of 0 would run at max
		b.moneyRate = 1
	}
	if b.moneyRate > w.saleRateCap {
		b.note("sales and refunds at %s rather than %s: the programs were made for the first raw sale transaction's rate",
			drive.Rate(w.saleRateCap), drive.Rate(b.moneyRate))
		b.moneyRate = w.saleRateCap
	}
	pool := drive.PoolSize(b.moneyRate) * 2
	rate := drive.NewSales(drive.NewClient(n.addr, pool), w.salesRate, "txn-"+b.tag+"-rate", pool)
	res = drive.Run(ctx, drive.Options{Rate: b.moneyRate, Workers: pool, Duration: b.p.saleRateFor, Slow: targets.money.p99}, rate.Do)
	b.row(drive.Row{Name: "sales at " + b.moneyShare(), Result: res, Note: slowNote(res, targets.money.p99)})
	b.target("sales at "+b.moneyShare(), b.rateMeasured(res), targets.money.want(), targets.money.met(res))
	return max, rate
}

// moneyShare names the sales' and refunds' fixed rate: its share of the
// raw sale transaction and the rate itself.
func (b *bench) moneyShare() string {
	return fmt.Sprintf("%.1f× raw tx (%s)", targets.moneyShare, drive.Rate(b.moneyRate))
}

// maxMeasured describes a max run for its target line.
func (b *bench) maxMeasured(row drive.Row) string {
	res := row.Result
	return fmt.Sprintf("%.3f× %s (%s of %s), %d of %d 2xx", row.Ratio(), row.Ceiling, drive.Rate(res.Throughput()), drive.Rate(row.Base),
		res.Success(), res.Sent)
}

// slowNote says where a fixed-rate run's answers slower than its p99
// bound fell (a tail in the first second is a start-up burst).
func slowNote(res *drive.Result, p99 time.Duration) string {
	return "slower than " + drive.Ms(p99) + " by second of the run: " + res.SlowSeconds()
}

// refunds refunds the sales of both sale phases, with the keys that made
// them (each key has room for its sales and their refunds in one minute),
// the fixed-rate ones at the sales' rate.
func (b *bench) refunds(ctx context.Context, n *node, max, rate *drive.Sales) {
	conns := b.cfg.Conns
	madeMax := int64(len(max.Made()))
	res := drive.Run(ctx, drive.Options{Workers: conns, Duration: b.p.saleMax, Limit: madeMax}, max.Refunds())
	row := drive.Row{Name: "refunds at max", Result: res, Ceiling: "raw tx", Base: b.ceil["raw"],
		Note: fmt.Sprintf("%d sales to refund", madeMax)}
	b.row(row)
	b.target("refunds at max", b.maxMeasured(row), fmt.Sprintf("≥ %.2f× raw tx, all answered 2xx", targets.refundsMax),
		atMaxMet(res, b.ceil["raw"], targets.refundsMax))

	b.settle(ctx, "refunds at fixed rate")
	pool := drive.PoolSize(b.moneyRate) * 2
	madeRate := int64(len(rate.Made()))
	res = drive.Run(ctx, drive.Options{Rate: b.moneyRate, Workers: pool, Duration: b.p.saleRateFor, Limit: madeRate, Slow: targets.money.p99},
		rate.Refunds())
	b.row(drive.Row{Name: "refunds at " + b.moneyShare(), Result: res,
		Note: fmt.Sprintf("%d sales to refund; %s", madeRate, slowNote(res, targets.money.p99))})
	b.target("refunds at "+b.moneyShare(), b.rateMeasured(res), targets.money.want(), targets.money.met(res))
}

// aux measures server-mode leads and Stripe events at max (no targets).
func (b *bench) aux(ctx context.Context, n *node, w *world) {
	conns := 16
	c := drive.NewClient(n.addr, conns)
	clicks := drive.NewClickIDs(c, w.leads, conns)
	drive.Run(ctx, drive.Options{Workers: conns, Duration: time.Minute, Limit: int64(maxLeadRate * b.p.aux.Seconds())}, clicks.Do)
	if _, _, ok := b.waitClicks(ctx, w.leads.ID, int64(len(clicks.IDs())), b.p.drainWait); !ok {
		b.note("leads: not every click to lead on was in Postgres before the leads")
	}
	res := drive.Run(ctx, drive.Options{Workers: conns, Duration: b.p.aux}, drive.Leads(c, w.leads, clicks.IDs(), b.tag))
	b.row(drive.Row{Name: "leads at max", Result: res, Note: "server mode, one click each"})
	res = drive.Run(ctx, drive.Options{Workers: conns, Duration: b.p.aux}, drive.Stripe(drive.NewClient(n.addr, conns), w.salesMax, b.secret))
	b.row(drive.Row{Name: "Stripe events at max", Result: res, Note: "stored, then enqueued"})
}

// rateMeasured describes a fixed-rate run for its target line.
func (b *bench) rateMeasured(res *drive.Result) string {
	return fmt.Sprintf("p99 %s, %s, %.1f %% late (%d), %d unsent, %d of %d 2xx", drive.Ms(res.Latency.Quantile(0.99)),
		drive.Rate(res.Throughput()), 100*lateShare(res), res.Late, res.Unsent, res.Success(), res.Sent)
}

// clickIntake measures click intake at max over many client addresses
// and how long until every accepted click is in Postgres. The worker is
// stopped meanwhile, as the enqueue ceiling has no consumer either (the
// sustained run measures intake and drain together); it starts again
// when the load stops, and the drain is timed from then. It runs twice,
// right after the second ceilings and after the sustained clicks, and
// the target takes the better run, as each ceiling does: other work on
// the machine only ever lowers a figure, and the better of two runs on
// one side only would tilt the ratio.
func (b *bench) clickIntake(ctx context.Context, n *node, w *world) error {
	conns := b.cfg.Conns
	before, err := b.clicksIn(ctx, w.clickMax.ID)
	if err != nil {
		return err
	}
	n.stopWorker()
	cpuFrom := n.cpuMark()
	res := drive.Run(ctx, drive.Options{Workers: conns, Duration: b.p.clickMax},
		drive.Clicks(drive.NewClient(n.addr, conns), []drive.Program{w.clickMax}, 0))
	cpu := cpuPerRequest(cpuFrom, n.cpuMark(), res.Success(), false)
	stopped := time.Now()
	if err := b.startWorker(n); err != nil {
		return err
	}
	_, got, ok := b.waitClicks(ctx, w.clickMax.ID, before+res.Success(), b.p.drainWait)
	took := time.Since(stopped)
	note := fmt.Sprintf("worker stopped during the run; all %d accepted clicks in Postgres %s after the load (worker start included)",
		res.Success(), took.Round(10*time.Millisecond))
	if !ok {
		note = fmt.Sprintf("worker stopped during the run; only %d of %d accepted clicks in Postgres %s after the load",
			got-before, res.Success(), took.Round(time.Second))
	}
	round := len(b.clickRuns) + 1
	if bare := b.ceil["bare"]; bare > 0 {
		note = fmt.Sprintf("%.2f× bare fiber; %s", res.Throughput()/bare, note)
	}
	note += "; " + cpu
	row := drive.Row{Name: fmt.Sprintf("clicks at max (%d)", round), Result: res, Ceiling: "enqueue", Base: b.ceil["enqueue"], Note: note}
	b.row(row)
	b.clickRuns = append(b.clickRuns, res)
	if round == 1 {
		// The target takes its place now and its figure from the better
		// of the two runs, once the second one has run.
		b.clickTarget = len(b.targets)
		b.target("click intake", "", "", false)
		return nil
	}
	best := b.clickRuns[0]
	for _, r := range b.clickRuns[1:] {
		if r.Throughput() > best.Throughput() {
			best = r
		}
	}
	b.targets[b.clickTarget] = Target{Name: "click intake",
		Measured: fmt.Sprintf("%.3f× fiber+enqueue, %.3f× bare fiber (%s, better of %d runs; ceilings %s and %s), p99 %s, %d of %d 2xx",
			best.Throughput()/b.ceil["enqueue"], best.Throughput()/b.ceil["bare"], drive.Rate(best.Throughput()), len(b.clickRuns),
			drive.Rate(b.ceil["enqueue"]), drive.Rate(b.ceil["bare"]), drive.Ms(best.Latency.Quantile(0.99)), best.Success(), best.Sent),
		Want: fmt.Sprintf("≥ %.2f× fiber+enqueue and ≥ %.2f× bare fiber, p99 ≤ %s, all answered 2xx", targets.clickEnqueue, targets.clickBare,
			drive.Ms(targets.clickP99)),
		OK: clickIntakeMet(best, b.ceil["enqueue"], b.ceil["bare"])}
	return nil
}

// sustainedClicks runs clicks at targets.sustainedShare of the
// fiber+enqueue ceiling while sampling the backlog (accepted clicks not
// yet in Postgres, and tasks in the namespace's queues), then waits for
// the last accepted click.
func (b *bench) sustainedClicks(ctx context.Context, n *node, w *world) error {
	rate := shareOf(targets.sustainedShare, b.ceil["enqueue"])
	if rate <= 0 {
		return fmt.Errorf("sustained clicks: no fiber+enqueue ceiling to take a share of")
	}
	before, err := b.clicksIn(ctx, w.sustained.ID)
	if err != nil {
		return err
	}
	inserted, err := b.clicksBase(ctx)
	if err != nil {
		return err
	}
	// Twice the pool a server within its p99 bound needs, as for sales:
	// a request starts late when the service is slow for a while, not
	// when one answer is. The pool's requests share the connections of
	// the max runs, as a load balancer's keep-alive pool would carry the
	// clicks of many visitors to an edge, and as the ceiling this rate is
	// a share of was measured; a request waiting for a free connection
	// has the wait in its latency (docs/decisions.md, "Sustained clicks
	// over the balancer's connections").
	pool := drive.PoolSize(rate) * 2
	conns := min(b.cfg.Conns, pool)
	var accepted counter
	sampler := newBacklogSampler(b, inserted, &accepted)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); sampler.run(ctx, stop) }()
	cpuFrom := n.cpuMark()
	res := drive.Run(ctx, drive.Options{Rate: rate, Workers: pool, Conns: conns, Duration: b.p.sustained, Accepted: &accepted,
		Slow: targets.sustained.p99}, drive.Clicks(drive.NewClient(n.addr, conns), []drive.Program{w.sustained}, 1<<20))
	took, got, ok := b.waitClicks(ctx, w.sustained.ID, before+res.Success(), b.p.drainWait)
	cpu := cpuPerRequest(cpuFrom, n.cpuMark(), res.Success(), true) // the drain included
	close(stop)
	wg.Wait()
	edgePeak, err := n.edge.PeakRSS()
	if err != nil {
		return err
	}
	workerPeak, _ := n.peakWorkerRSS()
	name := fmt.Sprintf("clicks at %.1f× fiber+enqueue (%s) for %s", targets.sustainedShare, drive.Rate(rate), b.p.sustained)
	drain := fmt.Sprintf("all in Postgres %s after", took.Round(10*time.Millisecond))
	if !ok {
		drain = fmt.Sprintf("%d of %d in Postgres %s after", got-before, res.Success(), took.Round(time.Second))
	}
	b.row(drive.Row{Name: name, Result: res, Note: fmt.Sprintf("backlog max %d clicks (%d queued tasks), %s; %s; %s",
		sampler.maxLag, sampler.maxTasks, drain, cpu, slowNote(res, targets.sustained.p99))})
	run := sustainedRun{res: res, rate: rate, backlog: sampler.maxLag, drained: ok, drain: took}
	b.target(fmt.Sprintf("sustained clicks at %.1f× fiber+enqueue (%s)", targets.sustainedShare, drive.Rate(rate)),
		fmt.Sprintf("%s, backlog max %d, %s", b.rateMeasured(res), sampler.maxLag, drain),
		fmt.Sprintf("%s, backlog ≤ %d (%s of load), all in Postgres ≤ %s after", targets.sustained.want(), backlogBound(rate),
			targets.sustainedBacklog, targets.sustainedDrain),
		sustainedMet(run))
	b.target("edge RSS at full click load", mb(edgePeak)+" peak after clicks at max and sustained", "≤ "+mb(targets.edgeRSS), edgePeak <= targets.edgeRSS)
	b.fact("worker peak RSS after clicks", mb(workerPeak))
	return nil
}

// aofModes are the AOF phase's Redis settings, the first the baseline the
// others are a share of.
var aofModes = [...]stack.Persistence{stack.NoPersistence, stack.AOFEverySec, stack.AOFAlways}

// aofCost measures click intake at max on private redis-servers, one
// without persistence, one with AOF everysec and one with AOF always (as
// docker-compose.yml runs it), with no worker draining them (the clicks
// stay in the private Redis, which is discarded). Two rounds alternate
// them, and each keeps its better run, so that other work on the machine
// weighs on all alike.
func (b *bench) aofCost(ctx context.Context, w *world) error {
	var best [len(aofModes)]float64
	for round := 1; round <= 2; round++ {
		for i, persist := range aofModes {
			thr, err := b.aofRun(ctx, w.aof[i], persist, round)
			if err != nil {
				return err
			}
			best[i] = max(best[i], thr)
		}
	}
	if best[0] == 0 {
		return nil
	}
	for i, persist := range aofModes[1:] {
		b.fact(persist.String()+" cost on click intake", fmt.Sprintf("%.2f× the throughput without persistence (%s vs %s, better of two rounds each)",
			best[i+1]/best[0], drive.Rate(best[i+1]), drive.Rate(best[0])))
	}
	return nil
}

// aofRun is one click intake run on a fresh private Redis.
func (b *bench) aofRun(ctx context.Context, p drive.Program, persist stack.Persistence, round int) (float64, error) {
	name := fmt.Sprintf("aof-%s-%d", strings.ReplaceAll(persist.String(), " ", "-"), round)
	dir, err := mkdir(b.tmp, "redis-"+name)
	if err != nil {
		return 0, err
	}
	r, err := stack.StartRedis(dir, persist, b.tmp)
	if err != nil {
		return 0, err
	}
	b.procs = append(b.procs, r.Process)
	defer r.Stop()
	// Intake only, as in the ceiling: no worker drains this Redis.
	n, err := b.startNode(name, r.URL, false)
	if err != nil {
		return 0, err
	}
	defer n.stop()
	res := drive.Run(ctx, drive.Options{Workers: b.cfg.Conns, Duration: b.p.aof},
		drive.Clicks(drive.NewClient(n.addr, b.cfg.Conns), []drive.Program{p}, int64(2+round)<<20))
	b.row(drive.Row{Name: fmt.Sprintf("clicks at max, Redis %s (%d)", persist, round), Result: res, Ceiling: "enqueue", Base: b.ceil["enqueue"]})
	return res.Throughput(), nil
}

// listingAlone runs the listing phase alone: the dashboard listing on the
// bulk-loaded clicks, then the performance endpoint on their rollups.
func (b *bench) listingAlone(ctx context.Context) error {
	n, err := b.startNode("bench", b.cfg.RedisURL, true)
	if err != nil {
		return err
	}
	defer n.stop()
	w, err := b.provision(ctx, n)
	if err != nil {
		return fmt.Errorf("provision: %w", err)
	}
	b.say("== listing")
	b.settle(ctx, "listing")
	return b.listingRun(ctx, n, w)
}

// listingRun loads the listing program's clicks straight into Postgres
// and measures each query of the dashboard listing at its readRate.
func (b *bench) listingRun(ctx context.Context, n *node, w *world) error {
	took, err := stack.LoadClicks(ctx, b.dbURL, stack.Clicks{ProgramID: w.listing.ID, PartnerID: w.listing.PartnerID,
		LinkID: w.listing.LinkID, N: b.p.listingClicks, Span: 50 * 24 * time.Hour, Workers: 2})
	if err != nil {
		return err
	}
	b.fact("listing clicks loaded", fmt.Sprintf("%d in %s", b.p.listingClicks, took.Round(time.Second)))
	c := drive.NewClient(n.addr, 64)
	queries := drive.ListingQueries(w.listing.ID, time.Now())
	listing := func(q drive.ListingQuery) drive.Do { return drive.Listing(c, q, w.OwnerToken) }
	rate := b.readRate(ctx, "listing", queries, listing, 0)
	for _, q := range queries {
		b.readRun(ctx, "listing: "+q.Name, fmt.Sprintf("listing %s on %s clicks", q.Name, millions(b.p.listingClicks)),
			q.Path, rate, b.p.listing/time.Duration(len(queries)), targets.listing, listing(q))
	}
	return b.performanceRun(ctx, c, w)
}

// performanceRun writes the rollups of the listing program's loaded
// clicks (the load bypasses the triggers that keep them) and measures the
// performance endpoint for 90 days, all, and the top partners, each at
// its readRate; issue 25 sets the p99 of each.
func (b *bench) performanceRun(ctx context.Context, c *drive.Client, w *world) error {
	took, err := stack.LoadClickRollups(ctx, b.dbURL, w.listing.ID)
	if err != nil {
		return err
	}
	b.fact("listing click rollups written", took.Round(time.Second).String())
	queries := drive.PerformanceQueries(w.listing.ID)
	performance := func(q drive.ListingQuery) drive.Do { return drive.Listing(c, q, w.OwnerToken) }
	rate := b.readRate(ctx, "performance", queries, performance, 0)
	for _, q := range queries {
		b.readRun(ctx, "performance: "+q.Name, fmt.Sprintf("performance %s on %s clicks", q.Name, millions(b.p.listingClicks)),
			q.Path, rate, b.p.performance/time.Duration(len(queries)), targets.performance, performance(q))
	}
	return b.pagesRun(ctx, c, w)
}

// pagesRun measures the dashboard's overview and partners pages of the
// listing program at their readRate, at most pageRate. A page calls the
// API in process with the session's token, so the calls spread over
// pageSessions sessions to stay under the API's per-token limits.
func (b *bench) pagesRun(ctx context.Context, c *drive.Client, w *world) error {
	sessions, err := drive.OwnerSessions(c, b.opToken, w.World, pageSessions)
	if err != nil {
		return err
	}
	queries := drive.PageQueries(w.listing.ID)
	page := func(q drive.ListingQuery) drive.Do { return drive.Page(c, q, sessions) }
	rate := b.readRate(ctx, "pages", queries, page, pageRate)
	for _, q := range queries {
		b.readRun(ctx, "page: "+q.Name, fmt.Sprintf("%s page on %s clicks", q.Name, millions(b.p.listingClicks)),
			q.Path, rate, b.p.performance/2, targets.page, page(q))
	}
	return nil
}

// readRate measures each query of a dashboard read on one connection,
// back to back, for the plan's probe, and returns the fixed rate the
// read's rows run at: readRate of the slowest query's rate, at most
// ceiling when above 0. Every query of the read runs at the one rate, so
// that their rows compare.
func (b *bench) readRate(ctx context.Context, read string, queries []drive.ListingQuery, do func(drive.ListingQuery) drive.Do, ceiling float64) float64 {
	serial, slowest := 0.0, ""
	for _, q := range queries {
		res := drive.Run(ctx, drive.Options{Workers: 1, Duration: b.p.probe}, do(q))
		if thr := res.Throughput(); slowest == "" || thr < serial {
			serial, slowest = thr, q.Name
		}
	}
	rate := readRate(serial, ceiling)
	how := fmt.Sprintf("%.1f× %s (%s, the slowest on one connection back to back)", targets.readShare, drive.Rate(serial), slowest)
	if ceiling > 0 {
		how += fmt.Sprintf(", at most %s", drive.Rate(ceiling))
	}
	b.fact(read+" rate", fmt.Sprintf("%s: %s", drive.Rate(rate), how))
	return rate
}

// readRun measures one dashboard query at rate for d against its bound,
// as a row (with the machine's busy share while it ran) and a target.
func (b *bench) readRun(ctx context.Context, row, target, path string, rate float64, d time.Duration, bound rateBound, do drive.Do) {
	res := drive.Run(ctx, drive.Options{Rate: rate, Workers: drive.PoolSize(rate), Duration: d, Slow: bound.p99}, do)
	note := path
	if spent, ok := b.cpu.Between(res.Started, res.Started.Add(res.Elapsed)); ok {
		note += fmt.Sprintf("; machine %.0f %% busy", 100*spent.BusyShare())
	}
	b.row(drive.Row{Name: fmt.Sprintf("%s at %s", row, drive.Rate(rate)), Result: res, Note: note})
	b.target(fmt.Sprintf("%s at %s", target, drive.Rate(rate)), b.rateMeasured(res), bound.want(), bound.met(res))
}

func millions(n int64) string {
	if n%1_000_000 == 0 {
		return fmt.Sprintf("%dM", n/1_000_000)
	}
	return fmt.Sprintf("%d", n)
}
