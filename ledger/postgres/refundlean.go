package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/partnertrack/partnertrack/ledger"
)

// The refund endpoint's lean path: the same locks in the same order as
// applyRefund (balance account, sale, commission), taken by two
// statements; then every write (the sale's refunded amount, the refund
// row, its tracking log, the commission, the balance deduction and the
// outbox rows) in one statement, and the open withdrawals fitted by one
// more when the refund deducted from a balance that has any (the write
// tells). A write that
// fails for another reason than a conflict or a cancelled context reruns
// the transaction on applyRefund, whose savepoint keeps the refund when
// only its tracking log cannot be written.

// The lean refund path's statements, prepared (leanRefundStatements).
const (
	// qFindRefundTarget finds the sale ($1, $2) and its commission, with
	// the partner's balance account locked; a sale without a commission is
	// locked too (sl: there is no account to take first) and read as the
	// lock returns it, so that such a refund needs no statement of its own
	// to lock it.
	qFindRefundTarget = `
		SELECT s.id, c.id, c.partner_id, c.currency, a.locked,
			sl.program_id, sl.amount_cents, sl.refunded_cents, p.workspace_id
		FROM sales s
		JOIN programs p ON p.id = s.program_id
		LEFT JOIN commissions c ON c.sale_id = s.id
		LEFT JOIN LATERAL (
			SELECT true AS locked FROM balance_accounts b
			WHERE b.partner_id = c.partner_id AND b.currency = c.currency
			FOR NO KEY UPDATE
		) a ON true
		LEFT JOIN LATERAL (
			SELECT program_id, amount_cents, refunded_cents FROM sales
			WHERE id = s.id AND c.id IS NULL
			FOR NO KEY UPDATE
		) sl ON true
		WHERE s.program_id = $1 AND s.processor_event_id = $2`
	qWriteLeanRefund = `
		WITH sale AS (
			UPDATE sales SET refunded_cents = refunded_cents + $2 WHERE id = $1
		), refund AS (
			INSERT INTO refunds (sale_id, program_id, commission_id, refund_id, amount_cents, deduction_minor, reason, source, created_at)
			VALUES ($1, $3, $4, NULLIF($5, ''), $2, $6, NULLIF($7, ''), $8, $9)
			RETURNING id
		), tracking_log AS (
			INSERT INTO tracking_logs (program_id, event_type, is_test, source, reference, created_at)
			VALUES ($3, 'refund', false, $8, NULLIF($10, ''), $9)
		), commission AS (
			UPDATE commissions SET status = $11, amount_minor = $12, reason = NULLIF($13, ''),
				reversed_at = CASE WHEN $11 = 'reversed' THEN $9 ELSE reversed_at END, updated_at = $9
			WHERE id = $4
		), entry AS (
			INSERT INTO balance_entries (partner_id, currency, kind, amount_minor, commission_id, refund_id, created_at)
			SELECT $14, $15, 'deduction', -$6::bigint, $4, refund.id, $9 FROM refund WHERE $16
		), outbox AS (
			INSERT INTO outbox (task_type, queue, payload, created_at)
			SELECT r.task_type, r.queue, r.payload::jsonb, $9
			FROM unnest($17::text[], $18::text[], $19::text[]) WITH ORDINALITY AS r(task_type, queue, payload, n)
			ORDER BY r.n
			RETURNING id
		)
		SELECT ARRAY(SELECT id FROM outbox ORDER BY id),
			$16 AND EXISTS (SELECT 1 FROM withdrawals WHERE partner_id = $14 AND currency = $15 AND status = 'open')
		FROM refund`
	qFitOpenWithdrawals = `
		SELECT w.id, w.amount_minor,
			(SELECT COALESCE(SUM(amount_minor), 0) FROM balance_entries WHERE partner_id = $1 AND currency = $2)
		FROM withdrawals w
		WHERE w.partner_id = $1 AND w.currency = $2 AND w.status = 'open'
		ORDER BY w.id DESC FOR NO KEY UPDATE`
)

const lockRefundedTemplate = `
		SELECT s.program_id, s.amount_cents, s.refunded_cents, p.workspace_id,
			c.id, c.program_id, c.partner_id, c.sale_id, c.customer_id, c.processor_event_id,
			c.currency, c.original_minor, c.amount_minor, c.status, c.credited, c.reason,
			c.approve_after, c.approved_at, c.paid_at, c.reversed_at, c.withdrawal_id, c.created_at,
			%s,
			ARRAY(SELECT id FROM webhook_endpoints
				WHERE program_id = s.program_id AND deleted_at IS NULL AND $5 = ANY (events) ORDER BY id),
			ARRAY(SELECT id FROM webhook_endpoints
				WHERE program_id = s.program_id AND deleted_at IS NULL AND $6 = ANY (events) ORDER BY id)
		FROM (SELECT id, program_id, amount_cents, refunded_cents FROM sales WHERE id = $1 FOR NO KEY UPDATE) s
		JOIN programs p ON p.id = s.program_id
		CROSS JOIN LATERAL (
			SELECT ` + commissionColumns + commissionFrom + `
			WHERE c.id = $2 FOR NO KEY UPDATE OF c
		) c(id, program_id, partner_id, sale_id, customer_id, processor_event_id, currency, original_minor,
			amount_minor, status, credited, reason, approve_after, approved_at, paid_at, reversed_at,
			withdrawal_id, created_at)`

