package postgres

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
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
	// once, and saleBatchMax how many sales one holds: on two cores a
	// batch costs about 2 ms of Postgres's CPU whatever its size, so at
	// max four slots of up to 32 sales did 20-30 % more sales than eight
	// of up to 16, and the fixed rate's p99 did not suffer
	// (docs/decisions.md, "Empty rollup triggers; fewer, larger sale
	// batches").
	saleBatchesInFlight = 4
	saleBatchMax        = 2 * batchMax
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
	s.batches = groupcommit.NewLingering(saleBatchMax, saleBatchesInFlight, saleBatchLinger, s.flushSales)
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

// The one write path of sales. A batch of sales (one sale is a batch of
// one; the sale endpoint and the processor's payments both come here) is
// recorded in rounds: one statement reads every sale's snapshot with its
// customer locked (qSaleSnapshots), ledger.PlanSale decides each sale,
// and one statement writes every planned sale with all that follows from
// it (qWriteSales): the customer a first sale's click brings, the
// tracking log, the customer's conversion, the platform fee and the
// commission. The brand webhooks of the round take one more statement
// when the program has endpoints for them. Nothing is written before a
// sale knows its answer, so a refusal leaves nothing behind. A sale that
// would read what an earlier sale of its round writes (the same customer,
// the click of a customer being created, the same transaction id) waits
// for the next round, which reads it again: every sale sees the ones
// before it, as if each had been written alone.

func saleStatements(db *DB) *preparedStatements {
	return newPreparedStatements(db, qSaleSnapshots, qWriteSales)
}

// saleItem is one sale through the write path, and what became of it.
type saleItem struct {
	sale ledger.Sale
	// customerID is the customer the processor attributed the sale to (0:
	// found by the sale's key or click).
	customerID int64
	now        time.Time
	// fallback is how far the plan is lowered (ledger.SalePlan.Fallbacks)
	// after its full write failed, of fallbacks possible.
	fallback, fallbacks int
	// base is a test sale's made-up transaction id; attempt counts the
	// ids found taken.
	base    string
	attempt int
	// clickResolved: the sale's click was read from the queue's record and
	// written, and is not looked for there again.
	clickResolved bool

	// The outcome in the transaction, answered once it commits.
	plan    ledger.SalePlan
	outcome ledger.SaleOutcome
	answer  error
	msgs    []ledger.OutboxMessage
	// err is the failure of the transaction that recorded the sale.
	err error
}

// reset forgets an outcome: a transaction run again starts afresh.
func (it *saleItem) reset() {
	*it = saleItem{sale: it.sale, customerID: it.customerID, now: it.now, fallback: it.fallback,
		base: it.base, attempt: it.attempt}
}

// answered is the call's answer.
func (it *saleItem) answered() (*ledger.SaleResult, error) {
	switch {
	case it.err != nil:
		return nil, it.err
	case it.answer != nil:
		return nil, it.answer
	case it.outcome.Answer != nil:
		return nil, it.outcome.Answer
	}
	return it.outcome.Result, nil
}

// writeFailed is a write statement Postgres refused (not a conflict, a
// deadlock or a cancelled call): the sale is tried again alone, then with
// its plan lowered.
type writeFailed struct{ err error }

func (e *writeFailed) Error() string { return "sale write: " + e.err.Error() }
func (e *writeFailed) Unwrap() error { return e.err }

// errClickCustomerRaced: a concurrent sale of the same click created its
// customer first (and committed). The transaction is aborted; run again,
// the sale finds that customer.
var errClickCustomerRaced = errors.New("the click's customer was created by a concurrent sale")

// recordSales records sales in tx, round by round, and leaves each one's
// answer and outbox messages on it. An error rolls everything back.
func (s *SaleService) recordSales(ctx context.Context, tx *sqlx.Tx, items []*saleItem) error {
	for _, it := range items {
		it.reset()
	}
	for round := items; len(round) > 0; {
		snaps, err := s.readSnapshots(ctx, tx, round)
		if err != nil {
			return err
		}
		var planned, later []*saleItem
		claimed := map[string]bool{}
		for i, it := range round {
			if snaps[i] == nil {
				it.answer = notFound("program")
				continue
			}
			if queued, err := s.resolveQueuedClick(ctx, tx, it, snaps[i]); err != nil {
				return err
			} else if queued {
				later = append(later, it)
				continue
			}
			plan := ledger.PlanSale(it.sale, *snaps[i], s.feePercent, it.now)
			if plan.Refusal != nil {
				it.answer = plan.Refusal
				continue
			}
			fallbacks := plan.Fallbacks()
			if it.fallbacks = len(fallbacks); it.fallback > 0 && it.fallbacks > 0 {
				plan = fallbacks[min(it.fallback, it.fallbacks)-1]
			}
			if keys := writeKeys(plan); claims(claimed, keys) {
				later = append(later, it)
				continue
			}
			it.plan = plan
			planned = append(planned, it)
		}
		retry, err := s.writePlanned(ctx, tx, planned)
		if err != nil {
			return err
		}
		round = append(later, retry...)
	}
	return nil
}

