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
	"github.com/lib/pq"
	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ledger"
)

// PayoutService implements ledger.PayoutService: payouts of a program's
// approved balances (the brand's runs and the partner's requests, one
// write path: createPayoutLocked), their transitions, and the partners'
// payout methods, sealed with SECRETS_KEY.
//
// Lock order, as every change of a partner's money (balance.go): the
// balance account (partner, currency) first, then the payout row, then
// the commissions. A run of several partners locks their accounts in
// ascending partner id, so two runs never deadlock.
type PayoutService struct {
	db    *DB
	after *afterCommit
}

// NewPayoutService returns the payout service over db. relay sends the
// webhooks, notifications and emails a change writes to the outbox right
// after commit; nil leaves them to the outbox sweep.
func NewPayoutService(db *DB, relay ledger.OutboxRelay, logger *slog.Logger) *PayoutService {
	return &PayoutService{db: db, after: newAfterCommit(relay, logger)}
}

// WaitRelays blocks until the relays started after commits have finished
// (graceful shutdown, tests).
func (s *PayoutService) WaitRelays() { s.after.wait() }

var _ ledger.PayoutService = (*PayoutService)(nil)

// purposePayoutMethod names payout_methods.sealed as a secretbox purpose.
const purposePayoutMethod = "payout_methods.sealed"

// payoutColumns read a payout from payouts p, programs pr and partners
// pa, with its clawback: the deductions, made after it was paid, of the
// commissions it paid (read through commissions_payout_id_idx).
const payoutColumns = `p.id, p.program_id, pr.name, p.partner_id, pa.name, pa.email, p.currency, p.amount_minor,
	p.status, p.requested_by, p.created_by, COALESCE(p.external_reference, ''), COALESCE(p.failure_reason, ''),
	p.created_at, p.updated_at, p.processing_at, p.paid_at, p.failed_at,
	(SELECT COALESCE(-SUM(b.amount_minor), 0) FROM commissions cm
		JOIN balance_entries b ON b.commission_id = cm.id AND b.kind = 'deduction'
		WHERE cm.payout_id = p.id AND p.paid_at IS NOT NULL AND b.created_at >= p.paid_at)`

const payoutFrom = ` FROM payouts p JOIN programs pr ON pr.id = p.program_id JOIN partners pa ON pa.id = p.partner_id`

func scanPayout(row interface{ Scan(...any) error }, more ...any) (*ledger.Payout, error) {
	p := &ledger.Payout{}
	var cur string
	var clawback minorSum
	err := row.Scan(append([]any{&p.ID, &p.ProgramID, &p.ProgramName, &p.PartnerID, &p.PartnerName, &p.PartnerEmail,
		&cur, &p.AmountMinor, &p.Status, &p.RequestedBy, &p.CreatedBy, &p.ExternalReference, &p.FailureReason,
		&p.CreatedAt, &p.UpdatedAt, &p.ProcessingAt, &p.PaidAt, &p.FailedAt, &clawback}, more...)...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ledger.NewError(ledger.ENotFound, ledger.MsgPayoutNotFound)
	}
	if err != nil {
		return nil, err
	}
	p.Currency, p.ClawbackMinor = ledger.Currency(cur), int64(clawback)
	p.CreatedAt, p.UpdatedAt = p.CreatedAt.UTC(), p.UpdatedAt.UTC()
	for _, t := range []**time.Time{&p.ProcessingAt, &p.PaidAt, &p.FailedAt} {
		if *t != nil {
			u := (*t).UTC()
			*t = &u
		}
	}
	return p, nil
}

// readPayout reads one payout.
func readPayout(ctx context.Context, q sqlx.QueryerContext, id int64) (*ledger.Payout, error) {
	return scanPayout(q.QueryRowxContext(ctx, `SELECT `+payoutColumns+payoutFrom+` WHERE p.id = $1`, id))
}

// payoutProgram is what a payout needs of its program.
type payoutProgram struct {
	id, workspaceID int64
	name            string
	currency        ledger.Currency
	minimum         decimal.Decimal
}

