package postgres

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/partnertrack/partnertrack/ledger"
)

// The one write path of refunds (applyRefunds). A batch of refunds (one
// refund is a batch of one: the refund endpoint's, alone or batched, and
// the processor's refund events) is applied in rounds: one statement takes
// the batch's program locks and reads every refund's snapshot with its
// rows locked, in the lock order of every money change (qRefundSnapshots);
// ledger.PlanRefund decides each refund; one statement writes every
// planned refund with all that follows from it (qWriteRefunds): the sale's
// refunded amount, the refund row, its tracking log, the commission, the
// balance deduction and the outbox rows, so nothing of a refund is stored
// unless all of it is. One more statement per balance account fits its
// open withdrawals when a deduction met any. Nothing is written before a
// refund knows its answer (a 404 comes first, a skip writes nothing).
//
// A refund goes to the next round, which reads it again, when its sale
// is also refunded by an earlier refund of the round (it must see that
// refund), when its snapshot may be stale (below), or when its balance
// account does not exist yet (it is created in lock order first).
//
// Missing balance accounts. A refund's partner has no balance account
// until its first credited commission or refund, and one round created
// one account, so a batch of refunds of n such partners took n rounds
// (a read, the account and a write each: 50–120 ms for a batch of 16
// under load). A caller that owns its transaction (applyOwn) therefore
// lets the first round give up when any account is missing, before it
// writes anything: the transaction is rolled back, every missing account
// is created in one statement of its own (createBalanceAccounts), and the
// batch runs again. Only a caller's transaction (the processor's refund
// events) still creates them round by round.

