package postgres

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/groupcommit"
)

// RefundService implements ledger.RefundService.
type RefundService struct {
	db      *DB
	logger  *slog.Logger
	after   *afterCommit
	lean    *preparedStatements
	batches *groupcommit.Committer[*batchedRefund]
}

// NewRefundService returns the refund service over db. relay sends the
// notifications a refund writes to the outbox right after commit; nil
// leaves them to the outbox sweep.
func NewRefundService(db *DB, relay ledger.OutboxRelay, logger *slog.Logger) *RefundService {
	if logger == nil {
		logger = slog.Default()
	}
	s := &RefundService{db: db, logger: logger, after: &afterCommit{relay: relay, logger: logger}, lean: leanRefundStatements(db)}
	s.batches = newRefundBatches(s)
	return s
}

var _ ledger.RefundService = (*RefundService)(nil)

// ApplyRefund applies a refund in one transaction, on the lean path
// (applyRefundLean) or, when its write fails, on the careful one
// (applyRefund), then relays its notifications in the background.
func (s *RefundService) ApplyRefund(ctx context.Context, in ledger.RefundInput) (res *ledger.RefundResult, err error) {
	defer wrap(&err, "postgres.ApplyRefund(%q)", in.TransactionID)
	now := s.db.now()
	if err := s.lean.prepare(ctx); err != nil {
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

// applyAlone applies a refund in a transaction of its own, on the lean
// path first.
func (s *RefundService) applyAlone(ctx context.Context, in ledger.RefundInput, now time.Time) (*ledger.RefundResult, error) {
	res, msgs, err := s.refundInTransaction(ctx, in, now, s.applyRefundLean)
	var lean *leanWriteError
	if errors.As(err, &lean) {
		s.logger.Warn("lean refund write failed; applying the refund on the careful path",
			"transaction_id", in.TransactionID, "err", lean.err)
		res, msgs, err = s.refundInTransaction(ctx, in, now, s.applyRefundCareful)
	}
	if err != nil {
		return nil, err
	}
	s.after.send(msgs)
	return res, nil
}

// refundApplier applies a refund inside a transaction.
type refundApplier func(ctx context.Context, tx *sqlx.Tx, in ledger.RefundInput, now time.Time) (*ledger.RefundResult, []ledger.OutboxMessage, error)

// refundInTransaction applies a refund with apply in one transaction and
// returns its result and the outbox messages to relay after commit.
func (s *RefundService) refundInTransaction(ctx context.Context, in ledger.RefundInput, now time.Time, apply refundApplier) (*ledger.RefundResult, []ledger.OutboxMessage, error) {
	var res *ledger.RefundResult
	var msgs []ledger.OutboxMessage
	err := s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		var err error
		res, msgs, err = apply(ctx, tx, in, now)
		return err
	})
	return res, msgs, err
}

// applyRefundCareful is applyRefund with the service's logger.
func (s *RefundService) applyRefundCareful(ctx context.Context, tx *sqlx.Tx, in ledger.RefundInput, now time.Time) (*ledger.RefundResult, []ledger.OutboxMessage, error) {
	return applyRefund(ctx, tx, s.logger, in, now)
}

// WaitRelays blocks until the relays started after commits have finished
// (graceful shutdown, tests).
func (s *RefundService) WaitRelays() { s.after.wait() }

// refundSale is the locked state of a refunded sale.
type refundSale struct {
	id, programID, amount, refunded int64
}