var (
	qLockRefundedByAmount   = fmt.Sprintf(lockRefundedTemplate, retryByAmount)
	qLockRefundedByRefundID = fmt.Sprintf(lockRefundedTemplate, retryByRefundID)
)

func leanRefundStatements(db *DB) *preparedStatements {
	return newPreparedStatements(db, qFindRefundTarget, qLockRefundedByAmount, qLockRefundedByRefundID,
		qWriteLeanRefund, qFitOpenWithdrawals, qRefundBatchOrder)
}

// refundTarget is a refunded sale and its commission, found before any
// lock but the balance account's.
type refundTarget struct {
	saleID        int64
	commissionID  sql.NullInt64
	partnerID     sql.NullInt64
	currency      sql.NullString
	accountLocked sql.NullBool
	// Without a commission: the sale as its lock returned it, and its
	// program's workspace.
	lockedSale  refundSale
	workspaceID int64
}

// findRefundTarget finds the sale of a refund in its program and, when it
// has a commission, locks the partner's balance account in the same
// statement (first in the lock order); without one, it locks the sale.
// An account that does not exist yet is created and locked by
// lockBalanceAccount.
func findRefundTarget(ctx context.Context, tx *sqlx.Tx, stmts *preparedStatements, in ledger.RefundInput, now time.Time) (refundTarget, error) {
	var t refundTarget
	var programID, amount, refunded, workspaceID sql.NullInt64
	err := stmts.in(ctx, tx, qFindRefundTarget).QueryRowContext(ctx, in.ProgramID, in.TransactionID).
		Scan(&t.saleID, &t.commissionID, &t.partnerID, &t.currency, &t.accountLocked,
			&programID, &amount, &refunded, &workspaceID)
	// No row, or (without a commission) no sale left to lock.
	if errors.Is(err, sql.ErrNoRows) || (err == nil && !t.commissionID.Valid && !programID.Valid) {
		return t, ledger.NewError(ledger.ENotFound, ledger.MsgSaleNotFound)
	} else if err != nil {
		return t, err
	}
	t.lockedSale = refundSale{id: t.saleID, programID: programID.Int64, amount: amount.Int64, refunded: refunded.Int64}
	t.workspaceID = workspaceID.Int64
	if t.commissionID.Valid && !t.accountLocked.Valid {
		err = lockBalanceAccount(ctx, tx, t.partnerID.Int64, ledger.Currency(t.currency.String), now)
	}
	return t, err
}

// lockedRefund is the locked state a refund decides on.
type lockedRefund struct {
	sale        refundSale
	workspaceID int64
	commission  *ledger.Commission
	// retry is the skip reason of a refund already applied ("" if none).
	retry string
	// endpoints want commission.reversed and commission.refunded.
	reversedEndpoints, refundedEndpoints []int64
}

// lockRefunded locks the sale and then its commission, and reads what the
// refund decides on. With a commission, the balance account is locked
// already: every refund of the sale held it before this statement began,
// so its snapshot sees their refunds. Without one, findRefundTarget
// locked the sale already, and the earlier refunds (the retry check of a
// refund with an amount) are read by a statement of their own, after the
// sale's lock.
func lockRefunded(ctx context.Context, tx *sqlx.Tx, stmts *preparedStatements, t refundTarget, in ledger.RefundInput) (lockedRefund, error) {
	var l lockedRefund
	l.sale.id = t.saleID
	var reversed, refunded pq.Int64Array
	if !t.commissionID.Valid {
		// findRefundTarget locked and read the sale.
		l.sale, l.workspaceID = t.lockedSale, t.workspaceID
		var err error
		l.retry, err = retryOf(ctx, tx, t.saleID, in)
		return l, err
	}
	query, arg := lockRefundedQuery(in)
	c := &ledger.Commission{}
	var cur string
	err := stmts.in(ctx, tx, query).QueryRowContext(ctx,
		t.saleID, t.commissionID.Int64, arg, in.AmountCents > 0, ledger.EventCommissionReversed, ledger.EventCommissionRefunded).
		Scan(&l.sale.programID, &l.sale.amount, &l.sale.refunded, &l.workspaceID,
			&c.ID, &c.ProgramID, &c.PartnerID, &c.SaleID, &c.CustomerID, &c.TransactionID,
			&cur, &c.OriginalMinor, &c.AmountMinor, &c.Status, &c.Credited, &c.Reason,
			&c.ApproveAfter, &c.ApprovedAt, &c.PaidAt, &c.ReversedAt, &c.WithdrawalID, &c.CreatedAt,
			&l.retry, &reversed, &refunded)
	if err != nil {
		return l, err
	}
	c.Currency = ledger.Currency(cur)
	l.commission, l.reversedEndpoints, l.refundedEndpoints = c, reversed, refunded
	if l.retry != "" {
		l.retry = retryReason(in)
	}
	return l, nil
}