// qRefundSnapshots reads, for each refund of a round (arrays of program
// $1, transaction id $2, amount $3 and refund id $4), the snapshot
// ledger.PlanRefund decides on. Refunds whose sale is not found return no
// row.
//
// Locks. Before any row, its one-time condition takes the exclusive
// advisory lock (22, program id) of each program in $5 (the batch's, in
// ascending order; empty after the first round), held to commit. A
// refund's statement locks its rollup rows in key order, but the rows of
// two refunds of one program written by two batches (the program's row of
// the refund's day and of the sale's day, the partner's and the link's)
// came in either order: two batches deadlocked, and Postgres found it only
// after deadlock_timeout (1 s). Every refund, batched, alone or from a
// processor event, takes this lock first, so the refunds of a program are
// written one transaction after the other. Then the rows are locked refund
// by refund in the order of their balance account (none first), then sale
// (t, sorted before any lock), each refund's partner's balance account,
// then its sale, then its commission: each lateral subquery refers to the
// one before it, so they are joined, and locked, in that order. A refund
// whose commission's account does not exist yet, and every refund after it
// in that order, locks nothing (blocked): the caller creates the account
// and reads them again, so that no lock is taken out of order.
//
// Freshness. The statement's snapshot is taken before it waits for any
// lock. The rows it locks are read as the lock returns them (their latest
// version), but the earlier refunds of the sale (the retry check) are read
// in the snapshot. Every refund row is written with an update of its sale,
// so a sale whose locked version is not the one the snapshot saw (stale)
// may have refunds the snapshot misses: that refund is read again in the
// next round, when its locks are held and a new snapshot sees them all.
//
// The arrays are read through sub-selects so that a custom plan cannot
// see their lengths (Postgres then planned the statement anew for most
// batches; docs/decisions.md, "Sixth round"), and every row is read by an
// index probe (LIMIT 1) whatever the estimates.
const qRefundSnapshots = `
		SELECT t.n, t.blocked, COALESCE(t.partner_id, 0), COALESCE(t.currency, ''),
			t.sale_id, sl.sale_id IS NOT NULL AS locked, sl.sale_id IS NOT NULL AND sl.xmin::text <> t.sale_xmin::text AS stale,
			COALESCE(sl.program_id, 0), COALESCE(sl.amount_cents, 0), COALESCE(sl.refunded_cents, 0),
			(SELECT workspace_id FROM programs WHERE id = t.program_id),
			cl.id, cl.program_id, cl.partner_id, cl.sale_id, cl.customer_id, cl.processor_event_id, cl.currency,
			cl.original_minor, cl.amount_minor, cl.status, cl.credited, cl.reason, cl.approve_after, cl.approved_at,
			cl.paid_at, cl.reversed_at, cl.withdrawal_id, cl.created_at,
			t.amount_cents > 0 AND EXISTS (SELECT 1 FROM refunds WHERE sale_id = t.sale_id
				AND CASE WHEN t.refund_id <> '' THEN refund_id = t.refund_id ELSE amount_cents = t.amount_cents END),
			ARRAY(SELECT id FROM webhook_endpoints
				WHERE program_id = t.program_id AND deleted_at IS NULL AND $6 = ANY (events) ORDER BY id),
			ARRAY(SELECT id FROM webhook_endpoints
				WHERE program_id = t.program_id AND deleted_at IS NULL AND $7 = ANY (events) ORDER BY id)
		FROM (
			SELECT r.n, r.program_id, r.amount_cents, r.refund_id, s.id AS sale_id, s.xmin AS sale_xmin,
				c.id AS commission_id, c.partner_id, c.currency,
				bool_or(c.id IS NOT NULL AND b.partner_id IS NULL)
					OVER (ORDER BY COALESCE(c.partner_id, 0), COALESCE(c.currency, ''), s.id, r.n ROWS UNBOUNDED PRECEDING) AS blocked
			FROM unnest((SELECT $1::bigint[]), (SELECT $2::text[]), (SELECT $3::bigint[]), (SELECT $4::text[]))
				WITH ORDINALITY AS r (program_id, transaction_id, amount_cents, refund_id, n)
			CROSS JOIN LATERAL (
				SELECT id, xmin FROM sales WHERE program_id = r.program_id AND processor_event_id = r.transaction_id LIMIT 1
			) s
			LEFT JOIN LATERAL (SELECT id, partner_id, currency FROM commissions WHERE sale_id = s.id LIMIT 1) c ON true
			LEFT JOIN LATERAL (
				SELECT partner_id FROM balance_accounts WHERE partner_id = c.partner_id AND currency = c.currency LIMIT 1
			) b ON true
			ORDER BY COALESCE(c.partner_id, 0), COALESCE(c.currency, ''), s.id, r.n
		) t
		LEFT JOIN LATERAL (
			SELECT true AS locked FROM balance_accounts
			WHERE partner_id = t.partner_id AND currency = t.currency AND NOT t.blocked
			FOR NO KEY UPDATE
		) a ON true
		LEFT JOIN LATERAL (
			SELECT id AS sale_id, xmin, program_id, amount_cents, refunded_cents FROM sales
			WHERE id = t.sale_id AND NOT t.blocked AND COALESCE(a.locked, true)
			FOR NO KEY UPDATE
		) sl ON true
		LEFT JOIN LATERAL (
			SELECT ` + commissionColumns + commissionFrom + `
			WHERE c.id = t.commission_id AND sl.sale_id IS NOT NULL
			FOR NO KEY UPDATE OF c
		) cl (id, program_id, partner_id, sale_id, customer_id, processor_event_id, currency, original_minor,
			amount_minor, status, credited, reason, approve_after, approved_at, paid_at, reversed_at,
			withdrawal_id, created_at) ON true
		WHERE (SELECT count(*) FROM (
				SELECT pg_advisory_xact_lock(22, (p & 2147483647)::int) FROM unnest((SELECT $5::bigint[])) AS p
			) l) = cardinality((SELECT $5::bigint[]))`

