package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/partnertrack/partnertrack/ledger"
)

const commissionColumns = `c.id, c.program_id, c.partner_id, c.sale_id, c.customer_id, s.processor_event_id,
	c.currency, c.original_minor, c.amount_minor, c.status, c.credited, COALESCE(c.reason, ''),
	c.approve_after, c.approved_at, c.paid_at, c.reversed_at, c.withdrawal_id, c.created_at`

const commissionFrom = ` FROM commissions c JOIN sales s ON s.id = c.sale_id`

func scanCommission(row interface{ Scan(...any) error }) (*ledger.Commission, error) {
	c := &ledger.Commission{}
	var cur string
	err := row.Scan(&c.ID, &c.ProgramID, &c.PartnerID, &c.SaleID, &c.CustomerID, &c.TransactionID,
		&cur, &c.OriginalMinor, &c.AmountMinor, &c.Status, &c.Credited, &c.Reason,
		&c.ApproveAfter, &c.ApprovedAt, &c.PaidAt, &c.ReversedAt, &c.WithdrawalID, &c.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("commission")
	}
	if err != nil {
		return nil, err
	}
	c.Currency = ledger.Currency(cur)
	c.ApproveAfter, c.CreatedAt = c.ApproveAfter.UTC(), c.CreatedAt.UTC()
	for _, t := range []**time.Time{&c.ApprovedAt, &c.PaidAt, &c.ReversedAt} {
		if *t != nil {
			u := (*t).UTC()
			*t = &u
		}
	}
	return c, nil
}

// lockCommission locks a commission for a change of its money: its
// partner's balance account first, then the commission row.
func lockCommission(ctx context.Context, tx *sqlx.Tx, id int64, now time.Time) (*ledger.Commission, error) {
	var partnerID int64
	var cur string
	err := tx.QueryRowContext(ctx, `SELECT partner_id, currency FROM commissions WHERE id = $1`, id).Scan(&partnerID, &cur)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("commission")
	} else if err != nil {
		return nil, err
	}
	if err := lockBalanceAccount(ctx, tx, partnerID, ledger.Currency(cur), now); err != nil {
		return nil, err
	}
	return scanCommission(tx.QueryRowContext(ctx, `SELECT `+commissionColumns+commissionFrom+`
		WHERE c.id = $1 FOR NO KEY UPDATE OF c`, id))
}

// approveLocked moves a locked pending commission past pending and credits
// its amount to the partner's balance: the one write path of an approval
// (the scheduled one when the hold ends, the brand's, the operator's). It
// writes the brand's commission.approved deliveries in the same
// transaction (none for a test sale) and returns them to relay after
// commit.
func approveLocked(ctx context.Context, tx *sqlx.Tx, c *ledger.Commission, now time.Time) ([]ledger.OutboxMessage, error) {
	var isTest bool
	if err := tx.QueryRowContext(ctx, `
		UPDATE commissions c SET status = 'approved', credited = true, approved_at = $2, updated_at = $2
		FROM sales s WHERE c.id = $1 AND s.id = c.sale_id
		RETURNING s.is_test`, c.ID, now).Scan(&isTest); err != nil {
		return nil, err
	}
	c.Status, c.Credited, c.ApprovedAt = ledger.CommissionApproved, true, &now
	if c.AmountMinor > 0 {
		if err := appendEntry(ctx, tx, balanceEntry{partnerID: c.PartnerID, currency: c.Currency, kind: ledger.EntryCredit,
			amountMinor: c.AmountMinor, commissionID: &c.ID, programID: &c.ProgramID}, now); err != nil {
			return nil, err
		}
	}
	if isTest {
		return nil, nil
	}
	return brandEvent(ctx, tx, c.ProgramID, ledger.EventCommissionApproved, ledger.NewCommissionApprovedData(c, now), now)
}

// Commission returns one commission.
func (s *BalanceService) Commission(ctx context.Context, id int64) (c *ledger.Commission, err error) {
	defer wrap(&err, "postgres.Commission(%d)", id)
	return scanCommission(s.db.QueryRowContext(ctx, `SELECT `+commissionColumns+commissionFrom+` WHERE c.id = $1`, id))
}

