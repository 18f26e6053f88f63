package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/partnertrack/partnertrack/cmd/loadgen/internal/drive"
	"github.com/partnertrack/partnertrack/cmd/loadgen/internal/stack"
)

// outageRate is the click rate of the Redis kill: a steady production
// load, well under the intake's ceiling on any machine of this kind, so
// that the figure is the failover's and not saturation's. It stays
// absolute: the phase also runs alone (BENCH_ONLY=redis-kill), without
// the ceilings.
const outageRate = 1000

// redisKill runs clicks at outageRate against an edge and a worker on a
// private Redis (AOF always, as docker-compose runs it), kills Redis
// (SIGKILL) for the plan's outage and restarts it, and measures the click
// latency over the whole run from the intended send times. Every
// accepted click must then be in Postgres exactly once.
func (b *bench) redisKill(ctx context.Context) error {
	dir, err := mkdir(b.tmp, "redis-kill")
	if err != nil {
		return err
	}
	r, err := stack.StartRedis(dir, stack.AOFAlways, b.tmp)
	if err != nil {
		return err
	}
	b.procs = append(b.procs, r.Process)
	n, err := b.startNode("redis-kill", r.URL, true)
	if err != nil {
		return err
	}
	defer n.stop()
	pw, err := drive.Provision(ctx, drive.NewClient(n.addr, 8), drive.ProvisionOptions{OperatorToken: b.opToken, Tag: b.tag + "k",
		Programs: 1, SeedClicks: 2})
	if err != nil {
		return fmt.Errorf("provision: %w", err)
	}
	p := pw.Programs[0]
	_, before, ok := b.waitClicks(ctx, p.ID, 2, b.p.drainWait)
	if !ok {
		return fmt.Errorf("the seed clicks did not reach Postgres")
	}

	steady, outage := b.p.outageSteady, b.p.outage
	killed := make(chan error, 1)
	go func() {
		select {
		case <-time.After(steady):
		case <-ctx.Done():
			killed <- ctx.Err()
			return
		}
		r.Kill()
		select {
		case <-time.After(outage):
		case <-ctx.Done():
		}
		r2, err := stack.StartRedisOn(r.Port, dir, stack.AOFAlways, b.tmp)
		if err == nil {
			b.procs = append(b.procs, r2.Process)
		}
		killed <- err
	}()
	pool := drive.PoolSize(outageRate) * 2
	res := drive.Run(ctx, drive.Options{Rate: outageRate, Workers: pool, Duration: steady + outage + steady, Slow: targets.outage.p99},
		drive.Clicks(drive.NewClient(n.addr, pool), []drive.Program{p}, 5<<20))
	if err := <-killed; err != nil {
		return fmt.Errorf("restart Redis after the kill: %w", err)
	}
	took, got, ok := b.waitClicks(ctx, p.ID, before+res.Success(), b.p.drainWait)
	stored := got - before
	note := fmt.Sprintf("edge and worker on a private Redis (AOF always), killed (SIGKILL) %s into the run for %s; "+
		"%d accepted clicks, %d in Postgres %s after the load; slower than %s by second: %s",
		steady, outage, res.Success(), stored, took.Round(10*time.Millisecond), drive.Ms(targets.outage.p99), res.SlowSeconds())
	name := fmt.Sprintf("clicks at %s through a %s Redis kill", drive.Rate(outageRate), outage)
	b.row(drive.Row{Name: name, Result: res, Note: note})
	b.target(fmt.Sprintf("clicks p99 through a %s Redis kill", outage), b.rateMeasured(res)+fmt.Sprintf(", %d of %d stored once", stored, res.Success()),
		targets.outage.want()+", every accepted click stored once", outageMet(res, stored, ok))
	return nil
}
