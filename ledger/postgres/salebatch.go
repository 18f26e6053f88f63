package postgres

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/groupcommit"
)

// Sales that arrive while others are being written share a transaction:
// one BEGIN and one COMMIT (one WAL flush) for the batch instead of one of
// each per sale, so a sale of a known customer costs two statements of
// its own (the read and the write). A sale alone on a quiet system is
// written in its own transaction at once, as before.
//
// Only lean sales are batched, and a sale refused with a 4xx (no
// relationship, duplicate transaction id) leaves nothing behind in the
// shared transaction: a sale of a customer that already exists writes
// nothing before it knows its answer, and neither does the first sale of
// a click already in Postgres, whose one write brings its customer
// (salefirst.go). Any other sale that creates its customer first runs
// inside a savepoint that its refusal rolls back. Test sales are left out
// of the batch untouched and recorded on their own by their callers, in
// parallel. When anything fails in the batch (a lean write Postgres
// refuses, a lost connection, a commit that fails), the whole batch is
// rolled back and every sale of it is recorded on its own, so a failure
// answers exactly as it would have alone. A sale is answered only after the transaction that wrote it
// committed.

const (
	// saleBatchesInFlight is how many batch transactions of sales run at
	// once. A batch starts when none is in flight or when it is full, so
	// batches grow as soon as sales overlap (the clicks' rule, which in
	// make bench gave 2.6–2.8 k sales/s at max and p99 8–16 ms at 1 k/s,
	// against 2.1–2.5 k/s for a batch started whenever a slot is free),
	// but it waits no longer than saleBatchLinger while a slot is free: a
	// sale waiting for a lock must not hold back every sale behind it
	// (fault/edge-sigterm-under-load). Eight, as many as the pool's
	// connections: with four, Postgres's backends sat idle in
	// transaction while the edge sent each batch's statements one by one,
	// and the cores idled 4 % of the time at max; eight ran 3–22 % more
	// sales at max in seven of eight alternated pairs and 27 % fewer in
	// the eighth, a noise as large as the gain (docs/decisions.md, "Sixth
	// round"). Batches beyond the pool wait for a connection.
	saleBatchesInFlight = 8
	saleBatchLinger     = 5 * time.Millisecond
	// refundBatchesInFlight is how many batch transactions of refunds run
	// at once, each started as soon as one of them is free
	// (groupcommit.NewEager): a refund's transaction is longer (its lock
	// order read, three statements, notifications), and with the clicks'
	// committer refunds at 1 k/s waited for one another (p50 4.4 ms, p99
	// 25–33 ms; eager: 1.9 ms and 11–15 ms).
	refundBatchesInFlight = 4
)

// batchedSale is one sale handed to a batch, and what became of it.
type batchedSale struct {
	sale ledger.Sale
	now  time.Time

	// answered tells that the flush recorded the sale (in the batch, or on
	// its own when it was alone) and committed: result and err are the
	// call's answer. Otherwise the caller records the sale on its own.
	answered bool
	result   *ledger.SaleResult
	err      error

	// done, out, msgs and answer are the sale's outcome in the batch's
	// transaction, answered once it commits.
	done   bool
	out    saleOutcome
	msgs   []ledger.OutboxMessage
	answer error
}

func newSaleBatches(s *SaleService) *groupcommit.Committer[*batchedSale] {
	return groupcommit.NewLingering(batchMax, saleBatchesInFlight, saleBatchLinger, s.flushSales)
}

// recordBatched hands a validated sale to the open batch and returns it
// once the batch is done with it (not answered: the caller records it
// alone).
func (s *SaleService) recordBatched(ctx context.Context, sale ledger.Sale, now time.Time) (*batchedSale, error) {
	item := &batchedSale{sale: sale, now: now}
	if err := s.batches.Add(ctx, item); err != nil {
		return nil, err
	}
	return item, nil
}