// retryByAmount and retryByRefundID are the select-list expressions
// telling a refund already applied (retryOf's rule), as a non-empty text
// when it was: $3 is the amount or the refund id, $4 whether the refund
// names an amount.
const (
	retryByAmount = `CASE WHEN $4 AND EXISTS (SELECT 1 FROM refunds WHERE sale_id = $1 AND amount_cents = $3::bigint)
			THEN 'retry' ELSE '' END`
	retryByRefundID = `CASE WHEN $4 AND EXISTS (SELECT 1 FROM refunds WHERE sale_id = $1 AND refund_id = $3::text)
			THEN 'retry' ELSE '' END`
)

// lockRefundedQuery is the statement that locks the sale and commission
// of a refund, with its retry check, and that check's argument.
func lockRefundedQuery(in ledger.RefundInput) (string, any) {
	if in.RefundID == "" {
		return qLockRefundedByAmount, in.AmountCents
	}
	return qLockRefundedByRefundID, in.RefundID
}

func retryReason(in ledger.RefundInput) string {
	if in.RefundID == "" {
		return ledger.SkipSameAmount
	}
	return ledger.SkipRefundID
}

// applyRefundLean is applyRefund in fewer round trips, for the refund
// endpoint. A write that fails returns a *leanWriteError.
func (s *RefundService) applyRefundLean(ctx context.Context, tx *sqlx.Tx, in ledger.RefundInput, now time.Time) (*ledger.RefundResult, []ledger.OutboxMessage, error) {
	if in.Source == "" {
		in.Source = ledger.SourceAPI
	}
	target, err := findRefundTarget(ctx, tx, s.lean, in, now)
	if err != nil {
		return nil, nil, err
	}
	l, err := lockRefunded(ctx, tx, s.lean, target, in)
	if err != nil {
		return nil, nil, err
	}
	c := l.commission
	noCommission := &ledger.RefundResult{Status: ledger.RefundNoCommission, Message: ledger.MsgRefundNoCommission}
	skip := func(reason string) (*ledger.RefundResult, []ledger.OutboxMessage, error) {
		if c == nil {
			return noCommission, nil, nil
		}
		return &ledger.RefundResult{Status: ledger.RefundSkipped, CommissionID: c.ID, SkipReason: reason}, nil, nil
	}
	if l.retry != "" {
		return skip(l.retry)
	}
	if c != nil && c.Status == ledger.CommissionReversed {
		return skip(ledger.SkipAlreadyReverse)
	}
	applied := l.sale.amount - l.sale.refunded
	if in.AmountCents > 0 {
		applied = min(in.AmountCents, applied)
	}
	if applied <= 0 {
		return skip(ledger.SkipAlreadyReverse)
	}
	w := refundWrite{in: in, sale: l.sale, applied: applied}
	if c != nil {
		w.commission = c
		w.plan = ledger.PlanRefund(ledger.CommissionState{Status: c.Status, OriginalMinor: c.OriginalMinor,
			AmountMinor: c.AmountMinor, Credited: c.Credited}, l.sale.amount, l.sale.refunded, applied)
		if in.Reason != "" {
			c.Reason = in.Reason
		}
		notice := ledger.RefundNotice{
			CommissionID: c.ID, PartnerID: c.PartnerID, WorkspaceID: l.workspaceID, ProgramID: l.sale.programID,
			TransactionID: in.TransactionID, Status: w.plan.Status, DeductionMinor: w.plan.DeductionMinor,
			AmountMinor: w.plan.AmountMinor, Currency: c.Currency, Reason: c.Reason, PaidOut: c.PaidAt != nil,
		}
		if w.outbox, err = refundOutboxRows(notice, l, applied, now); err != nil {
			return nil, nil, err
		}
	}
	msgs, openWithdrawals, err := writeLeanRefund(ctx, tx, s.lean, w, now)
	if err != nil {
		if isRetryable(err) || ctx.Err() != nil {
			return nil, nil, err
		}
		return nil, nil, &leanWriteError{err: err}
	}
	if c == nil {
		return noCommission, nil, nil
	}
	if openWithdrawals {
		if err := fitOpenWithdrawalsLean(ctx, tx, s.lean, c.PartnerID, c.Currency, now); err != nil {
			return nil, nil, err
		}
	}
	return &ledger.RefundResult{Status: w.plan.Status, CommissionID: c.ID, DeductionMinor: w.plan.DeductionMinor,
		Currency: c.Currency}, msgs, nil
}