// qWriteRefunds writes planned refunds: each parameter $1–$16 is an array
// with one element per refund (0 or an empty text is NULL where a column
// may be NULL), whose sales are all different; $17–$20 are the outbox
// rows, in order. It returns the outbox rows' ids in order, the places
// (1-based) of the refunds whose deduction met open withdrawals of their
// partner, and how many refund rows it wrote. The rows it updates are
// found by = ANY of an array, read by their index whatever the plan's
// estimates. The balance accounts are locked, and every change of a
// withdrawal takes that lock, so the statement's snapshot sees them all.
const qWriteRefunds = `
		WITH r AS (
			SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::text[], $6::bigint[],
				$7::text[], $8::text[], $9::timestamptz[], $10::text[], $11::text[], $12::bigint[], $13::text[],
				$14::bigint[], $15::text[], $16::boolean[])
			WITH ORDINALITY AS r (sale_id, amount_cents, program_id, commission_id, refund_id, deduction_minor,
				reason, source, now, transaction_id, status, commission_minor, commission_reason,
				partner_id, currency, deduct, n)
		), sale AS (
			UPDATE sales SET refunded_cents = sales.refunded_cents + r.amount_cents
			FROM r WHERE sales.id = ANY ($1::bigint[]) AND sales.id = r.sale_id
		), refund AS (
			INSERT INTO refunds (sale_id, program_id, commission_id, refund_id, amount_cents, deduction_minor, reason, source, created_at)
			SELECT sale_id, program_id, NULLIF(commission_id, 0), NULLIF(refund_id, ''), amount_cents, deduction_minor,
				NULLIF(reason, ''), source, now
			FROM r ORDER BY n
			RETURNING id, sale_id
		), tracking_log AS (
			INSERT INTO tracking_logs (program_id, event_type, is_test, source, reference, created_at)
			SELECT program_id, 'refund', false, source, NULLIF(transaction_id, ''), now FROM r ORDER BY n
		), commission AS (
			UPDATE commissions SET status = r.status, amount_minor = r.commission_minor, reason = NULLIF(r.commission_reason, ''),
				reversed_at = CASE WHEN r.status = 'reversed' THEN r.now ELSE commissions.reversed_at END, updated_at = r.now
			FROM r WHERE commissions.id = ANY ($4::bigint[]) AND commissions.id = r.commission_id
		), entry AS (
			INSERT INTO balance_entries (partner_id, currency, kind, amount_minor, commission_id, refund_id, program_id, created_at)
			SELECT r.partner_id, r.currency, 'deduction', -r.deduction_minor, r.commission_id, refund.id, r.program_id, r.now
			FROM r JOIN refund ON refund.sale_id = r.sale_id
			WHERE r.deduct ORDER BY r.n
		), outbox AS (
			INSERT INTO outbox (task_type, queue, payload, created_at)
			SELECT o.task_type, o.queue, o.payload::jsonb, o.created_at
			FROM unnest($17::text[], $18::text[], $19::text[], $20::timestamptz[]) WITH ORDINALITY AS o(task_type, queue, payload, created_at, n)
			ORDER BY o.n
			RETURNING id
		)
		SELECT ARRAY(SELECT id FROM outbox ORDER BY id),
			ARRAY(SELECT r.n FROM r WHERE r.deduct AND EXISTS (SELECT 1 FROM withdrawals w
				WHERE w.partner_id = r.partner_id AND w.currency = r.currency AND w.status = 'open') ORDER BY r.n),
			(SELECT count(*) FROM refund)`

const qFitOpenWithdrawals = `
		SELECT w.id, w.amount_minor,
			(SELECT COALESCE(SUM(amount_minor), 0) FROM balance_entries WHERE partner_id = $1 AND currency = $2)
		FROM withdrawals w
		WHERE w.partner_id = $1 AND w.currency = $2 AND w.status = 'open'
		ORDER BY w.id DESC FOR NO KEY UPDATE`

// refundStatements are the refund service's statements, prepared.
func refundStatements(db *DB) *preparedStatements {
	return newPreparedStatements(db, qRefundSnapshots, qWriteRefunds, qFitOpenWithdrawals)
}

// refundItem is one refund through the write path, and what became of it
// in the transaction, answered once it commits.
type refundItem struct {
	in  ledger.RefundInput
	now time.Time

	done   bool // answered: res, or answer (a refusal, before anything was written)
	res    *ledger.RefundResult
	answer error
	msgs   []ledger.OutboxMessage
	write  *ledger.RefundWrite // planned in the current round
}

// reset forgets an outcome: a transaction run again starts afresh.
func (it *refundItem) reset() { *it = refundItem{in: it.in, now: it.now} }

// refundRead is a refund's row of qRefundSnapshots.
type refundRead struct {
	// blocked: its balance account (partnerID, currency) or an earlier
	// one in the lock order does not exist yet, and it locked nothing.
	blocked   bool
	partnerID int64
	currency  string
	saleID    int64
	// locked: its sale was locked (not: it was deleted meanwhile).
	locked bool
	// stale: its sale changed after the statement's snapshot.
	stale bool
	snap  ledger.RefundSnapshot
}

// accountKey is a partner's balance account.
type accountKey struct {
	partnerID int64
	currency  string
}

func compareAccounts(a, b accountKey) int {
	return cmp.Or(cmp.Compare(a.partnerID, b.partnerID), strings.Compare(a.currency, b.currency))
}

