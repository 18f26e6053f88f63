package postgres

import (
	"context"
	"slices"

	"github.com/jmoiron/sqlx"

	"github.com/partnertrack/partnertrack/ledger"
)

// Aliases of unexported helpers for the external tests of this package.
var CustomerForClick = customerForClick

// ResolveClick is resolveClick with unprepared statements.
func ResolveClick(ctx context.Context, tx *sqlx.Tx, pending ledger.PendingClicks, clickID string) (*ledger.Click, error) {
	return resolveClick(ctx, tx, nil, pending, clickID)
}

// CustomerByKey is customerByKey with unprepared statements.
func CustomerByKey(ctx context.Context, tx *sqlx.Tx, programID int64, key string) (*ledger.Customer, error) {
	return customerByKey(ctx, tx, nil, programID, key)
}

// RecordInTx records the requests through the sale write path in the
// caller's transaction, so that a test can read what the transaction did
// (pg_stat_xact_user_tables) before it commits. The statements must be
// prepared first (PrepareStatements), outside the transaction.
func (s *SaleService) RecordInTx(ctx context.Context, tx *sqlx.Tx, reqs []ledger.SaleRequest) error {
	items, err := s.validItems(reqs)
	if err != nil {
		return err
	}
	if err := s.recordSales(ctx, tx, items); err != nil {
		return err
	}
	for _, it := range items {
		if _, err := it.answered(); err != nil {
			return err
		}
	}
	return nil
}

// validItems validates the requests into the write path's items.
func (s *SaleService) validItems(reqs []ledger.SaleRequest) ([]*saleItem, error) {
	items := make([]*saleItem, len(reqs))
	for i, r := range reqs {
		now := s.db.now()
		sale, err := r.Validate(now)
		if err != nil {
			return nil, err
		}
		items[i] = newSaleItem(*sale, 0, now)
	}
	return items, nil
}

// PrepareStatements prepares the sale write's statements.
func (s *SaleService) PrepareStatements(ctx context.Context) error { return s.stmts.prepare(ctx) }

// RecordTogether records the requests as one batch of concurrent sales
// would be (recordBatch, then each alone when it failed) and returns their answers, and how many the batch
// answered from its one transaction (all of them, unless it failed and
// recorded each sale alone).
func (s *SaleService) RecordTogether(ctx context.Context, reqs []ledger.SaleRequest) ([]*ledger.SaleResult, []error, int) {
	if err := s.stmts.prepare(ctx); err != nil {
		panic(err)
	}
	items, err := s.validItems(reqs)
	if err != nil {
		panic(err)
	}
	batched := len(items)
	if err := s.recordBatch(ctx, slices.Clone(items)); err != nil {
		batched = 0
		for _, it := range items {
			it.err = s.recordAlone(ctx, it)
		}
	}
	results := make([]*ledger.SaleResult, len(items))
	errs := make([]error, len(items))
	for i, it := range items {
		results[i], errs[i] = it.answered()
	}
	return results, errs, batched
}

// ApplyTogether applies the refunds as one batch of concurrent refunds
// would be (flushRefunds), then each one the batch left to its caller on
// its own, as ApplyRefund does; it also returns how many the batch
// answered.
func (s *RefundService) ApplyTogether(ctx context.Context, ins []ledger.RefundInput) ([]*ledger.RefundResult, []error, int) {
	if err := s.stmts.prepare(ctx); err != nil {
		panic(err)
	}
	items := make([]*batchedRefund, len(ins))
	for i, in := range ins {
		items[i] = newBatchedRefund(in, s.db.now())
	}
	if err := s.flushRefunds(slices.Clone(items)); err != nil {
		panic(err)
	}
	results := make([]*ledger.RefundResult, len(items))
	errs := make([]error, len(items))
	batched := 0
	for i, it := range items {
		if it.answered {
			batched++
			results[i], errs[i] = it.result, it.err
			continue
		}
		results[i], errs[i] = s.applyAlone(ctx, it.in, it.now)
	}
	return results, errs, batched
}

// Statements whose plans the tests check.
const (
	QProgramKeysByHash = qProgramKeysByHash
	QRefundSnapshots   = qRefundSnapshots
)

// KeyLookupsWaiting is how many key lookups wait for a statement to start.
func (s *ProgramService) KeyLookupsWaiting() int { return s.keyLookups.Waiting() }
