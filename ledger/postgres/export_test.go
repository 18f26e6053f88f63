package postgres

import (
	"context"

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

// RecordSaleCareful records a sale on the careful path only (savepoints
// around the commission and the tracking log), for tests that compare it
// with the lean path RecordSale takes first.
func (s *SaleService) RecordSaleCareful(ctx context.Context, req ledger.SaleRequest) (*ledger.SaleResult, error) {
	return s.record(ctx, req, false)
}