// flushSales records a batch of sales in one transaction. A sale alone is
// recorded in its own transaction, as without batching, but still inside
// the flush: the committer must see a flush in flight for as long as a
// sale is being written, or every sale would find none and lead a batch
// of its own. The sales are written in the order of their customers
// (program, customer key, click id), so that two batches lock the
// customers they share in the same order.
func (s *SaleService) flushSales(items []*batchedSale) error {
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	if len(items) == 1 {
		it := items[0]
		it.result, it.err = s.recordAlone(ctx, it.sale, it.now, true)
		it.answered = true
		return nil
	}
	slices.SortFunc(items, func(a, b *batchedSale) int {
		return cmp.Or(cmp.Compare(a.sale.ProgramID, b.sale.ProgramID),
			strings.Compare(a.sale.CustomerKey, b.sale.CustomerKey),
			strings.Compare(a.sale.ClickID, b.sale.ClickID),
			strings.Compare(a.sale.TransactionID, b.sale.TransactionID))
	})
	err := s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		pending := newPendingLeanSales() // afresh when a deadlock runs the batch again
		for _, it := range items {
			if err := s.recordInBatch(ctx, tx, it, pending); err != nil {
				return err
			}
		}
		return s.writePendingSales(ctx, tx, pending)
	})
	for _, it := range items {
		switch {
		case err != nil:
			*it = batchedSale{sale: it.sale, now: it.now}
		case it.done:
			it.result, it.err = s.answer(it.out, it.msgs, it.answer)
			it.answered = true
		}
	}
	if err != nil {
		s.logger.Debug("sale batch rolled back; its sales are recorded one by one", "sales", len(items), "err", err)
	}
	return nil
}

// recordInBatch records one sale in the batch's transaction, adds it to
// pending (the repeat sale of a customer that exists: written with the
// others, answered then), or leaves it to its caller (not done). An error
// rolls the whole batch back.
func (s *SaleService) recordInBatch(ctx context.Context, tx *sqlx.Tx, it *batchedSale, pending *pendingLeanSales) error {
	*it = batchedSale{sale: it.sale, now: it.now} // a retried batch starts afresh
	if it.sale.IsTest {
		return nil
	}
	read := func() (saleContext, bool, error) {
		sc, err := readSaleContext(ctx, tx, s.lean, it.sale.ProgramID, it.sale.TransactionID, it.sale.CustomerKey, it.sale.ClickID)
		if it.answer, err = refusal(err); it.answer != nil || err != nil {
			it.done = it.answer != nil
			return saleContext{}, false, err
		}
		return sc, true, nil
	}
	sc, ok, err := read()
	if !ok {
		return err
	}
	if pending.touches(it.sale, sc) {
		// Its customer or transaction id is in a pending write: write it
		// first, and read the sale's context again after it.
		if err := s.writePendingSales(ctx, tx, pending); err != nil {
			return err
		}
		if sc, ok, err = read(); !ok {
			return err
		}
	}
	if sc.customer != nil && !sc.customer.IsTest && sc.duplicateOf == 0 {
		return s.planInBatch(ctx, tx, it, sc, pending)
	}
	// A known customer's lean sale writes nothing before it knows its
	// answer, so a refusal leaves nothing in the batch, and so does the
	// first sale of a click that recordFirstSaleOfClick takes. Any other
	// sale whose customer its click must first bring writes that customer
	// (and the click, when it was still in the queue) before it may still
	// be refused: it runs inside a savepoint, which a refusal rolls back.
	firstOfClick := sc.customer == nil && it.sale.ClickID != ""
	var out saleOutcome
	handled := false
	if firstOfClick && sc.duplicateOf == 0 {
		out, handled, err = s.recordFirstSaleOfClick(ctx, tx, sc.program, withDefaults(it.sale, sc.program), sc.facts, it.now)
		sc.firstSaleTried = !handled
	}
	savepoint := firstOfClick && !handled
	if savepoint {
		// One round trip (no arguments: the simple protocol).
		if _, err := tx.ExecContext(ctx, `SAVEPOINT batched_sale`); err != nil {
			return err
		}
	}
	if !handled {
		out, err = s.recordWithContext(ctx, tx, it.sale, sc, it.now, true)
	}
	if it.answer, err = refusal(err); err != nil {
		return err
	}
	if it.answer != nil {
		if savepoint {
			if _, err := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT batched_sale`); err != nil {
				return err
			}
		}
		it.done = true
		return nil
	}
	msgs := out.msgs
	if !out.eventsWritten {
		if msgs, err = out.brandEvents(ctx, tx, it.now); err != nil {
			return err
		}
	}
	it.done, it.out, it.msgs = true, out, msgs
	return nil
}

// planInBatch decides the repeat sale of a real customer that exists
// (read with sc) and adds it to the pending group, or answers its refusal
// at once (nothing is written before it).
func (s *SaleService) planInBatch(ctx context.Context, tx *sqlx.Tx, it *batchedSale, sc saleContext, pending *pendingLeanSales) error {
	planned, err := s.planAttributedLean(ctx, tx, sc.program, withDefaults(it.sale, sc.program), sc.customer, &sc.facts, it.now)
	if it.answer, err = refusal(err); err != nil {
		return err
	}
	if it.answer != nil {
		it.done = true
		return nil
	}
	pending.add(it, sc.program, planned)
	return nil
}
