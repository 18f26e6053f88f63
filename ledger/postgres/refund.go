package postgres

import (
	"context"
	"log/slog"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/groupcommit"
)

// RefundService implements ledger.RefundService. Refunds that arrive
// while others are being applied share a transaction (one BEGIN and one
// COMMIT for the batch) and go through applyRefunds, the one write path,
// together: one locking read and one write for the batch. A refund writes
// nothing before it knows its answer (a 404 comes first, a skip writes
// nothing), so any refund can join. When anything fails, the batch is
// rolled back and each refund applied on its own, answering as it would
// have without batching.
type RefundService struct {
	db      *DB
	logger  *slog.Logger
	after   *afterCommit
	stmts   *preparedStatements
	batches *groupcommit.Committer[*batchedRefund]
}

// refundsInFlight is how many batch transactions of refunds run at once,
// each started as soon as one of them is free (groupcommit.NewEager). Two
// rather than four: the same refunds at max, fewer batches waiting on each
// other's program locks at a fixed rate (docs/decisions.md, "Two refund
// batches in flight").
const refundsInFlight = 2

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
	item := newBatchedRefund(in, now)
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
	it := &refundItem{in: in, now: now}
	if err := applyOwn(ctx, s.db, s.stmts, []*refundItem{it}); err != nil {
		return nil, err
	}
	res, msgs, err := it.outcome()
	if err != nil {
		return nil, err
	}
	s.after.send(msgs)
	return res, nil
}

// WaitRelays blocks until the relays started after commits have finished
// (graceful shutdown, tests).
func (s *RefundService) WaitRelays() { s.after.wait() }

// batchedRefund is one refund handed to a batch, and what became of it.
type batchedRefund struct {
	refundItem

	// answered tells that the flush applied the refund (in the batch, or
	// on its own when it was alone) and committed: result and err are
	// the call's answer. Otherwise the caller applies it on its own.
	answered bool
	result   *ledger.RefundResult
	err      error
}

func newBatchedRefund(in ledger.RefundInput, now time.Time) *batchedRefund {
	return &batchedRefund{refundItem: refundItem{in: in, now: now}}
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
	refunds := make([]*refundItem, len(items))
	for i, it := range items {
		refunds[i] = &it.refundItem
	}
	err := applyOwn(ctx, s.db, s.stmts, refunds)
	for _, it := range items {
		switch {
		case err != nil:
			it.reset()
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