// readPayoutProgram reads a program, holding a key-share lock so it is
// not deleted under the payout. Errors: ENotFound.
func readPayoutProgram(ctx context.Context, q sqlx.QueryerContext, programID int64, lock string) (*payoutProgram, error) {
	p := &payoutProgram{}
	var cur, minimum string
	err := q.QueryRowxContext(ctx, `SELECT id, workspace_id, name, currency, minimum_payout::text FROM programs WHERE id = $1`+lock,
		programID).Scan(&p.id, &p.workspaceID, &p.name, &cur, &minimum)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ledger.NewError(ledger.ENotFound, ledger.MsgPayoutProgramNotFound)
	}
	if err != nil {
		return nil, err
	}
	p.currency = ledger.Currency(cur)
	p.minimum, err = decimal.NewFromString(minimum)
	return p, err
}

// minimumIn is the program's minimum payout in minor units of c: its
// minimum_payout in the program currency; other currencies have none.
func (p *payoutProgram) minimumIn(c ledger.Currency) int64 {
	if c != p.currency {
		return 0
	}
	return ledger.MinimumPayoutMinor(p.minimum, c)
}

// programBalance is what a payout may take of a partner's approved
// balance in a program and currency: the sum of the entries naming the
// program, never more than the whole account holds (money paid out
// without a program, before entries named programs, is not paid twice).
func programBalance(ctx context.Context, tx *sqlx.Tx, partnerID, programID int64, c ledger.Currency) (int64, error) {
	var sum minorSum
	err := tx.QueryRowContext(ctx, `
		SELECT LEAST(COALESCE(SUM(amount_minor) FILTER (WHERE program_id = $1), 0), COALESCE(SUM(amount_minor), 0))
		FROM balance_entries WHERE partner_id = $2 AND currency = $3`, programID, partnerID, string(c)).Scan(&sum)
	return int64(sum), err
}

// createPayoutLocked is the one write path of a new payout: the payout
// row, its 'payout' entry moving amount out of the program balance, the
// partner's open operator withdrawals fitted to what is left, the
// payout.created webhooks and, for a brand's run, the audit row. The
// caller holds the partner's balance account lock and decided amount.
func createPayoutLocked(ctx context.Context, tx *sqlx.Tx, prog *payoutProgram, partnerID int64, c ledger.Currency,
	amount int64, by string, actor *int64, now time.Time) (*ledger.Payout, []ledger.OutboxMessage, error) {
	var id int64
	if err := tx.QueryRowContext(ctx, `
		INSERT INTO payouts (program_id, partner_id, currency, amount_minor, status, requested_by, created_by, created_at, updated_at)
		VALUES ($1, $2, $3, $4, 'pending', $5, $6, $7, $7) RETURNING id`,
		prog.id, partnerID, string(c), amount, by, actor, now).Scan(&id); err != nil {
		return nil, nil, err
	}
	if err := appendEntry(ctx, tx, balanceEntry{partnerID: partnerID, currency: c, kind: ledger.EntryPayout,
		amountMinor: -amount, programID: &prog.id, payoutID: &id}, now); err != nil {
		return nil, nil, err
	}
	if err := fitOpenWithdrawals(ctx, tx, partnerID, c, now); err != nil {
		return nil, nil, err
	}
	p, err := readPayout(ctx, tx, id)
	if err != nil {
		return nil, nil, err
	}
	if by == ledger.PayoutByBrand {
		var actorID int64
		if actor != nil {
			actorID = *actor
		}
		if err := insertAudit(ctx, tx, ledger.AuditEntry{ProgramID: prog.id, ActorUserID: actorID,
			Action: ledger.AuditPayoutCreated, SubjectType: ledger.AuditSubjectPayout, SubjectID: id,
			Details: map[string]any{"partner_id": partnerID, "amount": ledger.MinorToMajor(amount, c).String(), "currency": string(c)}}, now); err != nil {
			return nil, nil, err
		}
	}
	msgs, err := brandEvent(ctx, tx, prog.id, ledger.EventPayoutCreated, ledger.NewPayoutEventData(p), now)
	return p, msgs, err
}