// refundOutboxRows are the refund's notifications, then its brand
// webhooks, as applyRefund writes them.
func refundOutboxRows(n ledger.RefundNotice, l lockedRefund, applied int64, now time.Time) ([]outboxRow, error) {
	var rows []outboxRow
	for _, note := range ledger.RefundNotifications(n) {
		rows = append(rows, outboxRow{taskType: ledger.OutboxTaskNotification, queue: ledger.OutboxQueueNotifications, payload: note})
	}
	endpoints := l.refundedEndpoints
	if ledger.RefundEventType(n.Status) == ledger.EventCommissionReversed {
		endpoints = l.reversedEndpoints
	}
	hooks, err := webhookRows(ledger.RefundEventType(n.Status), ledger.RefundEventData(n, l.sale.id, applied), endpoints, now)
	return append(rows, hooks...), err
}

// refundWrite is what the one write statement of a refund stores.
type refundWrite struct {
	in         ledger.RefundInput
	sale       refundSale
	applied    int64
	commission *ledger.Commission // nil: the sale has none
	plan       ledger.RefundPlan
	outbox     []outboxRow
}

// writeLeanRefund writes a refund and its effects in one statement and
// returns the outbox messages it wrote, and whether a deduction met open
// withdrawals to fit. The balance account is locked, and every change of
// a withdrawal takes that lock, so the statement's snapshot sees them all.
func writeLeanRefund(ctx context.Context, tx *sqlx.Tx, stmts *preparedStatements, w refundWrite, now time.Time) (msgs []ledger.OutboxMessage, openWithdrawals bool, err error) {
	var commissionID, partnerID *int64
	var currency, reason string
	if c := w.commission; c != nil {
		commissionID, partnerID, currency, reason = &c.ID, &c.PartnerID, string(c.Currency), c.Reason
	}
	msgs = make([]ledger.OutboxMessage, len(w.outbox))
	taskTypes, queues, payloads := make([]string, len(w.outbox)), make([]string, len(w.outbox)), make([]string, len(w.outbox))
	for i, r := range w.outbox {
		raw, err := json.Marshal(r.payload)
		if err != nil {
			return nil, false, err
		}
		msgs[i] = ledger.OutboxMessage{TaskType: r.taskType, Queue: r.queue, Payload: raw, CreatedAt: now}
		taskTypes[i], queues[i], payloads[i] = r.taskType, r.queue, string(raw)
	}
	debit := w.plan.Debit && w.plan.DeductionMinor > 0
	var ids pq.Int64Array
	err = stmts.in(ctx, tx, qWriteLeanRefund).QueryRowContext(ctx,
		w.sale.id, w.applied, w.sale.programID, commissionID, w.in.RefundID, w.plan.DeductionMinor, w.in.Reason,
		w.in.Source, now, w.in.TransactionID, w.plan.Status, w.plan.AmountMinor, reason, partnerID, currency, debit,
		pq.StringArray(taskTypes), pq.StringArray(queues), pq.StringArray(payloads)).Scan(&ids, &openWithdrawals)
	if err != nil {
		return nil, false, err
	}
	if len(ids) != len(msgs) {
		return nil, false, fmt.Errorf("outbox: %d rows written for %d messages", len(ids), len(msgs))
	}
	for i := range msgs {
		msgs[i].ID = ids[i]
	}
	return msgs, openWithdrawals, nil
}

// fitOpenWithdrawalsLean is fitOpenWithdrawals reading the balance and
// locking the open withdrawals in one statement; a partner without open
// withdrawals costs that statement only.
func fitOpenWithdrawalsLean(ctx context.Context, tx *sqlx.Tx, stmts *preparedStatements, partnerID int64, c ledger.Currency, now time.Time) error {
	rows, err := stmts.in(ctx, tx, qFitOpenWithdrawals).QueryContext(ctx, partnerID, string(c))
	if err != nil {
		return err
	}
	var bal minorSum
	ids, amounts, err := scanWithdrawals(rows, &bal)
	if err != nil {
		return err
	}
	return lowerWithdrawals(ctx, tx, ids, amounts, int64(bal), now)
}