// changeCommission locks a commission that may still be approved or paid
// and applies change to it, in one transaction; the outbox messages change
// returns are relayed after commit.
func (s *BalanceService) changeCommission(ctx context.Context, id int64, change func(tx *sqlx.Tx, c *ledger.Commission, now time.Time) ([]ledger.OutboxMessage, error)) (c *ledger.Commission, err error) {
	now := s.db.now()
	var msgs []ledger.OutboxMessage
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		c, err = lockCommission(ctx, tx, id, now)
		if err != nil {
			return err
		}
		if err := ledger.CommissionPayable(c); err != nil {
			return err
		}
		msgs, err = change(tx, c, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.after.send(msgs)
	return c, nil
}

// ApproveCommission approves a pending commission now, whatever its hold.
func (s *BalanceService) ApproveCommission(ctx context.Context, id int64) (c *ledger.Commission, err error) {
	defer wrap(&err, "postgres.ApproveCommission(%d)", id)
	return s.changeCommission(ctx, id, func(tx *sqlx.Tx, c *ledger.Commission, now time.Time) ([]ledger.OutboxMessage, error) {
		if c.Status != ledger.CommissionPending {
			return nil, nil
		}
		return approveLocked(ctx, tx, c, now)
	})
}

// MarkCommissionPaid pays a commission out: approved first when pending,
// then a payout entry takes its amount out of the balance, but never more
// than the program's balance holds (a paid withdrawal or a payout may
// already have paid part of it, a refund may have left the partner owing), and the open withdrawals
// are lowered to fit what is left, as after a refund's deduction. So what
// a partner is paid, by withdrawals and by hand, never exceeds what the
// partner had earned when it was paid (docs/ledger.md).
func (s *BalanceService) MarkCommissionPaid(ctx context.Context, id int64) (c *ledger.Commission, err error) {
	defer wrap(&err, "postgres.MarkCommissionPaid(%d)", id)
	return s.changeCommission(ctx, id, func(tx *sqlx.Tx, c *ledger.Commission, now time.Time) ([]ledger.OutboxMessage, error) {
		if c.PaidAt != nil {
			return nil, nil
		}
		var msgs []ledger.OutboxMessage
		if c.Status == ledger.CommissionPending {
			var err error
			if msgs, err = approveLocked(ctx, tx, c, now); err != nil {
				return nil, err
			}
		}
		if _, err := tx.ExecContext(ctx, `
			UPDATE commissions SET status = 'paid', paid_at = $2, updated_at = $2 WHERE id = $1`, c.ID, now); err != nil {
			return nil, err
		}
		c.Status, c.PaidAt = ledger.CommissionPaid, &now
		// The program's balance, capped at the account's: money a pending
		// payout of the program already holds is not paid a second time
		// out of another program's.
		bal, err := programBalance(ctx, tx, c.PartnerID, c.ProgramID, c.Currency)
		if err != nil {
			return nil, err
		}
		payout := ledger.CommissionPayout(c.AmountMinor, bal)
		if payout == 0 {
			return msgs, nil
		}
		if err := appendEntry(ctx, tx, balanceEntry{partnerID: c.PartnerID, currency: c.Currency, kind: ledger.EntryPayout,
			amountMinor: -payout, commissionID: &c.ID, programID: &c.ProgramID}, now); err != nil {
			return nil, err
		}
		return msgs, fitOpenWithdrawals(ctx, tx, c.PartnerID, c.Currency, now)
	})
}

// ApproveDue approves pending commissions whose hold has ended, each in a
// transaction of its own; a commission another approver got to first is
// left alone.
func (s *BalanceService) ApproveDue(ctx context.Context, limit int) (n int, err error) {
	defer wrap(&err, "postgres.ApproveDue")
	now := s.db.now()
	var ids []int64
	if err := s.db.SelectContext(ctx, &ids, `
		SELECT id FROM commissions WHERE status = 'pending' AND approve_after <= $1
		ORDER BY approve_after, id LIMIT $2`, now, limit); err != nil {
		return 0, err
	}
	for _, id := range ids {
		approved := false
		var msgs []ledger.OutboxMessage
		err := s.db.Transact(ctx, func(tx *sqlx.Tx) error {
			approved, msgs = false, nil
			c, err := lockCommission(ctx, tx, id, now)
			if err != nil {
				return err
			}
			if c.Status != ledger.CommissionPending || c.ApproveAfter.After(now) {
				return nil
			}
			approved = true
			msgs, err = approveLocked(ctx, tx, c, now)
			return err
		})
		if err != nil {
			return n, err
		}
		s.after.send(msgs)
		if approved {
			n++
		}
	}
	return n, nil
}