// applyRefund applies one refund in the caller's transaction (the
// processor's refund events; stmts nil runs the statements unprepared)
// and returns its answer and the outbox messages to relay after commit.
// Errors: ENotFound (the sale), before anything is written.
func applyRefund(ctx context.Context, tx *sqlx.Tx, stmts *preparedStatements, in ledger.RefundInput, now time.Time) (*ledger.RefundResult, []ledger.OutboxMessage, error) {
	it := &refundItem{in: in, now: now}
	if err := applyRefunds(ctx, tx, stmts, []*refundItem{it}, false); err != nil {
		return nil, nil, err
	}
	return it.outcome()
}

// outcome is an applied refund's answer and the outbox messages to relay
// after commit.
func (it *refundItem) outcome() (*ledger.RefundResult, []ledger.OutboxMessage, error) {
	if it.answer != nil {
		return nil, nil, it.answer
	}
	return it.res, it.msgs, nil
}

// accountsMissing is applyRefunds giving up in its first round, with
// nothing written, because the balance accounts of some of its refunds do
// not exist yet: accounts, in lock order, to create before running the
// refunds again.
type accountsMissing struct {
	accounts []accountKey
	now      time.Time
}

func (e *accountsMissing) Error() string {
	return fmt.Sprintf("refunds: %d balance accounts to create first", len(e.accounts))
}

// applyOwn applies refunds in a transaction of their own (Transact),
// creating first, in one statement, every balance account the first
// round found missing; see "Missing balance accounts" above.
func applyOwn(ctx context.Context, db *DB, stmts *preparedStatements, items []*refundItem) error {
	err := db.Transact(ctx, func(tx *sqlx.Tx) error { return applyRefunds(ctx, tx, stmts, items, true) })
	var missing *accountsMissing
	if !errors.As(err, &missing) {
		return err
	}
	if err := createBalanceAccounts(ctx, db, missing.accounts, missing.now); err != nil {
		return err
	}
	// Round by round from here: an account deleted meanwhile is created
	// in the transaction rather than started over for.
	return db.Transact(ctx, func(tx *sqlx.Tx) error { return applyRefunds(ctx, tx, stmts, items, false) })
}

// applyRefunds applies refunds in tx, round by round, and leaves each
// one's answer and outbox messages on it. An error rolls everything back.
// With giveUp, a first round that finds balance accounts missing returns
// *accountsMissing before anything is written (applyOwn).
func applyRefunds(ctx context.Context, tx *sqlx.Tx, stmts *preparedStatements, items []*refundItem, giveUp bool) error {
	programs := make([]int64, len(items))
	for i, it := range items {
		it.reset()
		programs[i] = it.in.ProgramID
	}
	locks := slices.Compact(slices.Sorted(slices.Values(programs)))
	// Each round answers a refund, creates an account or reads again
	// refunds it has just locked, which cannot be stale once locked:
	// rounds bounds a bug, not the work.
	rounds := 2*len(items) + 2
	for round, first := items, true; len(round) > 0; locks, first = []int64{}, false {
		if rounds--; rounds < 0 {
			return fmt.Errorf("refunds: %d left after %d rounds", len(round), 2*len(items)+2)
		}
		reads, err := readRefundSnapshots(ctx, tx, stmts, round, locks)
		if err != nil {
			return err
		}
		var planned, later []*refundItem
		var missing *accountKey
		var missingAt time.Time
		claimed := map[int64]bool{}
		for i, it := range round {
			r := reads[i]
			switch {
			case r == nil || (!r.blocked && !r.locked):
				it.done, it.answer = true, ledger.NewError(ledger.ENotFound, ledger.MsgSaleNotFound)
			case r.blocked:
				if k := (accountKey{r.partnerID, r.currency}); r.partnerID != 0 && (missing == nil || compareAccounts(k, *missing) < 0) {
					missing, missingAt = &k, it.now
				}
				later = append(later, it)
			case r.stale || claimed[r.saleID]:
				later = append(later, it)
			default:
				plan := ledger.PlanRefund(it.in, r.snap)
				it.done, it.res = true, &plan.Result
				if it.write = plan.Write; it.write != nil {
					claimed[r.saleID] = true
					planned = append(planned, it)
				}
			}
		}
		if missing != nil && giveUp && first { // nothing written yet
			return blockedAccounts(round, reads)
		}
		if missing != nil {
			// Every lock this transaction holds comes before the account
			// in the lock order.
			if err := lockBalanceAccount(ctx, tx, missing.partnerID, ledger.Currency(missing.currency), missingAt); err != nil {
				return err
			}
		}
		if err := writeRefunds(ctx, tx, stmts, planned); err != nil {
			return err
		}
		round = later
	}
	return nil
}

