package postgres

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/groupcommit"
)

// Refunds that arrive while others are being applied share a
// transaction, as sales do (salebatch.go): one BEGIN and one COMMIT for
// the batch, and each refund's own three statements (the target with the
// balance account locked, the sale and commission locked, the write).
// The lean path of a refund writes nothing before it knows its answer (a
// 404 comes first, a skip writes nothing), so any refund can join. When
// anything fails, the batch is rolled back and each refund applied on its
// own, answering as it would have without batching.
//
// Refunds lock the partner's balance account, the sale, then the
// commission. Two batches must take the accounts they share in the same
// order, and the partner is known only from the sale's commission, so a
// batch first reads every refund's partner, currency and sale in one
// statement (unlocked: a commission's partner never changes) and applies
// the refunds in that order.

// qRefundBatchOrder reads, for each refund of a batch (program $1[n],
// transaction id $2[n]), its commission's partner and currency and its
// sale: the order the batch takes their locks in. The arrays are read
// through sub-selects so that a custom plan cannot see their lengths:
// otherwise it always looks cheaper than the generic plan (two rows
// against an estimated ten), and Postgres planned the statement anew for
// most batches, 0.47 ms each (docs/decisions.md, "Sixth round").
const qRefundBatchOrder = `
	SELECT r.n, COALESCE(c.partner_id, 0), COALESCE(c.currency, ''), COALESCE(s.id, 0)
	FROM unnest((SELECT $1::bigint[]), (SELECT $2::text[])) WITH ORDINALITY AS r(program_id, txn, n)
	LEFT JOIN sales s ON s.program_id = r.program_id AND s.processor_event_id = r.txn
	LEFT JOIN commissions c ON c.sale_id = s.id`

// batchedRefund is one refund handed to a batch, and what became of it.
type batchedRefund struct {
	in  ledger.RefundInput
	now time.Time

	// answered tells that the flush applied the refund (in the batch, or
	// on its own when it was alone) and committed: result and err are
	// the call's answer. Otherwise the caller applies it on its own.
	answered bool
	result   *ledger.RefundResult
	err      error

	// The refund's outcome in the batch's transaction, answered once it
	// commits, and its place in the lock order.
	done     bool
	res      *ledger.RefundResult
	msgs     []ledger.OutboxMessage
	answer   error
	lockedBy refundLockKey
}

// refundLockKey orders a batch's refunds: by balance account (none
// first), then sale.
type refundLockKey struct {
	partnerID int64
	currency  string
	saleID    int64
}

// refundBatchesInFlight is how many batch transactions of refunds run at
// once, each started as soon as one of them is free (groupcommit.NewEager):
// a refund's transaction is longer than a sale's, and with the lingering
// committer refunds waited for one another (docs/decisions.md).
const refundBatchesInFlight = 4

func newRefundBatches(s *RefundService) *groupcommit.Committer[*batchedRefund] {
	return groupcommit.NewEager(batchMax, refundBatchesInFlight, s.flushRefunds)
}

// flushRefunds applies a batch of refunds in one transaction; a refund
// alone is applied in its own, inside the flush (see flushSales).
func (s *RefundService) flushRefunds(items []*batchedRefund) error {
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	if len(items) == 1 {
		it := items[0]
		it.result, it.err = s.applyAlone(ctx, it.in, it.now)
		it.answered = true
		return nil
	}
	err := inOneTransaction(ctx, s.db, items, s.orderRefunds, s.applyInBatch)
	for _, it := range items {
		switch {
		case err != nil:
			*it = batchedRefund{in: it.in, now: it.now}
		case it.done:
			it.answered = true
			if it.result, it.err = it.res, it.answer; it.err == nil {
				s.after.send(it.msgs)
			}
		}
	}
	if err != nil {
		s.logger.Debug("refund batch rolled back; its refunds are applied one by one", "refunds", len(items), "err", err)
	}
	return nil
}

// orderRefunds sorts the batch's refunds into their lock order (one
// prepared statement: unprepared, Postgres planned it for every batch).
func (s *RefundService) orderRefunds(ctx context.Context, tx *sqlx.Tx, items []*batchedRefund) error {
	programs := make([]int64, len(items))
	txns := make([]string, len(items))
	for i, it := range items {
		programs[i], txns[i] = it.in.ProgramID, it.in.TransactionID
	}
	rows, err := s.lean.in(ctx, tx, qRefundBatchOrder).QueryContext(ctx, pq.Array(programs), pq.Array(txns))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var n int
		var k refundLockKey
		if err := rows.Scan(&n, &k.partnerID, &k.currency, &k.saleID); err != nil {
			return err
		}
		items[n-1].lockedBy = k
	}
	if err := rows.Err(); err != nil {
		return err
	}
	slices.SortStableFunc(items, func(a, b *batchedRefund) int {
		return cmp.Or(cmp.Compare(a.lockedBy.partnerID, b.lockedBy.partnerID),
			strings.Compare(a.lockedBy.currency, b.lockedBy.currency),
			cmp.Compare(a.lockedBy.saleID, b.lockedBy.saleID))
	})
	return nil
}

// applyInBatch applies one refund in the batch's transaction. An error
// rolls the whole batch back.
func (s *RefundService) applyInBatch(ctx context.Context, tx *sqlx.Tx, it *batchedRefund) error {
	it.done, it.res, it.msgs, it.answer = false, nil, nil, nil // a retried batch starts afresh
	res, msgs, err := s.applyRefundLean(ctx, tx, it.in, it.now)
	// A refusal (the sale was not found) comes before anything is written.
	if it.answer, err = refusal(err); err != nil {
		return err
	}
	it.done, it.res, it.msgs = true, res, msgs
	return nil
}
