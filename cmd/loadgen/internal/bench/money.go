package bench

import (
	"context"
	"fmt"
)

// money runs the money phases alone (BENCH_ONLY=money), as the bench
// runs them: the raw sale transaction again right before the sales
// (the better of its two runs is the baseline), sales at max and at the
// fixed rate, then refunds of those sales at max and at the fixed rate,
// with their rows and targets. It compares the sale and refund paths of
// two builds without the click phases.
func (b *bench) money(ctx context.Context) error {
	n, err := b.startNode("bench", b.cfg.RedisURL, true)
	if err != nil {
		return err
	}
	defer n.stop()
	w, err := b.provision(ctx, n)
	if err != nil {
		return fmt.Errorf("provision: %w", err)
	}
	b.say("== raw sale transaction again")
	if err := b.rawBaseline(ctx); err != nil {
		return fmt.Errorf("raw sale transaction: %w", err)
	}
	b.say("== sales")
	b.settle(ctx, "sales at max")
	salesMax, salesRate := b.sales(ctx, n, w)
	b.say("== refunds")
	b.settle(ctx, "refunds at max")
	b.refunds(ctx, n, salesMax, salesRate)
	return nil
}
