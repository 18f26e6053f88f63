package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/partnertrack/partnertrack/cmd/loadgen/internal/drive"
	"github.com/partnertrack/partnertrack/cmd/loadgen/internal/stack"
)

// drainRun is one measured drain of a click backlog by a fresh worker.
type drainRun struct {
	rollups bool
	clicks  int64         // the accepted clicks of the backlog
	took    time.Duration // from the worker's start to the last click in Postgres
	ok      bool          // every accepted click reached Postgres within drainWait
	// tallied is how long after the drain the worker's session tally had
	// counted the backlog's visitors (with the rollups only; the tally
	// yields to click batches waiting in the queues); untallied: not
	// within drainWait.
	tallied   time.Duration
	untallied bool
}

// rate is the run's clicks per second.
func (r drainRun) rate() float64 {
	if !r.ok || r.took <= 0 {
		return 0
	}
	return float64(r.clicks) / r.took.Seconds()
}

// rollupDrain measures what the rollup trigger costs the click worker
// (issue 25): the edge takes a backlog of drainClicks clicks with the
// worker stopped, each click a visitor session of its own (the worst
// case for unique visitors), then a fresh worker drains it into
// Postgres, with the clicks' rollup trigger disabled or enabled. Four
// rounds, off, on, on, off, so that neither side always runs on the
// warmer machine; the cost compares the better run of each side.
func (b *bench) rollupDrain(ctx context.Context, n *node, p drive.Program) error {
	defer b.clickTrigger(context.WithoutCancel(ctx), true)
	var runs []drainRun
	for round, on := range []bool{false, true, true, false} {
		name := drainName(on, round)
		b.settle(ctx, name)
		if err := b.clickTrigger(ctx, on); err != nil {
			return err
		}
		run, err := b.drainOnce(ctx, n, p, on, round)
		if err != nil {
			return err
		}
		runs = append(runs, run)
		value := fmt.Sprintf("%d clicks in %s: %s", run.clicks, run.took.Round(10*time.Millisecond), drive.Rate(run.rate()))
		switch {
		case !run.ok:
			value = fmt.Sprintf("not drained: %d clicks, not all in Postgres after %s", run.clicks, b.p.drainWait)
		case run.untallied:
			value += fmt.Sprintf("; visitors not all tallied %s after", b.p.drainWait)
		case on:
			value += fmt.Sprintf("; visitors tallied %s after", run.tallied.Round(10*time.Millisecond))
		}
		b.fact(name, value)
	}
	cost, off, on := drainCost(runs)
	b.target("rollup writes' cost on the click worker",
		fmt.Sprintf("%.1f %% of its drain rate (%s with the rollups, %s without, better of 2 runs each; %d clicks a run, each a new session)",
			100*cost, drive.Rate(on), drive.Rate(off), b.p.drainClicks),
		fmt.Sprintf("≤ %g %%", 100*targets.rollupDrainCost), drainMet(runs))
	return nil
}

func drainName(on bool, round int) string {
	state := "off"
	if on {
		state = "on"
	}
	return fmt.Sprintf("worker drain, rollups %s (%d)", state, round/2+1)
}

// drainOnce stops the worker, posts the backlog, starts a worker and
// times it until every accepted click is in Postgres.
func (b *bench) drainOnce(ctx context.Context, n *node, p drive.Program, on bool, round int) (drainRun, error) {
	run := drainRun{rollups: on}
	before, err := b.clicksIn(ctx, p.ID)
	if err != nil {
		return run, err
	}
	n.stopWorker()
	res := drive.Run(ctx, drive.Options{Workers: b.cfg.Conns, Duration: b.p.drainWait, Limit: b.p.drainClicks},
		drive.ClicksNewSessions(drive.NewClient(n.addr, b.cfg.Conns), p, int64(30+round)<<20, fmt.Sprintf("%s%d", b.tag, round)))
	run.clicks = res.Success()
	if err := b.startWorker(n); err != nil {
		return run, err
	}
	start := time.Now()
	run.ok = b.waitDrained(ctx, p.ID, before+run.clicks, start.Add(b.p.drainWait))
	run.took = time.Since(start)
	if on && run.ok {
		drained := time.Now()
		run.untallied = !b.waitTallied(ctx, drained.Add(b.p.drainWait))
		run.tallied = time.Since(drained)
	}
	return run, nil
}

// waitDrained waits until the worker has no click batch left and then
// until the program has want clicks in Postgres. Asking Redis first keeps
// the wait off Postgres while the worker drains: counting a growing table
// every few milliseconds would take Postgres time from the drain
// measured. Only the click queues count: a session tally running on the
// maintenance queue when the last batch is stored is not the drain's.
func (b *bench) waitDrained(ctx context.Context, programID, want int64, deadline time.Time) bool {
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if busy, err := stack.BusyClickTasks(b.cfg.RedisURL, b.ns); err == nil && busy == 0 {
			if got, err := b.clicksIn(ctx, programID); err == nil && got >= want {
				return true
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// waitTallied waits until no session is left pending for the tally.
func (b *bench) waitTallied(ctx context.Context, deadline time.Time) bool {
	for time.Now().Before(deadline) && ctx.Err() == nil {
		var pending bool
		if err := b.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM rollup_pending_sessions)`).Scan(&pending); err == nil && !pending {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// clickTrigger enables or disables the clicks' rollup trigger in the
// bench's database.
func (b *bench) clickTrigger(ctx context.Context, on bool) error {
	verb := "DISABLE"
	if on {
		verb = "ENABLE"
	}
	_, err := b.db.ExecContext(ctx, `ALTER TABLE clicks `+verb+` TRIGGER clicks_rollup`)
	return err
}

// drainAlone runs the drain comparison alone (BENCH_ONLY=drain).
func (b *bench) drainAlone(ctx context.Context) error {
	n, err := b.startNode("bench", b.cfg.RedisURL, true)
	if err != nil {
		return err
	}
	defer n.stop()
	w, err := b.provision(ctx, n)
	if err != nil {
		return fmt.Errorf("provision: %w", err)
	}
	return b.rollupDrain(ctx, n, w.drain)
}
