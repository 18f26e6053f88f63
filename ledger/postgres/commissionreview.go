package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/partnertrack/partnertrack/ledger"
)

// CommissionReviewService implements ledger.CommissionReviewService: the
// brand's listing of its program's commissions, its approvals and
// rejections (through the commission ledger's own writers: approveLocked,
// the refund path's deduction and withdrawal fitting) and the program's
// audit log.
type CommissionReviewService struct {
	db    *DB
	after *afterCommit
}

// NewCommissionReviewService returns the review service over db. relay
// sends the webhooks a decision writes to the outbox right after commit;
// nil leaves them to the outbox sweep.
func NewCommissionReviewService(db *DB, relay ledger.OutboxRelay, logger *slog.Logger) *CommissionReviewService {
	return &CommissionReviewService{db: db, after: newAfterCommit(relay, logger)}
}

// WaitRelays blocks until the relays started after commits have finished
// (graceful shutdown, tests).
func (s *CommissionReviewService) WaitRelays() { s.after.wait() }

var _ ledger.CommissionReviewService = (*CommissionReviewService)(nil)

// reviewColumns read a reviewed commission from commissions c, sales s
// and partners pa (LEFT JOIN: the partner may be gone).
const reviewColumns = `c.id, c.program_id, c.partner_id, c.sale_id, s.processor_event_id,
	c.currency, c.original_minor, c.amount_minor, c.status, c.credited, COALESCE(c.reason, ''),
	c.approve_after, c.approved_at, c.paid_at, c.reversed_at, c.rejected_at, c.withdrawal_id, c.created_at,
	COALESCE(pa.name, ''), COALESCE(pa.email, '')`

const reviewFrom = ` FROM commissions c JOIN sales s ON s.id = c.sale_id LEFT JOIN partners pa ON pa.id = c.partner_id`

func scanReviewed(row interface{ Scan(...any) error }, more ...any) (*ledger.ReviewedCommission, error) {
	r := &ledger.ReviewedCommission{}
	c := &r.Commission
	var cur string
	err := row.Scan(append([]any{&c.ID, &c.ProgramID, &c.PartnerID, &c.SaleID, &c.TransactionID,
		&cur, &c.OriginalMinor, &c.AmountMinor, &c.Status, &c.Credited, &c.Reason,
		&c.ApproveAfter, &c.ApprovedAt, &c.PaidAt, &c.ReversedAt, &r.RejectedAt, &c.WithdrawalID, &c.CreatedAt,
		&r.PartnerName, &r.PartnerEmail}, more...)...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ledger.NewError(ledger.ENotFound, ledger.MsgCommissionNotFound)
	}
	if err != nil {
		return nil, err
	}
	c.Currency = ledger.Currency(cur)
	c.ApproveAfter, c.CreatedAt = c.ApproveAfter.UTC(), c.CreatedAt.UTC()
	for _, t := range []**time.Time{&c.ApprovedAt, &c.PaidAt, &c.ReversedAt, &r.RejectedAt} {
		if *t != nil {
			u := (*t).UTC()
			*t = &u
		}
	}
	return r, nil
}

// reviewFilter is the WHERE clause of the listing and its arguments: the
// program's commissions of real (not test) sales, narrowed by the
// filters sent.
func reviewFilter(q ledger.CommissionQuery) (string, []any) {
	where := []string{"c.program_id = $1", "NOT s.is_test"}
	args := []any{q.ProgramID}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if q.Status != "" {
		add("c.status = $%d", q.Status)
	}
	if q.PartnerID != nil {
		add("c.partner_id = $%d", *q.PartnerID)
	}
	if q.From != nil {
		add("c.created_at >= $%d", *q.From)
	}
	if q.To != nil {
		add("c.created_at <= $%d", *q.To)
	}
	return strings.Join(where, " AND "), args
}

