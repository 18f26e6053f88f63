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

// The one write path of a refund (applyRefund): two statements lock and
// read the snapshot, in the lock order of every money change (the
// partner's balance account, the sale, the commission); ledger.PlanRefund
// decides; one statement writes the sale's refunded amount, the refund
// row, its tracking log, the commission, the balance deduction and the
// outbox rows, so nothing of a refund is stored unless all of it is; one
// more fits the open withdrawals when the deduction met any.

const (
	// qFindRefundTarget finds the sale ($1, $2) and its commission, with
	// the partner's balance account locked; a sale without a commission is
	// locked too (sl: there is no account to take first) and read as the
	// lock returns it, so that such a refund needs no statement of its own
	// to lock it. Before any row, its one-time condition takes the
	// program's refund lock (qLockRefundPrograms), which a batch already
	// holds: a refund applied alone or from a processor event then waits
	// for a batch of its program instead of deadlocking with it.
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
		WHERE s.program_id = $1 AND s.processor_event_id = $2
			AND (SELECT count(*) FROM (SELECT pg_advisory_xact_lock(22, ($1::bigint & 2147483647)::int)) l) = 1`
	qWriteRefund = `
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
			INSERT INTO balance_entries (partner_id, currency, kind, amount_minor, commission_id, refund_id, program_id, created_at)
			SELECT $14, $15, 'deduction', -$6::bigint, $4, refund.id, $3, $9 FROM refund WHERE $16
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

// lockRefundedTemplate locks the sale ($1) and then its commission ($2)
// and reads, with them, whether an earlier refund of the sale is this one
// again (%s compares $3, the amount or the refund id; $4 tells whether
// the refund names an amount) and the endpoints wanting the two refund events.
const lockRefundedTemplate = `
		SELECT s.program_id, s.amount_cents, s.refunded_cents, p.workspace_id,
			c.id, c.program_id, c.partner_id, c.sale_id, c.customer_id, c.processor_event_id,
			c.currency, c.original_minor, c.amount_minor, c.status, c.credited, c.reason,
			c.approve_after, c.approved_at, c.paid_at, c.reversed_at, c.withdrawal_id, c.created_at,
			$4 AND EXISTS (SELECT 1 FROM refunds WHERE sale_id = $1 AND %s),
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
	qLockRefundedByAmount   = fmt.Sprintf(lockRefundedTemplate, "amount_cents = $3::bigint")
	qLockRefundedByRefundID = fmt.Sprintf(lockRefundedTemplate, "refund_id = $3::text")
)

// refundStatements are the refund service's statements, prepared.
func refundStatements(db *DB) *preparedStatements {
	return newPreparedStatements(db, qFindRefundTarget, qLockRefundedByAmount, qLockRefundedByRefundID,
		qWriteRefund, qFitOpenWithdrawals, qRefundBatchOrder, qLockRefundPrograms)
}

// applyRefund is the one write path of a refund, run inside the caller's
// transaction: the refund endpoint's (alone or in a batch) and the
// processor's refund events'. It returns the answer and the outbox
// messages to relay after commit. stmts nil runs the statements
// unprepared. Errors: ENotFound (the sale), before anything is written.
func applyRefund(ctx context.Context, tx *sqlx.Tx, stmts *preparedStatements, in ledger.RefundInput, now time.Time) (*ledger.RefundResult, []ledger.OutboxMessage, error) {
	snap, err := readRefundSnapshot(ctx, tx, stmts, in, now)
	if err != nil {
		return nil, nil, err
	}
	plan := ledger.PlanRefund(in, snap)
	if plan.Write == nil {
		return &plan.Result, nil, nil
	}
	msgs, openWithdrawals, err := writeRefund(ctx, tx, stmts, plan.Write, now)
	if err != nil {
		return nil, nil, err
	}
	if d := plan.Write.Deduction; plan.Write.FitWithdrawals && openWithdrawals {
		if err := fitWithdrawalsToBalance(ctx, tx, stmts, d.PartnerID, d.Currency, now); err != nil {
			return nil, nil, err
		}
	}
	return &plan.Result, msgs, nil
}

// readRefundSnapshot locks and reads what a refund decides on. With a
// commission, findRefundTarget locks the balance account; every refund of
// the sale held it before the second statement began, so its snapshot
// sees their refunds. Without one, findRefundTarget locked and read the
// sale, and the earlier refunds (the retry check of a refund with an
// amount) are read by a statement of their own, after the sale's lock.
func readRefundSnapshot(ctx context.Context, tx *sqlx.Tx, stmts *preparedStatements, in ledger.RefundInput, now time.Time) (ledger.RefundSnapshot, error) {
	t, err := findRefundTarget(ctx, tx, stmts, in, now)
	if err != nil || !t.commissionID.Valid {
		return t.snapshot, err
	}
	s := ledger.RefundSnapshot{SaleID: t.snapshot.SaleID}
	query, arg := qLockRefundedByAmount, any(in.AmountCents)
	if in.RefundID != "" {
		query, arg = qLockRefundedByRefundID, in.RefundID
	}
	c := &ledger.Commission{}
	var cur string
	var reversed, refunded pq.Int64Array
	err = stmts.row(ctx, tx, query,
		t.snapshot.SaleID, t.commissionID.Int64, arg, in.AmountCents > 0, ledger.EventCommissionReversed, ledger.EventCommissionRefunded).
		Scan(&s.ProgramID, &s.SaleAmount, &s.RefundedBefore, &s.WorkspaceID,
			&c.ID, &c.ProgramID, &c.PartnerID, &c.SaleID, &c.CustomerID, &c.TransactionID,
			&cur, &c.OriginalMinor, &c.AmountMinor, &c.Status, &c.Credited, &c.Reason,
			&c.ApproveAfter, &c.ApprovedAt, &c.PaidAt, &c.ReversedAt, &c.WithdrawalID, &c.CreatedAt,
			&s.Retry, &reversed, &refunded)
	if err != nil {
		return s, err
	}
	c.Currency = ledger.Currency(cur)
	s.Commission, s.ReversedEndpoints, s.RefundedEndpoints = c, reversed, refunded
	return s, nil
}

// refundTarget is a refunded sale and its commission, found before any
// lock but the balance account's.
type refundTarget struct {
	commissionID sql.NullInt64
	// snapshot holds the sale's id; without a commission, the whole
	// snapshot, read as the sale's lock returned it.
	snapshot ledger.RefundSnapshot
}

// findRefundTarget finds the sale of a refund in its program and, when it
// has a commission, locks the partner's balance account in the same
// statement (first in the lock order); without one, it locks the sale.
// An account that does not exist yet is created and locked by
// lockBalanceAccount.
func findRefundTarget(ctx context.Context, tx *sqlx.Tx, stmts *preparedStatements, in ledger.RefundInput, now time.Time) (refundTarget, error) {
	var t refundTarget
	var saleID int64
	var partnerID, programID, amount, refunded, workspaceID sql.NullInt64
	var currency sql.NullString
	var accountLocked sql.NullBool
	err := stmts.row(ctx, tx, qFindRefundTarget, in.ProgramID, in.TransactionID).
		Scan(&saleID, &t.commissionID, &partnerID, &currency, &accountLocked,
			&programID, &amount, &refunded, &workspaceID)
	// No row, or (without a commission) no sale left to lock.
	if errors.Is(err, sql.ErrNoRows) || (err == nil && !t.commissionID.Valid && !programID.Valid) {
		return t, ledger.NewError(ledger.ENotFound, ledger.MsgSaleNotFound)
	} else if err != nil {
		return t, err
	}
	t.snapshot = ledger.RefundSnapshot{SaleID: saleID, ProgramID: programID.Int64, WorkspaceID: workspaceID.Int64,
		SaleAmount: amount.Int64, RefundedBefore: refunded.Int64}
	if t.commissionID.Valid {
		if !accountLocked.Valid {
			err = lockBalanceAccount(ctx, tx, partnerID.Int64, ledger.Currency(currency.String), now)
		}
		return t, err
	}
	t.snapshot.Retry, err = refundedAgain(ctx, tx, saleID, in)
	return t, err
}

// refundedAgain tells a refund already applied to a sale: the same
// refund_id, or, without one, the same amount. A refund of "all that is
// left" is no retry (once applied, nothing is left).
func refundedAgain(ctx context.Context, tx *sqlx.Tx, saleID int64, in ledger.RefundInput) (bool, error) {
	if in.AmountCents == 0 {
		return false, nil
	}
	query, arg := `SELECT EXISTS (SELECT 1 FROM refunds WHERE sale_id = $1 AND refund_id = $2)`, any(in.RefundID)
	if in.RefundID == "" {
		query, arg = `SELECT EXISTS (SELECT 1 FROM refunds WHERE sale_id = $1 AND amount_cents = $2)`, in.AmountCents
	}
	var exists bool
	err := tx.QueryRowContext(ctx, query, saleID, arg).Scan(&exists)
	return exists, err
}

// writeRefund writes a refund's plan in one statement and returns the
// outbox messages it wrote, and whether a deduction met open withdrawals
// to fit. The balance account is locked, and every change of a withdrawal
// takes that lock, so the statement's snapshot sees them all.
func writeRefund(ctx context.Context, tx *sqlx.Tx, stmts *preparedStatements, w *ledger.RefundWrite, now time.Time) (msgs []ledger.OutboxMessage, openWithdrawals bool, err error) {
	rows, err := refundOutboxRows(w, now)
	if err != nil {
		return nil, false, err
	}
	msgs = make([]ledger.OutboxMessage, len(rows))
	taskTypes, queues, payloads := make([]string, len(rows)), make([]string, len(rows)), make([]string, len(rows))
	for i, r := range rows {
		raw, err := json.Marshal(r.payload)
		if err != nil {
			return nil, false, err
		}
		msgs[i] = ledger.OutboxMessage{TaskType: r.taskType, Queue: r.queue, Payload: raw, CreatedAt: now}
		taskTypes[i], queues[i], payloads[i] = r.taskType, r.queue, string(raw)
	}
	var status, reason, currency string
	var amount int64
	if c := w.Commission; c != nil {
		status, amount, reason = c.Status, c.AmountMinor, c.Reason
	}
	var partnerID *int64
	if d := w.Deduction; d != nil {
		partnerID, currency = &d.PartnerID, string(d.Currency)
	}
	r := w.Refund
	var ids pq.Int64Array
	err = stmts.row(ctx, tx, qWriteRefund,
		r.SaleID, r.AmountCents, r.ProgramID, r.CommissionID, r.RefundID, r.DeductionMinor, r.Reason,
		r.Source, now, r.TransactionID, status, amount, reason, partnerID, currency, w.Deduction != nil,
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

// refundOutboxRows are a refund's notifications, then its brand webhook's
// deliveries.
func refundOutboxRows(w *ledger.RefundWrite, now time.Time) ([]outboxRow, error) {
	var rows []outboxRow
	for _, n := range w.Notifications {
		rows = append(rows, outboxRow{taskType: ledger.OutboxTaskNotification, queue: ledger.OutboxQueueNotifications, payload: n})
	}
	if h := w.Webhook; h != nil {
		hooks, err := webhookRows(h.EventType, h.Data, h.Endpoints, now)
		if err != nil {
			return nil, err
		}
		rows = append(rows, hooks...)
	}
	return rows, nil
}

// fitWithdrawalsToBalance lowers the partner's open withdrawals to fit the
// balance (as fitOpenWithdrawals does), reading the balance and locking
// the withdrawals in one statement. The caller holds the account's lock.
func fitWithdrawalsToBalance(ctx context.Context, tx *sqlx.Tx, stmts *preparedStatements, partnerID int64, c ledger.Currency, now time.Time) error {
	var rows *sql.Rows
	var err error
	if stmts == nil {
		rows, err = tx.QueryContext(ctx, qFitOpenWithdrawals, partnerID, string(c))
	} else {
		rows, err = stmts.in(ctx, tx, qFitOpenWithdrawals).QueryContext(ctx, partnerID, string(c))
	}
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