// blockedAccounts is the accountsMissing of a round: the accounts of its
// blocked refunds (some of them may exist: a refund is blocked by the
// first missing account before it in the lock order too), in lock order.
func blockedAccounts(round []*refundItem, reads []*refundRead) *accountsMissing {
	e := &accountsMissing{}
	seen := map[accountKey]bool{}
	for i, r := range reads {
		if r == nil || !r.blocked || r.partnerID == 0 {
			continue
		}
		if k := (accountKey{r.partnerID, r.currency}); !seen[k] {
			seen[k] = true
			e.accounts = append(e.accounts, k)
		}
		if it := round[i]; e.now.IsZero() || it.now.Before(e.now) {
			e.now = it.now
		}
	}
	slices.SortFunc(e.accounts, compareAccounts)
	return e
}

// readRefundSnapshots runs qRefundSnapshots for a round; a refund whose
// sale was not found has no read.
func readRefundSnapshots(ctx context.Context, tx *sqlx.Tx, stmts *preparedStatements, round []*refundItem, locks []int64) ([]*refundRead, error) {
	programs := make([]int64, len(round))
	txns, refundIDs := make([]string, len(round)), make([]string, len(round))
	amounts := make([]int64, len(round))
	for i, it := range round {
		programs[i], txns[i], amounts[i], refundIDs[i] = it.in.ProgramID, it.in.TransactionID, it.in.AmountCents, it.in.RefundID
	}
	args := []any{pq.Array(programs), pq.Array(txns), pq.Array(amounts), pq.Array(refundIDs), pq.Array(locks),
		ledger.EventCommissionReversed, ledger.EventCommissionRefunded}
	var rows *sql.Rows
	var err error
	if stmts == nil {
		rows, err = tx.QueryContext(ctx, qRefundSnapshots, args...)
	} else {
		rows, err = stmts.in(ctx, tx, qRefundSnapshots).QueryContext(ctx, args...)
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	reads := make([]*refundRead, len(round))
	for rows.Next() {
		var n int
		r := &refundRead{}
		var c struct {
			id, programID, partnerID, saleID, original, amount sql.NullInt64
			txn, currency, status, reason                      sql.NullString
			credited                                           sql.NullBool
			approveAfter, createdAt                            sql.NullTime
		}
		cm := &ledger.Commission{}
		var workspaceID sql.NullInt64
		var reversed, refunded pq.Int64Array
		if err := rows.Scan(&n, &r.blocked, &r.partnerID, &r.currency, &r.saleID, &r.locked, &r.stale,
			&r.snap.ProgramID, &r.snap.SaleAmount, &r.snap.RefundedBefore, &workspaceID,
			&c.id, &c.programID, &c.partnerID, &c.saleID, &cm.CustomerID, &c.txn, &c.currency,
			&c.original, &c.amount, &c.status, &c.credited, &c.reason, &c.approveAfter, &cm.ApprovedAt,
			&cm.PaidAt, &cm.ReversedAt, &cm.WithdrawalID, &c.createdAt,
			&r.snap.Retry, &reversed, &refunded); err != nil {
			return nil, err
		}
		if n < 1 || n > len(round) {
			return nil, fmt.Errorf("refund snapshot %d of %d", n, len(round))
		}
		r.snap.SaleID, r.snap.WorkspaceID = r.saleID, workspaceID.Int64
		r.snap.ReversedEndpoints, r.snap.RefundedEndpoints = reversed, refunded
		if c.id.Valid {
			cm.ID, cm.ProgramID, cm.PartnerID, cm.SaleID = c.id.Int64, c.programID.Int64, c.partnerID.Int64, c.saleID.Int64
			cm.TransactionID, cm.Currency = c.txn.String, ledger.Currency(c.currency.String)
			cm.OriginalMinor, cm.AmountMinor, cm.Status = c.original.Int64, c.amount.Int64, c.status.String
			cm.Credited, cm.Reason = c.credited.Bool, c.reason.String
			cm.ApproveAfter, cm.CreatedAt = c.approveAfter.Time, c.createdAt.Time
			r.snap.Commission = cm
		}
		reads[n-1] = r
	}
	return reads, rows.Err()
}

// refundColumns are qWriteRefunds's arrays.
type refundColumns struct {
	saleID, amount, programID, commissionID, deduction, commissionMinor, partnerID []int64
	refundID, reason, source, now, txn, status, commissionReason, currency         []string
	deduct                                                                         []bool
	taskTypes, queues, payloads, createdAt                                         []string
}

func (c *refundColumns) args() []any {
	return []any{pq.Array(c.saleID), pq.Array(c.amount), pq.Array(c.programID), pq.Array(c.commissionID),
		pq.Array(c.refundID), pq.Array(c.deduction), pq.Array(c.reason), pq.Array(c.source), pq.Array(c.now),
		pq.Array(c.txn), pq.Array(c.status), pq.Array(c.commissionMinor), pq.Array(c.commissionReason),
		pq.Array(c.partnerID), pq.Array(c.currency), pq.Array(c.deduct),
		pq.Array(c.taskTypes), pq.Array(c.queues), pq.Array(c.payloads), pq.Array(c.createdAt)}
}

// writeRefunds writes the planned refunds of a round in one statement,
// leaves on each the outbox messages it wrote, then fits the open
// withdrawals of the balance accounts their deductions met, in the lock
// order.
func writeRefunds(ctx context.Context, tx *sqlx.Tx, stmts *preparedStatements, planned []*refundItem) error {
	if len(planned) == 0 {
		return nil
	}
	c := &refundColumns{}
	var owners []*refundItem
	for _, it := range planned {
		w, r := it.write, it.write.Refund
		rows, err := refundOutboxRows(w, it.now)
		if err != nil {
			return err
		}
		for _, row := range rows {
			raw, err := json.Marshal(row.payload)
			if err != nil {
				return err
			}
			it.msgs = append(it.msgs, ledger.OutboxMessage{TaskType: row.taskType, Queue: row.queue, Payload: raw, CreatedAt: it.now})
			owners = append(owners, it)
			c.taskTypes, c.queues = append(c.taskTypes, row.taskType), append(c.queues, row.queue)
			c.payloads, c.createdAt = append(c.payloads, string(raw)), append(c.createdAt, timeText(it.now))
		}
		var commissionID int64
		if r.CommissionID != nil {
			commissionID = *r.CommissionID
		}
		var status, reason, currency string
		var amount, partnerID int64
		if ch := w.Commission; ch != nil {
			status, amount, reason = ch.Status, ch.AmountMinor, ch.Reason
		}
		if d := w.Deduction; d != nil {
			partnerID, currency = d.PartnerID, string(d.Currency)
		}
		c.saleID, c.amount, c.programID = append(c.saleID, r.SaleID), append(c.amount, r.AmountCents), append(c.programID, r.ProgramID)
		c.commissionID, c.refundID = append(c.commissionID, commissionID), append(c.refundID, r.RefundID)
		c.deduction, c.reason, c.source = append(c.deduction, r.DeductionMinor), append(c.reason, r.Reason), append(c.source, r.Source)
		c.now, c.txn = append(c.now, timeText(it.now)), append(c.txn, r.TransactionID)
		c.status, c.commissionMinor, c.commissionReason = append(c.status, status), append(c.commissionMinor, amount), append(c.commissionReason, reason)
		c.partnerID, c.currency, c.deduct = append(c.partnerID, partnerID), append(c.currency, currency), append(c.deduct, w.Deduction != nil)
	}
	var ids, fits pq.Int64Array
	var written int
	if err := stmts.row(ctx, tx, qWriteRefunds, c.args()...).Scan(&ids, &fits, &written); err != nil {
		return err
	}
	if written != len(planned) {
		return fmt.Errorf("refunds: %d rows written for %d refunds", written, len(planned))
	}
	if len(ids) != len(owners) {
		return fmt.Errorf("outbox: %d rows written for %d messages", len(ids), len(owners))
	}
	next := map[*refundItem]int{}
	for i, it := range owners {
		it.msgs[next[it]].ID = ids[i]
		next[it]++
	}
	// The time of the withdrawals' change is the last deduction's of
	// their account, as if each deduction had fitted them.
	fit := map[accountKey]time.Time{}
	for _, n := range fits {
		if it := planned[n-1]; it.write.FitWithdrawals && it.write.Deduction != nil {
			d := it.write.Deduction
			fit[accountKey{d.PartnerID, string(d.Currency)}] = it.now
		}
	}
	for _, a := range slices.SortedFunc(maps.Keys(fit), compareAccounts) {
		if err := fitWithdrawalsToBalance(ctx, tx, stmts, a.partnerID, ledger.Currency(a.currency), fit[a]); err != nil {
			return err
		}
	}
	return nil
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
// Fitting once after several deductions lowers them as fitting after each
// would: the newest are lowered first either way.
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