// DuePayouts lists the partners whose approved balance in the program
// currency reaches the program's minimum_payout, largest first, with
// whether a payout method is on file and its masked form.
func (s *PayoutService) DuePayouts(ctx context.Context, programID int64) (out []ledger.DuePayout, err error) {
	defer wrap(&err, "postgres.DuePayouts(%d)", programID)
	prog, err := readPayoutProgram(ctx, s.db, programID, "")
	if err != nil {
		return nil, err
	}
	minimum := prog.minimumIn(prog.currency)
	rows, err := s.db.QueryContext(ctx, `
		SELECT d.partner_id, pa.name, pa.email, d.balance, m.method, m.masked
		FROM (SELECT partner_id, SUM(amount_minor) AS balance FROM balance_entries
			WHERE program_id = $1 AND currency = $2 GROUP BY partner_id
			HAVING SUM(amount_minor) > 0 AND SUM(amount_minor) >= $3) d
		JOIN partners pa ON pa.id = d.partner_id
		LEFT JOIN payout_methods m ON m.partner_id = d.partner_id
		ORDER BY d.balance DESC, d.partner_id`, programID, string(prog.currency), minimum)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out = []ledger.DuePayout{}
	for rows.Next() {
		d := ledger.DuePayout{Currency: prog.currency}
		var bal minorSum
		var method sql.NullString
		var masked []byte
		if err := rows.Scan(&d.PartnerID, &d.PartnerName, &d.PartnerEmail, &bal, &method, &masked); err != nil {
			return nil, err
		}
		d.AmountMinor = int64(bal)
		if method.Valid {
			d.MethodOnFile, d.Method = true, method.String
			if err := json.Unmarshal(masked, &d.Masked); err != nil {
				return nil, err
			}
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// CreatePayouts pays the program's due partners (partnerIDs nil: every
// partner with a positive balance in the program currency) in one
// transaction, locking their balance accounts in ascending partner id.
func (s *PayoutService) CreatePayouts(ctx context.Context, programID int64, partnerIDs []int64, actorUserID int64) (run *ledger.PayoutRun, err error) {
	defer wrap(&err, "postgres.CreatePayouts(%d)", programID)
	if err := ledger.CheckPayoutPartnerIDs(partnerIDs); err != nil {
		return nil, err
	}
	now := s.db.now()
	var msgs []ledger.OutboxMessage
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		run, msgs = &ledger.PayoutRun{Created: []ledger.Payout{}, Skipped: []ledger.PayoutSkip{}}, nil
		prog, err := readPayoutProgram(ctx, tx, programID, " FOR KEY SHARE")
		if err != nil {
			return err
		}
		// Partners with entries in the program and currency: only they
		// can have a balance (and a balance account to lock).
		var known []int64
		if partnerIDs == nil {
			err = tx.SelectContext(ctx, &known, `
				SELECT partner_id FROM balance_entries WHERE program_id = $1 AND currency = $2
				GROUP BY partner_id HAVING SUM(amount_minor) > 0 ORDER BY partner_id`, prog.id, string(prog.currency))
		} else {
			err = tx.SelectContext(ctx, &known, `
				SELECT DISTINCT partner_id FROM balance_entries
				WHERE program_id = $1 AND currency = $2 AND partner_id = ANY($3) ORDER BY partner_id`,
				prog.id, string(prog.currency), pq.Array(partnerIDs))
		}
		if err != nil {
			return err
		}
		todo, skipped := ledger.PlanPayoutRun(partnerIDs, known)
		run.Skipped = append(run.Skipped, skipped...)
		// The run's user (0: the system, which created_by cannot name).
		var actor *int64
		if actorUserID != 0 {
			actor = &actorUserID
		}
		minimum := prog.minimumIn(prog.currency)
		for _, partnerID := range todo {
			if err := lockBalanceAccount(ctx, tx, partnerID, prog.currency, now); err != nil {
				return err
			}
			bal, err := programBalance(ctx, tx, partnerID, prog.id, prog.currency)
			if err != nil {
				return err
			}
			amount, skip := ledger.PlanBrandPayout(bal, minimum)
			if skip != "" {
				run.Skipped = append(run.Skipped, ledger.PayoutSkip{PartnerID: partnerID, Reason: skip})
				continue
			}
			p, m, err := createPayoutLocked(ctx, tx, prog, partnerID, prog.currency, amount, ledger.PayoutByBrand, actor, now)
			if err != nil {
				return err
			}
			run.Created, msgs = append(run.Created, *p), append(msgs, m...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.after.send(msgs)
	return run, nil
}

// RequestPayout is a payout the partner asks for in a program it is a
// partner of: requested_by partner, pending, debited at once; the brand
// approves it by moving it to processing (or pays or fails it).
func (s *PayoutService) RequestPayout(ctx context.Context, r ledger.PayoutRequest) (p *ledger.Payout, err error) {
	defer wrap(&err, "postgres.RequestPayout(%d, %d)", r.PartnerID, r.ProgramID)
	now := s.db.now()
	var msgs []ledger.OutboxMessage
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		msgs = nil
		var enrolled bool
		if err := tx.QueryRowContext(ctx, `
			SELECT EXISTS (SELECT 1 FROM enrollments WHERE program_id = $1 AND partner_id = $2)`,
			r.ProgramID, r.PartnerID).Scan(&enrolled); err != nil {
			return err
		}
		if !enrolled {
			return ledger.NewError(ledger.ENotFound, ledger.MsgPayoutProgramNotFound)
		}
		prog, err := readPayoutProgram(ctx, tx, r.ProgramID, " FOR KEY SHARE")
		if err != nil {
			return err
		}
		c := prog.currency
		if r.Currency != nil {
			c = *r.Currency
		}
		var requested *int64
		if r.Amount != nil {
			minor, exact := ledger.ExactMajorToMinor(*r.Amount, c)
			if !exact || minor <= 0 {
				return ledger.NewError(ledger.EInvalid, ledger.MsgPayoutAmount)
			}
			requested = &minor
		}
		if err := lockBalanceAccount(ctx, tx, r.PartnerID, c, now); err != nil {
			return err
		}
		bal, err := programBalance(ctx, tx, r.PartnerID, prog.id, c)
		if err != nil {
			return err
		}
		amount, err := ledger.PlanPartnerPayout(bal, prog.minimumIn(c), requested, c)
		if err != nil {
			return err
		}
		p, msgs, err = createPayoutLocked(ctx, tx, prog, r.PartnerID, c, amount, ledger.PayoutByPartner, nil, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.after.send(msgs)
	return p, nil
}

// MarkPayout moves one of the program's payouts to next. Paid: the
// external reference is kept, and the program's credited, unpaid
// commissions of the partner the amount covers (oldest approval first,
// whole commissions: ledger.CoveredCommissions) become paid by it; the
// partner gets an in-app notice and the payout_paid email. Failed: a
// 'payout_return' entry gives the amount back, and the partner gets an
// in-app notice. Each writes its webhook (and, as the brand's decision,
// an audit row) in the same transaction.
func (s *PayoutService) MarkPayout(ctx context.Context, programID, payoutID int64, next, text string, actorUserID int64) (p *ledger.Payout, err error) {
	defer wrap(&err, "postgres.MarkPayout(%d, %d, %s)", programID, payoutID, next)
	now := s.db.now()
	var msgs []ledger.OutboxMessage
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		msgs = nil
		var partnerID int64
		var cur string
		err := tx.QueryRowContext(ctx, `SELECT partner_id, currency FROM payouts WHERE id = $1 AND program_id = $2`,
			payoutID, programID).Scan(&partnerID, &cur)
		if errors.Is(err, sql.ErrNoRows) {
			return ledger.NewError(ledger.ENotFound, ledger.MsgPayoutNotFound)
		} else if err != nil {
			return err
		}
		c := ledger.Currency(cur)
		if err := lockBalanceAccount(ctx, tx, partnerID, c, now); err != nil {
			return err
		}
		var status string
		var amount int64
		if err := tx.QueryRowContext(ctx, `SELECT status, amount_minor FROM payouts WHERE id = $1 FOR NO KEY UPDATE`,
			payoutID).Scan(&status, &amount); err != nil {
			return err
		}
		changed, err := ledger.PayoutTransition(status, next)
		if err != nil {
			return err
		}
		if !changed {
			p, err = readPayout(ctx, tx, payoutID)
			return err
		}
		var event, action string
		switch next {
		case ledger.PayoutProcessing:
			action = ledger.AuditPayoutProcessing
			_, err = tx.ExecContext(ctx, `
				UPDATE payouts SET status = 'processing', processing_at = $2, updated_at = $2 WHERE id = $1`, payoutID, now)
		case ledger.PayoutPaid:
			event, action = ledger.EventPayoutPaid, ledger.AuditPayoutPaid
			if _, err = tx.ExecContext(ctx, `
				UPDATE payouts SET status = 'paid', external_reference = $2, paid_at = $3, updated_at = $3 WHERE id = $1`,
				payoutID, text, now); err == nil {
				err = coverPayoutCommissions(ctx, tx, programID, partnerID, c, payoutID, amount, now)
			}
		case ledger.PayoutFailed:
			event, action = ledger.EventPayoutFailed, ledger.AuditPayoutFailed
			if _, err = tx.ExecContext(ctx, `
				UPDATE payouts SET status = 'failed', failure_reason = $2, failed_at = $3, updated_at = $3 WHERE id = $1`,
				payoutID, text, now); err == nil {
				err = appendEntry(ctx, tx, balanceEntry{partnerID: partnerID, currency: c, kind: ledger.EntryPayoutReturn,
					amountMinor: amount, programID: &programID, payoutID: &payoutID}, now)
			}
		default:
			return fmt.Errorf("unknown payout status %q", next)
		}
		if err != nil {
			return err
		}
		if p, err = readPayout(ctx, tx, payoutID); err != nil {
			return err
		}
		details := map[string]any{"partner_id": partnerID, "from": status}
		if text != "" {
			details["text"] = text
		}
		if err := insertAudit(ctx, tx, ledger.AuditEntry{ProgramID: programID, ActorUserID: actorUserID, Action: action,
			SubjectType: ledger.AuditSubjectPayout, SubjectID: payoutID, Details: details}, now); err != nil {
			return err
		}
		if event == "" {
			return nil
		}
		msgs, err = payoutSideEffects(ctx, tx, p, event, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.after.send(msgs)
	return p, nil
}

// payoutSideEffects writes what a paid or failed payout tells: the
// partner's in-app notice, the payout_paid email (paid), and the brand's
// webhooks.
func payoutSideEffects(ctx context.Context, tx *sqlx.Tx, p *ledger.Payout, event string, now time.Time) ([]ledger.OutboxMessage, error) {
	notice := ledger.PayoutFailedNotification(p)
	if event == ledger.EventPayoutPaid {
		notice = ledger.PayoutPaidNotification(p)
	}
	m, err := insertOutbox(ctx, tx, ledger.OutboxTaskNotification, ledger.OutboxQueueNotifications, notice, now)
	if err != nil {
		return nil, err
	}
	msgs := []ledger.OutboxMessage{m}
	if event == ledger.EventPayoutPaid {
		mail, err := insertEmail(ctx, tx, p.PartnerEmail, ledger.PayoutPaidEmail{
			ProgramName: p.ProgramName, PartnerName: p.PartnerName, Amount: ledger.FormatMoney(p.AmountMinor, p.Currency),
			ExternalReference: p.ExternalReference, PaidAt: *p.PaidAt,
		}, now)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, mail)
	}
	hooks, err := brandEvent(ctx, tx, p.ProgramID, event, ledger.NewPayoutEventData(p), now)
	return append(msgs, hooks...), err
}

// coverPayoutCommissions marks paid, by the payout, the program's
// credited commissions of the partner not yet paid out that its amount
// covers, oldest approval first, whole commissions only.
func coverPayoutCommissions(ctx context.Context, tx *sqlx.Tx, programID, partnerID int64, c ledger.Currency, payoutID, amount int64, now time.Time) error {
	rows, err := tx.QueryContext(ctx, `
		SELECT id, amount_minor FROM commissions
		WHERE partner_id = $1 AND program_id = $2 AND currency = $3 AND credited AND paid_at IS NULL
			AND amount_minor > 0 AND status IN ('approved', 'refunded')
		ORDER BY approved_at, id FOR NO KEY UPDATE`, partnerID, programID, string(c))
	if err != nil {
		return err
	}
	ids, amounts, err := scanWithdrawals(rows)
	if err != nil {
		return err
	}
	// What earlier paid payouts of the program paid beyond the whole
	// commissions they covered (a partner's partial request) counts too,
	// so partial payouts together pay a commission out.
	var carry minorSum
	if err := tx.QueryRowContext(ctx, `
		SELECT (SELECT COALESCE(SUM(amount_minor), 0) FROM payouts
				WHERE program_id = $1 AND partner_id = $2 AND currency = $3 AND status = 'paid' AND id <> $4)
			- (SELECT COALESCE(SUM(e.amount_minor), 0) FROM commissions cm
				JOIN balance_entries e ON e.commission_id = cm.id AND e.kind IN ('credit', 'deduction') AND e.created_at <= cm.paid_at
				WHERE cm.program_id = $1 AND cm.partner_id = $2 AND cm.currency = $3 AND cm.payout_id IS NOT NULL)`,
		programID, partnerID, string(c), payoutID).Scan(&carry); err != nil {
		return err
	}
	covered := ids[:ledger.CoveredCommissions(ledger.PayoutCoverage(amount, int64(carry)), amounts)]
	if len(covered) == 0 {
		return nil
	}
	_, err = tx.ExecContext(ctx, `
		UPDATE commissions SET status = 'paid', paid_at = $2, payout_id = $3, updated_at = $2 WHERE id = ANY($1)`,
		pq.Array(covered), now, payoutID)
	return err
}

// payoutFilter is the WHERE clause of the brand's listing.
func payoutFilter(q ledger.PayoutQuery) (string, []any) {
	where := []string{"p.program_id = $1"}
	args := []any{q.ProgramID}
	if q.Status != "" {
		args = append(args, q.Status)
		where = append(where, fmt.Sprintf("p.status = $%d", len(args)))
	}
	if q.PartnerID != nil {
		args = append(args, *q.PartnerID)
		where = append(where, fmt.Sprintf("p.partner_id = $%d", len(args)))
	}
	return strings.Join(where, " AND "), args
}

// Payouts returns a page of the program's payouts, newest first.
func (s *PayoutService) Payouts(ctx context.Context, q ledger.PayoutQuery) (page *ledger.PayoutPage, err error) {
	defer wrap(&err, "postgres.Payouts(%d)", q.ProgramID)
	where, args := payoutFilter(q)
	page = &ledger.PayoutPage{Payouts: []ledger.Payout{}, Page: q.Page, PageSize: q.PageSize}
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM payouts p WHERE `+where, args...).Scan(&page.Total); err != nil {
		return nil, err
	}
	n := len(args)
	rows, err := s.db.QueryContext(ctx, `SELECT `+payoutColumns+payoutFrom+` WHERE `+where+`
		ORDER BY p.id DESC LIMIT $`+fmt.Sprint(n+1)+` OFFSET $`+fmt.Sprint(n+2), append(args, q.PageSize, q.Offset())...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		p, err := scanPayout(rows)
		if err != nil {
			return nil, err
		}
		page.Payouts = append(page.Payouts, *p)
	}
	return page, rows.Err()
}

// PayoutBatch reads the CSV export's next batch, newest first, with each
// partner's payout method unsealed.
func (s *PayoutService) PayoutBatch(ctx context.Context, q ledger.PayoutQuery, after *ledger.Payout) (out []ledger.Payout, err error) {
	defer wrap(&err, "postgres.PayoutBatch(%d)", q.ProgramID)
	where, args := payoutFilter(q)
	if after != nil {
		args = append(args, after.ID)
		where += fmt.Sprintf(" AND p.id < $%d", len(args))
	}
	args = append(args, ledger.PayoutExportBatch)
	rows, err := s.db.QueryContext(ctx, `SELECT `+payoutColumns+`, m.method, m.sealed`+payoutFrom+`
		LEFT JOIN payout_methods m ON m.partner_id = p.partner_id
		WHERE `+where+` ORDER BY p.id DESC LIMIT $`+fmt.Sprint(len(args)), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out = []ledger.Payout{}
	for rows.Next() {
		var method, sealed sql.NullString
		p, err := scanPayout(rows, &method, &sealed)
		if err != nil {
			return nil, err
		}
		if method.Valid {
			details, err := s.openDetails(p.PartnerID, sealed.String)
			if err != nil {
				return nil, err
			}
			p.Method = &ledger.PayoutMethod{PartnerID: p.PartnerID, Method: method.String, Details: details}
		}
		out = append(out, *p)
	}
	return out, rows.Err()
}

// PartnerPayouts lists a partner's payouts in every program, newest first.
func (s *PayoutService) PartnerPayouts(ctx context.Context, partnerID int64, limit int) (out []ledger.Payout, err error) {
	defer wrap(&err, "postgres.PartnerPayouts(%d)", partnerID)
	rows, err := s.db.QueryContext(ctx, `SELECT `+payoutColumns+payoutFrom+`
		WHERE p.partner_id = $1 ORDER BY p.id DESC LIMIT $2`, partnerID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out = []ledger.Payout{}
	for rows.Next() {
		p, err := scanPayout(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *p)
	}
	return out, rows.Err()
}

// openDetails unseals a stored payout method's details.
func (s *PayoutService) openDetails(partnerID int64, sealed string) (map[string]string, error) {
	plain, err := s.db.open(purposePayoutMethod, sealed)
	if err != nil {
		return nil, fmt.Errorf("payout method of partner %d: %w", partnerID, err)
	}
	var details map[string]string
	if err := json.Unmarshal([]byte(plain), &details); err != nil {
		return nil, fmt.Errorf("payout method of partner %d: %w", partnerID, err)
	}
	return details, nil
}

func scanPayoutMethod(row interface{ Scan(...any) error }) (*ledger.PayoutMethod, error) {
	m := &ledger.PayoutMethod{}
	var masked []byte
	err := row.Scan(&m.PartnerID, &m.Method, &masked, &m.CreatedAt, &m.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ledger.NewError(ledger.ENotFound, ledger.MsgPayoutMethodNotFound)
	}
	if err != nil {
		return nil, err
	}
	m.CreatedAt, m.UpdatedAt = m.CreatedAt.UTC(), m.UpdatedAt.UTC()
	return m, json.Unmarshal(masked, &m.Masked)
}

// PayoutMethod returns the partner's payout method, masked.
func (s *PayoutService) PayoutMethod(ctx context.Context, partnerID int64) (m *ledger.PayoutMethod, err error) {
	defer wrap(&err, "postgres.PayoutMethod(%d)", partnerID)
	return scanPayoutMethod(s.db.QueryRowContext(ctx, `
		SELECT partner_id, method, masked, created_at, updated_at FROM payout_methods WHERE partner_id = $1`, partnerID))
}

// SetPayoutMethod stores the partner's payout method: the details sealed,
// the masked copy as given.
func (s *PayoutService) SetPayoutMethod(ctx context.Context, partnerID int64, in ledger.PayoutMethodInput) (m *ledger.PayoutMethod, err error) {
	defer wrap(&err, "postgres.SetPayoutMethod(%d)", partnerID)
	plain, err := json.Marshal(in.Details)
	if err != nil {
		return nil, err
	}
	sealed, err := s.db.seal(purposePayoutMethod, string(plain))
	if err != nil {
		return nil, err
	}
	masked, err := json.Marshal(in.Masked)
	if err != nil {
		return nil, err
	}
	now := s.db.now()
	return scanPayoutMethod(s.db.QueryRowContext(ctx, `
		INSERT INTO payout_methods (partner_id, method, sealed, masked, created_at, updated_at)
		VALUES ($1, $2, $3, $4::jsonb, $5, $5)
		ON CONFLICT (partner_id) DO UPDATE SET method = EXCLUDED.method, sealed = EXCLUDED.sealed,
			masked = EXCLUDED.masked, updated_at = EXCLUDED.updated_at
		RETURNING partner_id, method, masked, created_at, updated_at`,
		partnerID, in.Method, sealed, string(masked), now))
}

// DeletePayoutMethod removes the partner's payout method.
func (s *PayoutService) DeletePayoutMethod(ctx context.Context, partnerID int64) (err error) {
	defer wrap(&err, "postgres.DeletePayoutMethod(%d)", partnerID)
	res, err := s.db.ExecContext(ctx, `DELETE FROM payout_methods WHERE partner_id = $1`, partnerID)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return ledger.NewError(ledger.ENotFound, ledger.MsgPayoutMethodNotFound)
	}
	return nil
}
