package postgres

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/groupcommit"
)

// SaleService implements ledger.SaleService. Sales that arrive while
// others are being written share a transaction (one BEGIN and one COMMIT,
// one WAL flush, for the batch); a sale alone on a quiet system is written
// in its own transaction at once. Either way it goes through the one
// write path of sale_write.go. When anything fails in a batch, the batch
// is rolled back and each of its sales is recorded alone, so a failure
// answers exactly as it would have alone. A sale is answered only after
// the transaction that wrote it committed.
type SaleService struct {
	db         *DB
	pending    ledger.PendingClicks
	feePercent decimal.Decimal
	logger     *slog.Logger
	after      *afterCommit
	stmts      *preparedStatements
	batches    *groupcommit.Committer[*saleItem]
}

// SaleOptions configure the sale service.
type SaleOptions struct {
	// Pending finds clicks still in the queue; nil resolves clicks from
	// Postgres only.
	Pending ledger.PendingClicks
	// PlatformFeePercent is the operator's fee on each attributed real sale.
	PlatformFeePercent decimal.Decimal
	Logger             *slog.Logger
	// Relay sends the brand webhooks a sale writes to the outbox right
	// after commit; nil leaves them to the outbox sweep.
	Relay ledger.OutboxRelay
}

const (
	// saleBatchesInFlight is how many batch transactions of sales run at
	// once, as many as the pool's connections (docs/decisions.md, "Sixth
	// round"); batches beyond the pool wait for a connection.
	saleBatchesInFlight = 8
	// saleBatchLinger is how long a batch waits to fill while a slot is
	// free: a sale waiting for a lock must not hold back every sale behind
	// it.
	saleBatchLinger = 5 * time.Millisecond
)

// NewSaleService returns the sale service over db.
func NewSaleService(db *DB, opts SaleOptions) *SaleService {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &SaleService{db: db, pending: opts.Pending, feePercent: opts.PlatformFeePercent, logger: opts.Logger,
		after: &afterCommit{relay: opts.Relay, logger: opts.Logger}, stmts: saleStatements(db)}
	s.batches = groupcommit.NewLingering(batchMax, saleBatchesInFlight, saleBatchLinger, s.flushSales)
	return s
}

var _ ledger.SaleService = (*SaleService)(nil)

// RecordSale validates a sale and records it with its batch.
func (s *SaleService) RecordSale(ctx context.Context, req ledger.SaleRequest) (res *ledger.SaleResult, err error) {
	defer wrap(&err, "postgres.RecordSale(program %d)", req.ProgramID)
	now := s.db.now()
	sale, err := req.Validate(now)
	if err != nil {
		return nil, err
	}
	if err := s.stmts.prepare(ctx); err != nil {
		return nil, err
	}
	it := newSaleItem(*sale, 0, now)
	if err := s.batches.Add(ctx, it); err != nil {
		return nil, err
	}
	return it.answered()
}

func newSaleItem(sale ledger.Sale, customerID int64, now time.Time) *saleItem {
	it := &saleItem{sale: sale, customerID: customerID, now: now}
	if sale.GeneratedID {
		it.base = sale.TransactionID
	}
	return it
}

// WaitRelays blocks until the relays started after commits have finished
// (graceful shutdown, tests).
func (s *SaleService) WaitRelays() { s.after.wait() }

// flushSales records a batch of sales in one transaction, or each alone
// when the batch fails or holds one sale. A sale alone is recorded inside
// the flush too: the committer must see a flush in flight for as long as
// a sale is being written, or every sale would find none and lead a batch
// of its own.
func (s *SaleService) flushSales(items []*saleItem) error {
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	if len(items) > 1 && s.recordBatch(ctx, items) == nil {
		return nil
	}
	for _, it := range items {
		it.err = s.recordAlone(ctx, it)
	}
	return nil
}

// recordBatch records sales in one transaction, in the order of their
// customers (program, customer key, click id), so that two batches lock
// the customers they share in the same order, and relays their messages
// once it committed. An error rolls the whole batch back.
func (s *SaleService) recordBatch(ctx context.Context, items []*saleItem) error {
	slices.SortFunc(items, func(a, b *saleItem) int {
		return cmp.Or(cmp.Compare(a.sale.ProgramID, b.sale.ProgramID),
			strings.Compare(a.sale.CustomerKey, b.sale.CustomerKey),
			strings.Compare(a.sale.ClickID, b.sale.ClickID),
			strings.Compare(a.sale.TransactionID, b.sale.TransactionID))
	})
	err := s.db.Transact(ctx, func(tx *sqlx.Tx) error { return s.recordSales(ctx, tx, items) })
	if err != nil {
		s.logger.Debug("sale batch rolled back; its sales are recorded one by one", "sales", len(items), "err", err)
		return err
	}
	for _, it := range items {
		s.after.send(it.msgs)
	}
	return nil
}

// recordAlone records a sale in a transaction of its own. A concurrent
// sale that created the customer of the same click first makes it run
// once more (it then finds that customer). A write Postgres refuses is
// tried again with the plan lowered, step by step (ledger.SalePlan.Fallbacks).
func (s *SaleService) recordAlone(ctx context.Context, it *saleItem) error {
	raced := false
	for {
		err := s.db.Transact(ctx, func(tx *sqlx.Tx) error { return s.recordSales(ctx, tx, []*saleItem{it}) })
		var failed *writeFailed
		switch {
		case err == nil:
			s.after.send(it.msgs)
			return nil
		case errors.Is(err, errClickCustomerRaced) && !raced:
			raced = true
		case errors.As(err, &failed) && it.fallback < it.fallbacks:
			s.logger.Warn("sale write failed; writing it with less", "transaction_id", it.sale.TransactionID,
				"fallback", it.fallback+1, "err", failed.err)
			it.fallback++
		default:
			return err
		}
	}
}