// Commissions returns a page of the program's commissions, newest first,
// in one query (the total counted by a window over the matching rows); a
// page past the last one reads the total with a second query.
func (s *CommissionReviewService) Commissions(ctx context.Context, q ledger.CommissionQuery) (p *ledger.CommissionPage, err error) {
	defer wrap(&err, "postgres.Commissions(%d)", q.ProgramID)
	where, args := reviewFilter(q)
	args = append(args, q.PageSize, q.Offset())
	n := len(args)
	rows, err := s.db.QueryContext(ctx, `SELECT `+reviewColumns+`, count(*) OVER ()`+reviewFrom+`
		WHERE `+where+`
		ORDER BY c.created_at DESC, c.id DESC
		LIMIT $`+fmt.Sprint(n-1)+` OFFSET $`+fmt.Sprint(n), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	p = &ledger.CommissionPage{Commissions: []ledger.ReviewedCommission{}, Page: q.Page, PageSize: q.PageSize}
	for rows.Next() {
		r, err := scanReviewed(rows, &p.Total)
		if err != nil {
			return nil, err
		}
		p.Commissions = append(p.Commissions, *r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(p.Commissions) == 0 && q.Page > 1 {
		where, args := reviewFilter(q)
		if err := s.db.QueryRowContext(ctx, `SELECT count(*)`+reviewFrom+` WHERE `+where, args...).Scan(&p.Total); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// CommissionBatch reads the next ledger.CommissionExportBatch commissions
// after after (nil: from the start), keyset on the listing's order
// (created_at, id), so no batch rereads what came before.
func (s *CommissionReviewService) CommissionBatch(ctx context.Context, q ledger.CommissionQuery, after *ledger.ReviewedCommission) (out []ledger.ReviewedCommission, err error) {
	defer wrap(&err, "postgres.CommissionBatch(%d)", q.ProgramID)
	where, args := reviewFilter(q)
	if after != nil {
		args = append(args, after.CreatedAt, after.ID)
		where += fmt.Sprintf(" AND (c.created_at, c.id) < ($%d, $%d)", len(args)-1, len(args))
	}
	args = append(args, ledger.CommissionExportBatch)
	rows, err := s.db.QueryContext(ctx, `SELECT `+reviewColumns+reviewFrom+`
		WHERE `+where+`
		ORDER BY c.created_at DESC, c.id DESC
		LIMIT $`+fmt.Sprint(len(args)), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out = []ledger.ReviewedCommission{}
	for rows.Next() {
		r, err := scanReviewed(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *r)
	}
	return out, rows.Err()
}

// lockProgramCommission locks a commission of the program for a decision,
// in the lock order of every money change: its partner's balance account
// first, then the commission. A commission of another program, or of a
// test sale, is not found, and nothing of it is locked.
func lockProgramCommission(ctx context.Context, tx *sqlx.Tx, programID, id int64, now time.Time) (*ledger.Commission, error) {
	var partnerID int64
	var cur string
	err := tx.QueryRowContext(ctx, `
		SELECT c.partner_id, c.currency FROM commissions c JOIN sales s ON s.id = c.sale_id
		WHERE c.id = $1 AND c.program_id = $2 AND NOT s.is_test`, id, programID).Scan(&partnerID, &cur)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ledger.NewError(ledger.ENotFound, ledger.MsgCommissionNotFound)
	} else if err != nil {
		return nil, err
	}
	if err := lockBalanceAccount(ctx, tx, partnerID, ledger.Currency(cur), now); err != nil {
		return nil, err
	}
	return scanCommission(tx.QueryRowContext(ctx, `SELECT `+commissionColumns+commissionFrom+`
		WHERE c.id = $1 FOR NO KEY UPDATE OF c`, id))
}

// reviewed reads a commission of the program as the listing shows it.
func reviewed(ctx context.Context, tx *sqlx.Tx, programID, id int64) (*ledger.ReviewedCommission, error) {
	return scanReviewed(tx.QueryRowContext(ctx, `SELECT `+reviewColumns+reviewFrom+`
		WHERE c.id = $1 AND c.program_id = $2`, id, programID))
}

// decide runs one decision on a locked commission of the program in a
// transaction, then relays the outbox messages it wrote and returns the
// commission as the listing shows it.
func (s *CommissionReviewService) decide(ctx context.Context, programID, id int64,
	fn func(tx *sqlx.Tx, c *ledger.Commission, now time.Time) ([]ledger.OutboxMessage, error)) (r *ledger.ReviewedCommission, err error) {
	now := s.db.now()
	var msgs []ledger.OutboxMessage
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		c, err := lockProgramCommission(ctx, tx, programID, id, now)
		if err != nil {
			return err
		}
		if msgs, err = fn(tx, c, now); err != nil {
			return err
		}
		r, err = reviewed(ctx, tx, programID, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.after.send(msgs)
	return r, nil
}

// ApproveCommission approves a pending commission of the program now,
// through approveLocked (the scheduled approval's writer: the balance
// credit and the commission.approved webhook), and records it in the
// audit log in the same transaction.
func (s *CommissionReviewService) ApproveCommission(ctx context.Context, programID, id, actorUserID int64) (r *ledger.ReviewedCommission, err error) {
	defer wrap(&err, "postgres.ReviewApproveCommission(%d, %d)", programID, id)
	return s.decide(ctx, programID, id, func(tx *sqlx.Tx, c *ledger.Commission, now time.Time) ([]ledger.OutboxMessage, error) {
		if err := ledger.CheckApprovable(c); err != nil {
			return nil, err
		}
		msgs, err := approveLocked(ctx, tx, c, now)
		if err != nil {
			return nil, err
		}
		return msgs, insertAudit(ctx, tx, ledger.AuditEntry{
			ProgramID: programID, ActorUserID: actorUserID, Action: ledger.AuditCommissionApproved,
			SubjectType: ledger.AuditSubjectCommission, SubjectID: c.ID,
			Details: map[string]any{
				"partner_id": c.PartnerID, "transaction_id": c.TransactionID, "previous_status": ledger.CommissionPending,
				"status": c.Status, "amount": ledger.MajorNumber(c.AmountMinor, c.Currency), "currency": string(c.Currency),
			},
		}, now)
	})
}

// RejectCommission rejects a commission of the program as
// ledger.PlanRejection decides: a pending one becomes rejected; an
// approved one is reversed, its amount deducted from the balance and the
// open withdrawals fitted to what is left (the refund path's
// fitWithdrawalsToBalance). The partner's in-app notification, the
// commission.rejected webhook and the audit row are written in the same
// transaction.
func (s *CommissionReviewService) RejectCommission(ctx context.Context, programID, id, actorUserID int64, reason string) (r *ledger.ReviewedCommission, err error) {
	defer wrap(&err, "postgres.RejectCommission(%d, %d)", programID, id)
	return s.decide(ctx, programID, id, func(tx *sqlx.Tx, c *ledger.Commission, now time.Time) ([]ledger.OutboxMessage, error) {
		plan, err := ledger.PlanRejection(c)
		if err != nil {
			return nil, err
		}
		previous, rejected := c.Status, c.AmountMinor
		if _, err := tx.ExecContext(ctx, `
			UPDATE commissions SET status = $2, amount_minor = 0, reason = $3, updated_at = $4,
				rejected_at = CASE WHEN $2 = 'rejected' THEN $4 ELSE rejected_at END,
				reversed_at = CASE WHEN $2 = 'reversed' THEN $4 ELSE reversed_at END
			WHERE id = $1`, c.ID, plan.Status, reason, now); err != nil {
			return nil, err
		}
		c.Status, c.AmountMinor, c.Reason = plan.Status, 0, reason
		var deduction int64
		if d := plan.Deduction; d != nil {
			deduction = d.AmountMinor
			if err := appendEntry(ctx, tx, balanceEntry{partnerID: d.PartnerID, currency: d.Currency, kind: ledger.EntryDeduction,
				amountMinor: -d.AmountMinor, commissionID: &d.CommissionID, programID: &c.ProgramID}, now); err != nil {
				return nil, err
			}
			if plan.FitWithdrawals {
				if err := fitWithdrawalsToBalance(ctx, tx, nil, d.PartnerID, d.Currency, now); err != nil {
					return nil, err
				}
			}
		}
		notice, err := insertOutbox(ctx, tx, ledger.OutboxTaskNotification, ledger.OutboxQueueNotifications,
			ledger.RejectionNotification(c, reason, rejected, deduction), now)
		if err != nil {
			return nil, err
		}
		hooks, err := brandEvent(ctx, tx, programID, ledger.EventCommissionRejected,
			ledger.NewCommissionRejectedData(c, reason, rejected, deduction), now)
		if err != nil {
			return nil, err
		}
		msgs := append([]ledger.OutboxMessage{notice}, hooks...)
		return msgs, insertAudit(ctx, tx, ledger.AuditEntry{
			ProgramID: programID, ActorUserID: actorUserID, Action: ledger.AuditCommissionRejected,
			SubjectType: ledger.AuditSubjectCommission, SubjectID: c.ID,
			Details: map[string]any{
				"partner_id": c.PartnerID, "transaction_id": c.TransactionID, "previous_status": previous,
				"status": plan.Status, "reason": reason, "currency": string(c.Currency),
				"amount":           ledger.MajorNumber(rejected, c.Currency),
				"deduction_amount": ledger.MajorNumber(deduction, c.Currency),
			},
		}, now)
	})
}

// Audit returns a page of the program's audit log, newest first
// (audit_log_program_idx), the total counted by a window over the
// matching rows.
func (s *CommissionReviewService) Audit(ctx context.Context, q ledger.AuditQuery) (p *ledger.AuditPage, err error) {
	defer wrap(&err, "postgres.Audit(%d)", q.ProgramID)
	where, args := []string{"program_id = $1"}, []any{q.ProgramID}
	if q.Action != "" {
		args = append(args, q.Action)
		where = append(where, fmt.Sprintf("action = $%d", len(args)))
	}
	if q.SubjectType != "" {
		args = append(args, q.SubjectType)
		where = append(where, fmt.Sprintf("subject_type = $%d", len(args)))
	}
	cond := strings.Join(where, " AND ")
	countArgs := args
	args = append(args, q.PageSize, q.Offset())
	rows, err := s.db.QueryContext(ctx, `
		SELECT id, program_id, COALESCE(actor_user_id, 0), COALESCE(actor_email, ''), action, subject_type,
			COALESCE(subject_id, 0), details::text, created_at, count(*) OVER ()
		FROM audit_log WHERE `+cond+`
		ORDER BY id DESC LIMIT $`+fmt.Sprint(len(args)-1)+` OFFSET $`+fmt.Sprint(len(args)), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	p = &ledger.AuditPage{Entries: []ledger.AuditEntry{}, Page: q.Page, PageSize: q.PageSize}
	for rows.Next() {
		var e ledger.AuditEntry
		var details string
		if err := rows.Scan(&e.ID, &e.ProgramID, &e.ActorUserID, &e.ActorEmail, &e.Action, &e.SubjectType,
			&e.SubjectID, &details, &e.CreatedAt, &p.Total); err != nil {
			return nil, err
		}
		d := json.NewDecoder(strings.NewReader(details))
		d.UseNumber() // amounts stay exact
		if err := d.Decode(&e.Details); err != nil {
			return nil, err
		}
		e.CreatedAt = e.CreatedAt.UTC()
		p.Entries = append(p.Entries, e)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(p.Entries) == 0 && q.Page > 1 {
		if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM audit_log WHERE `+cond, countArgs...).Scan(&p.Total); err != nil {
			return nil, err
		}
	}
	return p, nil
}