// writeKeys are what a planned sale writes that a later sale of its
// round may read: its transaction id and its customer (or the click of
// the customer it creates).
func writeKeys(p ledger.SalePlan) []string {
	keys := []string{"txn:" + p.Sale.TransactionID}
	switch c := p.Customer; {
	case c == nil:
	case p.NewCustomer:
		keys = append(keys, "click:"+c.ClickID)
	default:
		keys = append(keys, "customer:"+strconv.FormatInt(c.ID, 10))
	}
	return keys
}

// claims marks keys as claimed, unless one already is (and then marks
// none).
func claims(claimed map[string]bool, keys []string) bool {
	for _, k := range keys {
		if claimed[k] {
			return true
		}
	}
	for _, k := range keys {
		claimed[k] = true
	}
	return false
}

// resolveQueuedClick writes the click of a sale whose click the edge
// acknowledged but the clicks worker has not written yet (read from the
// edge's record of it); the sale is then read again. It reports whether
// the sale must be read again: it wrote the click, or the worker did
// between the snapshot and the record's read (the worker deletes a
// click's record once its row is committed, see resolveClick).
func (s *SaleService) resolveQueuedClick(ctx context.Context, tx *sqlx.Tx, it *saleItem, snap *ledger.SaleSnapshot) (bool, error) {
	if s.pending == nil || it.clickResolved || it.sale.IsTest || snap.Customer != nil || snap.Click != nil ||
		snap.DuplicateOf != 0 || it.sale.ClickID == "" {
		return false, nil
	}
	at, ok := ledger.ClickTime(it.sale.ClickID)
	if !ok {
		return false, nil
	}
	it.clickResolved = true
	c, err := s.pending.PendingClick(ctx, it.sale.ClickID)
	if ledger.ErrorCode(err) == ledger.ENotFound {
		if _, err := storedClick(ctx, tx, nil, it.sale.ClickID, at); errors.Is(err, sql.ErrNoRows) {
			return false, nil
		} else if err != nil {
			return false, err
		}
		return true, nil
	} else if err != nil {
		return false, err
	}
	return true, insertClick(ctx, tx, c)
}

// writePlanned writes the planned sales of a round and answers them; it
// returns the test sales whose made-up id was taken, to try under the
// next one.
func (s *SaleService) writePlanned(ctx context.Context, tx *sqlx.Tx, planned []*saleItem) ([]*saleItem, error) {
	if len(planned) == 0 {
		return nil, nil
	}
	written, err := s.writeSales(ctx, tx, planned)
	if err != nil {
		return nil, err
	}
	var retry []*saleItem
	var rows []outboxRow
	var owners []*saleItem
	for i, it := range planned {
		out, err := it.plan.Outcome(written[i])
		if err != nil {
			return nil, err
		}
		if out.Taken {
			it.attempt++
			if next, ok := it.plan.WithTestID(it.base, it.attempt+1); ok {
				it.sale.TransactionID = next.Sale.TransactionID
				retry = append(retry, it)
				continue
			}
			it.answer = duplicateOf(ctx, tx, it.plan.Sale.TransactionID)
			if ledger.ErrorCode(it.answer) == "" {
				return nil, it.answer
			}
			continue
		}
		it.outcome = out
		for _, ev := range out.Events {
			more, err := webhookRows(ev.Type, ev.Data, ev.Endpoints, it.now)
			if err != nil {
				return nil, err
			}
			rows = append(rows, more...)
			for range more {
				owners = append(owners, it)
			}
		}
	}
	msgs, err := insertOutboxRows(ctx, tx, rows, planned[0].now)
	if err != nil {
		return nil, err
	}
	for i, m := range msgs {
		owners[i].msgs = append(owners[i].msgs, m)
	}
	return retry, nil
}

// duplicateOf is the 409 of a transaction id whose insert conflicted. The
// conflicting sale is committed by then (an insert waits for the
// transaction that holds the id), so a fresh statement reads its id.
func duplicateOf(ctx context.Context, tx *sqlx.Tx, transactionID string) error {
	var id int64
	err := tx.QueryRowContext(ctx, `SELECT id FROM sales WHERE processor_event_id = $1`, transactionID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("sale %q conflicted but cannot be read", transactionID)
	} else if err != nil {
		return err
	}
	return ledger.DuplicateSale(id)
}
