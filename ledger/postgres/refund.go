package postgres

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/groupcommit"
)

// RefundService implements ledger.RefundService. Refunds that arrive
// while others are being applied share a transaction (one BEGIN and one
// COMMIT for the batch); each runs applyRefund, the one write path, which
// writes nothing before it knows its answer (a 404 comes first, a skip
// writes nothing), so any refund can join. When anything fails, the batch
// is rolled back and each refund applied on its own, answering as it
// would have without batching.
type RefundService struct {
	db      *DB
	logger  *slog.Logger
	after   *afterCommit
	stmts   *preparedStatements
	batches *groupcommit.Committer[*batchedRefund]
}

// refundsInFlight is how many batch transactions of refunds run at once,
// each started as soon as one of them is free (groupcommit.NewEager; the
// measurements behind it are in docs/decisions.md).
const refundsInFlight = 4

// NewRefundService returns the refund service over db. relay sends the
// notifications a refund writes to the outbox right after commit; nil
// leaves them to the outbox sweep.
func NewRefundService(db *DB, relay ledger.OutboxRelay, logger *slog.Logger) *RefundService {
	if logger == nil {
		logger = slog.Default()
	}
	s := &RefundService{db: db, logger: logger, after: &afterCommit{relay: relay, logger: logger}, stmts: refundStatements(db)}
	s.batches = groupcommit.NewEager(batchMax, refundsInFlight, s.flushRefunds)
	return s
}

var _ ledger.RefundService = (*RefundService)(nil)

// ApplyRefund applies a refund in one transaction, shared with the
// refunds that arrive meanwhile, then relays its notifications in the
// background.
func (s *RefundService) ApplyRefund(ctx context.Context, in ledger.RefundInput) (res *ledger.RefundResult, err error) {
	defer wrap(&err, "postgres.ApplyRefund(%q)", in.TransactionID)
	now := s.db.now()
	if err := s.stmts.prepare(ctx); err != nil {
		return nil, err
	}
	item := &batchedRefund{in: in, now: now}
	if err := s.batches.Add(ctx, item); err != nil {
		return nil, err
	}
	if item.answered {
		return item.result, item.err
	}
	return s.applyAlone(ctx, in, now)
}

// applyAlone applies a refund in a transaction of its own. A write that
// fails returns its error with nothing stored.
func (s *RefundService) applyAlone(ctx context.Context, in ledger.RefundInput, now time.Time) (*ledger.RefundResult, error) {
	var res *ledger.RefundResult
	var msgs []ledger.OutboxMessage
	err := s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		var err error
		res, msgs, err = applyRefund(ctx, tx, s.stmts, in, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.after.send(msgs)
	return res, nil
}

// WaitRelays blocks until the relays started after commits have finished
// (graceful shutdown, tests).
func (s *RefundService) WaitRelays() { s.after.wait() }

// qRefundBatchOrder reads, for each refund of a batch (program $1[n],
// transaction id $2[n]), its commission's partner and currency and its
// sale: the order the batch takes their locks in. The arrays are read
// through sub-selects so that a custom plan cannot see their lengths
// (Postgres then planned the statement anew for most batches;
// docs/decisions.md, "Sixth round").
const qRefundBatchOrder = `
	SELECT r.n, COALESCE(c.partner_id, 0), COALESCE(c.currency, ''), COALESCE(s.id, 0)
	FROM unnest((SELECT $1::bigint[]), (SELECT $2::text[])) WITH ORDINALITY AS r(program_id, txn, n)
	LEFT JOIN sales s ON s.program_id = r.program_id AND s.processor_event_id = r.txn
	LEFT JOIN commissions c ON c.sale_id = s.id`

// qLockRefundPrograms takes, in the order given (ascending program ids),
// the exclusive advisory lock (22, program id) of each program a batch of
// refunds writes for, held to the batch's commit. A refund's statement
// locks its rollup rows in key order, but a batch runs one statement per
// refund, and the rows of two refunds (the program's row of the refund's
// day and of the sale's day, the partner's and the link's) can come in
// either order in two batches: they deadlocked, and Postgres found it
// only after deadlock_timeout (1 s), then rolled a batch back. Batches of
// one program now run one after the other, which the program's row of the
// day already made them do once they reached it.
const qLockRefundPrograms = `SELECT pg_advisory_xact_lock(22, (p & 2147483647)::int) FROM unnest($1::bigint[]) AS p`

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

// flushRefunds applies a batch of refunds in one transaction; a refund
// alone is applied in its own, inside the flush.
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

// orderRefunds takes the batch's program locks (qLockRefundPrograms) and
// sorts its refunds into their lock order. Refunds
// lock the partner's balance account, the sale, then the commission, and
// two batches must take the accounts they share in the same order; the
// partner is known only from the sale's commission, so the batch reads
// every refund's partner, currency and sale first (unlocked: a
// commission's partner never changes).
func (s *RefundService) orderRefunds(ctx context.Context, tx *sqlx.Tx, items []*batchedRefund) error {
	programs := make([]int64, len(items))
	txns := make([]string, len(items))
	for i, it := range items {
		programs[i], txns[i] = it.in.ProgramID, it.in.TransactionID
	}
	locks := slices.Compact(slices.Sorted(slices.Values(programs)))
	if _, err := s.stmts.in(ctx, tx, qLockRefundPrograms).ExecContext(ctx, pq.Array(locks)); err != nil {
		return err
	}
	rows, err := s.stmts.in(ctx, tx, qRefundBatchOrder).QueryContext(ctx, pq.Array(programs), pq.Array(txns))
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
	res, msgs, err := applyRefund(ctx, tx, s.stmts, it.in, it.now)
	// A refusal (the sale was not found) comes before anything is written.
	if it.answer, err = refusal(err); err != nil {
		return err
	}
	it.done, it.res, it.msgs = true, res, msgs
	return nil
}