// applyRefund is the one reversal function of the service: the refund
// endpoint and the processor's refund events run it inside their
// transaction and relay the outbox messages it returns after commit.
//
// It locks, in the lock order of every money change, the partner's
// balance account, the sale and the commission; refunds of one sale
// therefore run one at a time and see each other's effects, which is what
// makes "the same refund_id" and "the same amount" retries and the cap at
// the sale amount exact under concurrency.
func applyRefund(ctx context.Context, tx *sqlx.Tx, logger *slog.Logger, in ledger.RefundInput, now time.Time) (*ledger.RefundResult, []ledger.OutboxMessage, error) {
	if in.Source == "" {
		in.Source = ledger.SourceAPI
	}
	var saleID int64
	err := tx.QueryRowContext(ctx, `SELECT id FROM sales WHERE program_id = $1 AND processor_event_id = $2`,
		in.ProgramID, in.TransactionID).Scan(&saleID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, ledger.NewError(ledger.ENotFound, ledger.MsgSaleNotFound)
	} else if err != nil {
		return nil, nil, err
	}
	var commissionID, partnerID int64
	var cur string
	err = tx.QueryRowContext(ctx, `SELECT id, partner_id, currency FROM commissions WHERE sale_id = $1`, saleID).
		Scan(&commissionID, &partnerID, &cur)
	hasCommission := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, nil, err
	}
	if hasCommission {
		if err := lockBalanceAccount(ctx, tx, partnerID, ledger.Currency(cur), now); err != nil {
			return nil, nil, err
		}
	}
	sale := refundSale{id: saleID}
	if err := tx.QueryRowContext(ctx, `
		SELECT program_id, amount_cents, refunded_cents FROM sales WHERE id = $1 FOR NO KEY UPDATE`, saleID).
		Scan(&sale.programID, &sale.amount, &sale.refunded); err != nil {
		return nil, nil, err
	}
	var c *ledger.Commission
	if hasCommission {
		if c, err = scanCommission(tx.QueryRowContext(ctx, `SELECT `+commissionColumns+commissionFrom+`
			WHERE c.id = $1 FOR NO KEY UPDATE OF c`, commissionID)); err != nil {
			return nil, nil, err
		}
	}
	noCommission := &ledger.RefundResult{Status: ledger.RefundNoCommission, Message: ledger.MsgRefundNoCommission}
	skip := func(reason string) (*ledger.RefundResult, []ledger.OutboxMessage, error) {
		if c == nil {
			return noCommission, nil, nil
		}
		return &ledger.RefundResult{Status: ledger.RefundSkipped, CommissionID: c.ID, SkipReason: reason}, nil, nil
	}

	if reason, err := retryOf(ctx, tx, sale.id, in); err != nil {
		return nil, nil, err
	} else if reason != "" {
		return skip(reason)
	}
	if c != nil && c.Status == ledger.CommissionReversed {
		return skip(ledger.SkipAlreadyReverse)
	}
	applied := sale.amount - sale.refunded
	if in.AmountCents > 0 {
		applied = min(in.AmountCents, applied)
	}
	if applied <= 0 {
		return skip(ledger.SkipAlreadyReverse)
	}

	var plan ledger.RefundPlan
	if c != nil {
		plan = ledger.PlanRefund(ledger.CommissionState{Status: c.Status, OriginalMinor: c.OriginalMinor,
			AmountMinor: c.AmountMinor, Credited: c.Credited}, sale.amount, sale.refunded, applied)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE sales SET refunded_cents = refunded_cents + $2 WHERE id = $1`,
		sale.id, applied); err != nil {
		return nil, nil, err
	}
	var refundRowID int64
	var commissionRef *int64
	if c != nil {
		commissionRef = &c.ID
	}
	if err := tx.QueryRowContext(ctx, `
		INSERT INTO refunds (sale_id, program_id, commission_id, refund_id, amount_cents, deduction_minor, reason, source, created_at)
		VALUES ($1, $2, $3, NULLIF($4, ''), $5, $6, NULLIF($7, ''), $8, $9)
		RETURNING id`,
		sale.id, sale.programID, commissionRef, in.RefundID, applied, plan.DeductionMinor, in.Reason, in.Source, now).
		Scan(&refundRowID); err != nil {
		return nil, nil, err
	}
	if err := logTracking(ctx, tx, logger, trackingLog{sale.programID, "refund", false, in.Source, in.TransactionID}, now); err != nil {
		return nil, nil, err
	}
	if c == nil {
		return noCommission, nil, nil
	}

	paidOut := c.PaidAt != nil
	if in.Reason != "" {
		c.Reason = in.Reason
	}
	if _, err := tx.ExecContext(ctx, `
		UPDATE commissions SET status = $2, amount_minor = $3, reason = NULLIF($4, ''),
			reversed_at = CASE WHEN $2 = 'reversed' THEN $5 ELSE reversed_at END, updated_at = $5
		WHERE id = $1`, c.ID, plan.Status, plan.AmountMinor, c.Reason, now); err != nil {
		return nil, nil, err
	}
	if plan.Debit && plan.DeductionMinor > 0 {
		if err := appendEntry(ctx, tx, balanceEntry{partnerID: c.PartnerID, currency: c.Currency, kind: ledger.EntryDeduction,
			amountMinor: -plan.DeductionMinor, commissionID: &c.ID, refundID: &refundRowID}, now); err != nil {
			return nil, nil, err
		}
		if err := fitOpenWithdrawals(ctx, tx, c.PartnerID, c.Currency, now); err != nil {
			return nil, nil, err
		}
	}
	var workspaceID int64
	if err := tx.QueryRowContext(ctx, `SELECT workspace_id FROM programs WHERE id = $1`, sale.programID).Scan(&workspaceID); err != nil {
		return nil, nil, err
	}
	notice := ledger.RefundNotice{
		CommissionID: c.ID, PartnerID: c.PartnerID, WorkspaceID: workspaceID, ProgramID: sale.programID,
		TransactionID: in.TransactionID, Status: plan.Status, DeductionMinor: plan.DeductionMinor,
		AmountMinor: plan.AmountMinor, Currency: c.Currency, Reason: c.Reason, PaidOut: paidOut,
	}
	var msgs []ledger.OutboxMessage
	for _, n := range ledger.RefundNotifications(notice) {
		m, err := insertOutbox(ctx, tx, ledger.OutboxTaskNotification, ledger.OutboxQueueNotifications, n, now)
		if err != nil {
			return nil, nil, err
		}
		msgs = append(msgs, m)
	}
	// The brand's commission.reversed / commission.refunded webhooks.
	hooks, err := refundEvent(ctx, tx, notice, sale.id, applied, now)
	if err != nil {
		return nil, nil, err
	}
	msgs = append(msgs, hooks...)
	return &ledger.RefundResult{Status: plan.Status, CommissionID: c.ID, DeductionMinor: plan.DeductionMinor,
		Currency: c.Currency}, msgs, nil
}

// retryOf tells a refund already applied: the same refund_id on the sale,
// or, without one, the same amount. A refund of "all that is left" is no
// retry (once applied, nothing is left and the commission is reversed).
func retryOf(ctx context.Context, tx *sqlx.Tx, saleID int64, in ledger.RefundInput) (string, error) {
	if in.AmountCents == 0 {
		return "", nil
	}
	query, arg, reason := `SELECT EXISTS (SELECT 1 FROM refunds WHERE sale_id = $1 AND refund_id = $2)`, any(in.RefundID), ledger.SkipRefundID
	if in.RefundID == "" {
		query, arg, reason = `SELECT EXISTS (SELECT 1 FROM refunds WHERE sale_id = $1 AND amount_cents = $2)`, in.AmountCents, ledger.SkipSameAmount
	}
	var exists bool
	if err := tx.QueryRowContext(ctx, query, saleID, arg).Scan(&exists); err != nil || !exists {
		return "", err
	}
	return reason, nil
}
