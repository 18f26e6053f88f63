package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/partnertrack/partnertrack/cmd/loadgen/internal/drive"
)

// clicksAlone runs the click phases alone (BENCH_ONLY=clicks), as the
// bench runs them: the ceilings again right before the click intake (the
// better of their two runs is each ceiling), clicks at max, the sustained
// clicks with the worker draining, and clicks at max again, with their
// rows and targets (the click intake takes the better of its two runs).
// It compares the click paths of two builds without the money phases.
func (b *bench) clicksAlone(ctx context.Context) error {
	n, err := b.startNode("bench", b.cfg.RedisURL, true)
	if err != nil {
		return err
	}
	defer n.stop()
	w, err := b.provisionClicks(ctx, n)
	if err != nil {
		return fmt.Errorf("provision: %w", err)
	}
	b.say("== ceilings again")
	if err := b.ceilings(ctx); err != nil {
		return fmt.Errorf("ceilings: %w", err)
	}
	b.say("== clicks at max")
	b.settle(ctx, "clicks at max (1)")
	if err := b.clickIntake(ctx, n, w); err != nil {
		return err
	}
	b.say("== sustained clicks")
	b.settle(ctx, "sustained clicks")
	if err := b.sustainedClicks(ctx, n, w); err != nil {
		return err
	}
	b.say("== clicks at max again")
	b.settle(ctx, "clicks at max (2)")
	return b.clickIntake(ctx, n, w)
}

// aofAlone runs the AOF comparison alone, on programs of its own.
func (b *bench) aofAlone(ctx context.Context) error {
	n, err := b.startNode("bench", b.cfg.RedisURL, true)
	if err != nil {
		return err
	}
	defer n.stop()
	pw, err := drive.Provision(ctx, drive.NewClient(n.addr, 4), drive.ProvisionOptions{OperatorToken: b.opToken, Tag: b.tag,
		Programs: len(aofModes), SeedClicks: 2, Concurrency: 2})
	if err != nil {
		return fmt.Errorf("provision: %w", err)
	}
	w := &world{World: pw}
	copy(w.aof[:], pw.Programs)
	b.say("== Redis AOF")
	return b.aofCost(ctx, w)
}

// provisionClicks creates only the two programs the click phases use
// (clicks at max, sustained), with their seed clicks in Postgres.
func (b *bench) provisionClicks(ctx context.Context, n *node) (*world, error) {
	start := time.Now()
	pw, err := drive.Provision(ctx, drive.NewClient(n.addr, 4), drive.ProvisionOptions{OperatorToken: b.opToken, Tag: b.tag,
		Programs: 2, SeedClicks: 2, Concurrency: 2})
	if err != nil {
		return nil, err
	}
	if err := b.waitSeedClicks(ctx, int64(2*len(pw.Programs))); err != nil {
		return nil, err
	}
	b.say("provisioned %d programs in %s", len(pw.Programs), time.Since(start).Round(100*time.Millisecond))
	return &world{World: pw, clickMax: pw.Programs[0], sustained: pw.Programs[1]}, nil
}

// waitSeedClicks waits until Postgres holds want clicks (every seed
// click), so that each phase's count starts from them.
func (b *bench) waitSeedClicks(ctx context.Context, want int64) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		var got int64
		if err := b.db.QueryRowContext(ctx, `SELECT count(*) FROM clicks`).Scan(&got); err != nil {
			return err
		}
		if got >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d seed clicks in Postgres after 60 s", got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
