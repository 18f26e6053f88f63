package postgres

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"math"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ledger"
)

// Lock order of every change to a partner's money: the balance account
// (partner, currency) first, then the sale, then the commission, then the
// withdrawals. Taking the balance account first serialises all changes of
// one balance, so they never deadlock one another, and FOR NO KEY UPDATE
// leaves the foreign-key share locks that inserting entries takes free.

// lockBalanceAccount locks a partner's balance account in a currency,
// creating it on demand.
func lockBalanceAccount(ctx context.Context, tx *sqlx.Tx, partnerID int64, c ledger.Currency, now time.Time) error {
	const lock = `SELECT partner_id FROM balance_accounts WHERE partner_id = $1 AND currency = $2 FOR NO KEY UPDATE`
	var id int64
	err := tx.QueryRowContext(ctx, lock, partnerID, string(c)).Scan(&id)
	if !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if err := createBalanceAccounts(ctx, tx, []accountKey{{partnerID, string(c)}}, now); err != nil {
		return err
	}
	return tx.QueryRowContext(ctx, lock, partnerID, string(c)).Scan(&id)
}

// createBalanceAccounts creates those of accounts that do not exist, in
// lock order. Outside a transaction (applyOwn) it is a statement of its
// own that holds no other lock: it waits at most for another transaction
// creating the same account.
func createBalanceAccounts(ctx context.Context, db sqlx.ExecerContext, accounts []accountKey, now time.Time) error {
	partners, currencies := make([]int64, len(accounts)), make([]string, len(accounts))
	for i, a := range accounts {
		partners[i], currencies[i] = a.partnerID, a.currency
	}
	_, err := db.ExecContext(ctx, `
		INSERT INTO balance_accounts (partner_id, currency, created_at)
		SELECT a.partner_id, a.currency, $3 FROM unnest($1::bigint[], $2::text[]) AS a (partner_id, currency)
		ORDER BY 1, 2
		ON CONFLICT (partner_id, currency) DO NOTHING`, pq.Array(partners), pq.Array(currencies), now)
	return err
}

// balanceEntry is one append-only line of a partner's balance.
type balanceEntry struct {
	partnerID    int64
	currency     ledger.Currency
	kind         string // ledger.EntryCredit, EntryDeduction, EntryPayout, EntryPayoutReturn
	amountMinor  int64  // positive for credits, negative otherwise
	commissionID *int64
	refundID     *int64
	withdrawalID *int64
	// programID names the program of an entry without a commission (a
	// payout, its return, a split withdrawal); the trigger of migration
	// 00018 fills it from the commission otherwise.
	programID *int64
	payoutID  *int64
}

// appendEntry appends an entry; the caller holds the account's lock.
func appendEntry(ctx context.Context, tx *sqlx.Tx, e balanceEntry, now time.Time) error {
	_, err := tx.ExecContext(ctx, `
		INSERT INTO balance_entries (partner_id, currency, kind, amount_minor, commission_id, refund_id, withdrawal_id,
			program_id, payout_id, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		e.partnerID, string(e.currency), e.kind, e.amountMinor, e.commissionID, e.refundID, e.withdrawalID,
		e.programID, e.payoutID, now)
	return err
}

// minorSum scans a SQL sum of minor units. Postgres sums bigint in
// numeric, which never overflows; the sum is read exactly and saturated
// at the bounds of int64 (ledger.ClampMinor), so a read never fails on
// rows stored before amounts had a ceiling.
type minorSum int64

// Scan implements sql.Scanner.
func (m *minorSum) Scan(src any) error {
	var d decimal.Decimal
	if err := d.Scan(src); err != nil {
		return err
	}
	*m = minorSum(ledger.ClampMinor(d))
	return nil
}

// balanceOf is the sum of a partner's entries in a currency.
func balanceOf(ctx context.Context, tx *sqlx.Tx, partnerID int64, c ledger.Currency) (int64, error) {
	var sum minorSum
	err := tx.QueryRowContext(ctx, `
		SELECT COALESCE(SUM(amount_minor), 0) FROM balance_entries WHERE partner_id = $1 AND currency = $2`,
		partnerID, string(c)).Scan(&sum)
	return int64(sum), err
}

// fitOpenWithdrawals lowers the partner's open withdrawals, newest first,
// until together they no longer exceed the balance; one lowered to zero
// is cancelled. The caller holds the account's lock.
func fitOpenWithdrawals(ctx context.Context, tx *sqlx.Tx, partnerID int64, c ledger.Currency, now time.Time) error {
	bal, err := balanceOf(ctx, tx, partnerID, c)
	if err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, `
		SELECT id, amount_minor FROM withdrawals
		WHERE partner_id = $1 AND currency = $2 AND status = 'open'
		ORDER BY id DESC FOR NO KEY UPDATE`, partnerID, string(c))
	if err != nil {
		return err
	}
	ids, amounts, err := scanWithdrawals(rows)
	if err != nil {
		return err
	}
	return lowerWithdrawals(ctx, tx, ids, amounts, bal, now)
}

// scanWithdrawals reads rows of (id, amount_minor, then more) and closes
// them; more receives the last row's extra columns.
func scanWithdrawals(rows *sql.Rows, more ...any) (ids, amounts []int64, err error) {
	defer rows.Close()
	for rows.Next() {
		var id, amount int64
		if err := rows.Scan(append([]any{&id, &amount}, more...)...); err != nil {
			return nil, nil, err
		}
		ids, amounts = append(ids, id), append(amounts, amount)
	}
	return ids, amounts, rows.Err()
}

// lowerWithdrawals lowers the locked open withdrawals ids (amounts, newest
// first) until together they no longer exceed the balance bal; one
// lowered to zero is cancelled.
func lowerWithdrawals(ctx context.Context, tx *sqlx.Tx, ids, amounts []int64, bal int64, now time.Time) error {
	for i, next := range ledger.FitWithdrawals(bal, amounts) {
		if next == amounts[i] {
			continue
		}
		status := ledger.WithdrawalOpen
		if next == 0 {
			status = ledger.WithdrawalCancelled
		}
		if _, err := tx.ExecContext(ctx, `
			UPDATE withdrawals SET amount_minor = $2, status = $3, updated_at = $4 WHERE id = $1`,
			ids[i], next, status, now); err != nil {
			return err
		}
	}
	return nil
}

// BalanceService implements ledger.BalanceService and
// ledger.CommissionService: balances, withdrawals and the commission
// lifecycle after a sale.
type BalanceService struct {
	db    *DB
	after *afterCommit
}

// NewBalanceService returns the balance and commission service over db.
// The commission.approved webhooks an approval writes to the outbox wait
// for the outbox sweep unless WithRelay is set.
func NewBalanceService(db *DB) *BalanceService {
	return &BalanceService{db: db, after: newAfterCommit(nil, nil)}
}

// WithRelay makes the service send the brand webhooks an approval writes
// to the outbox right after commit, and returns it.
func (s *BalanceService) WithRelay(relay ledger.OutboxRelay, logger *slog.Logger) *BalanceService {
	s.after = newAfterCommit(relay, logger)
	return s
}

// WaitRelays blocks until the relays started after commits have finished
// (graceful shutdown, tests).
func (s *BalanceService) WaitRelays() { s.after.wait() }

var (
	_ ledger.BalanceService    = (*BalanceService)(nil)
	_ ledger.CommissionService = (*BalanceService)(nil)
)

func partnerExists(ctx context.Context, q sqlx.QueryerContext, partnerID int64) error {
	var exists bool
	if err := q.QueryRowxContext(ctx, `SELECT EXISTS (SELECT 1 FROM partners WHERE id = $1)`, partnerID).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		return notFound("partner")
	}
	return nil
}

// Balances returns the partner's balance in each currency it has an
// account in.
func (s *BalanceService) Balances(ctx context.Context, partnerID int64) (out []ledger.Balance, err error) {
	defer wrap(&err, "postgres.Balances(%d)", partnerID)
	if err := partnerExists(ctx, s.db, partnerID); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `
		SELECT a.currency, COALESCE(SUM(e.amount_minor), 0)
		FROM balance_accounts a
		LEFT JOIN balance_entries e ON e.partner_id = a.partner_id AND e.currency = a.currency
		WHERE a.partner_id = $1
		GROUP BY a.currency ORDER BY a.currency`, partnerID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out = []ledger.Balance{}
	for rows.Next() {
		b := ledger.Balance{PartnerID: partnerID}
		var cur string
		var sum minorSum
		if err := rows.Scan(&cur, &sum); err != nil {
			return nil, err
		}
		b.Currency, b.AmountMinor = ledger.Currency(cur), int64(sum)
		out = append(out, b)
	}
	return out, rows.Err()
}

const withdrawalColumns = `id, partner_id, currency, requested_minor, amount_minor, status, created_at, paid_at`

func scanWithdrawal(row interface{ Scan(...any) error }) (*ledger.Withdrawal, error) {
	w := &ledger.Withdrawal{}
	var cur string
	err := row.Scan(&w.ID, &w.PartnerID, &cur, &w.RequestedMinor, &w.AmountMinor, &w.Status, &w.CreatedAt, &w.PaidAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("withdrawal")
	}
	if err != nil {
		return nil, err
	}
	w.Currency = ledger.Currency(cur)
	w.CreatedAt = w.CreatedAt.UTC()
	if w.PaidAt != nil {
		t := w.PaidAt.UTC()
		w.PaidAt = &t
	}
	return w, nil
}

// CreateWithdrawal opens a withdrawal against the available balance (the
// balance less the open withdrawals).
func (s *BalanceService) CreateWithdrawal(ctx context.Context, partnerID int64, c ledger.Currency, amountMinor int64) (w *ledger.Withdrawal, err error) {
	defer wrap(&err, "postgres.CreateWithdrawal(%d)", partnerID)
	if err := ledger.CheckWithdrawal(amountMinor, 0, math.MaxInt64); err != nil {
		return nil, err
	}
	now := s.db.now()
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		if err := partnerExists(ctx, tx, partnerID); err != nil {
			return err
		}
		if err := lockBalanceAccount(ctx, tx, partnerID, c, now); err != nil {
			return err
		}
		bal, err := balanceOf(ctx, tx, partnerID, c)
		if err != nil {
			return err
		}
		var open minorSum
		if err := tx.QueryRowContext(ctx, `
			SELECT COALESCE(SUM(amount_minor), 0) FROM withdrawals
			WHERE partner_id = $1 AND currency = $2 AND status = 'open'`, partnerID, string(c)).Scan(&open); err != nil {
			return err
		}
		if err := ledger.CheckWithdrawal(amountMinor, int64(open), bal); err != nil {
			return err
		}
		w, err = scanWithdrawal(tx.QueryRowContext(ctx, `
			INSERT INTO withdrawals (partner_id, currency, requested_minor, amount_minor, status, created_at, updated_at)
			VALUES ($1, $2, $3, $3, 'open', $4, $4)
			RETURNING `+withdrawalColumns, partnerID, string(c), amountMinor, now))
		return err
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// Withdrawal returns one withdrawal.
func (s *BalanceService) Withdrawal(ctx context.Context, id int64) (w *ledger.Withdrawal, err error) {
	defer wrap(&err, "postgres.Withdrawal(%d)", id)
	return scanWithdrawal(s.db.QueryRowContext(ctx, `SELECT `+withdrawalColumns+` FROM withdrawals WHERE id = $1`, id))
}

// MarkWithdrawalPaid pays an open withdrawal: a payout entry leaves the
// balance, and the credited commissions not yet paid out that the amount
// covers, oldest approval first, become paid out. A commission the amount
// does not cover whole stays approved.
func (s *BalanceService) MarkWithdrawalPaid(ctx context.Context, id int64) (w *ledger.Withdrawal, err error) {
	defer wrap(&err, "postgres.MarkWithdrawalPaid(%d)", id)
	now := s.db.now()
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		var partnerID int64
		var cur string
		err := tx.QueryRowContext(ctx, `SELECT partner_id, currency FROM withdrawals WHERE id = $1`, id).Scan(&partnerID, &cur)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("withdrawal")
		} else if err != nil {
			return err
		}
		c := ledger.Currency(cur)
		if err := lockBalanceAccount(ctx, tx, partnerID, c, now); err != nil {
			return err
		}
		w, err = scanWithdrawal(tx.QueryRowContext(ctx, `SELECT `+withdrawalColumns+` FROM withdrawals WHERE id = $1 FOR UPDATE`, id))
		if err != nil {
			return err
		}
		switch w.Status {
		case ledger.WithdrawalPaid:
			return nil
		case ledger.WithdrawalCancelled:
			return ledger.NewError(ledger.EConflict, ledger.MsgWithdrawalCancelled)
		}
		if err := payWithdrawalEntries(ctx, tx, w, now); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `
			UPDATE withdrawals SET status = 'paid', paid_at = $2, updated_at = $2 WHERE id = $1`, id, now); err != nil {
			return err
		}
		w.Status, w.PaidAt = ledger.WithdrawalPaid, &now
		return coverCommissions(ctx, tx, w, now)
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// payWithdrawalEntries writes a paid withdrawal's payout entries, one per
// program it takes money from (ledger.SplitWithdrawal over the partner's
// program balances, the program credited first coming first), so that
// program balances stay right; what no program holds is one entry without
// a program. The caller holds the account's lock.
func payWithdrawalEntries(ctx context.Context, tx *sqlx.Tx, w *ledger.Withdrawal, now time.Time) error {
	rows, err := tx.QueryContext(ctx, `
		SELECT program_id, SUM(amount_minor) FROM balance_entries
		WHERE partner_id = $1 AND currency = $2 AND program_id IS NOT NULL
		GROUP BY program_id ORDER BY MIN(id)`, w.PartnerID, string(w.Currency))
	if err != nil {
		return err
	}
	var programs, balances []int64
	for rows.Next() {
		var id int64
		var sum minorSum
		if err := rows.Scan(&id, &sum); err != nil {
			rows.Close()
			return err
		}
		programs, balances = append(programs, id), append(balances, int64(sum))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	parts, rest := ledger.SplitWithdrawal(w.AmountMinor, balances)
	entry := func(amount int64, programID *int64) error {
		return appendEntry(ctx, tx, balanceEntry{partnerID: w.PartnerID, currency: w.Currency, kind: ledger.EntryPayout,
			amountMinor: -amount, withdrawalID: &w.ID, programID: programID}, now)
	}
	for i, amount := range parts {
		if amount > 0 {
			if err := entry(amount, &programs[i]); err != nil {
				return err
			}
		}
	}
	if rest > 0 {
		return entry(rest, nil)
	}
	return nil
}

// coverCommissions marks paid out the commissions a paid withdrawal covers.
func coverCommissions(ctx context.Context, tx *sqlx.Tx, w *ledger.Withdrawal, now time.Time) error {
	rows, err := tx.QueryContext(ctx, `
		SELECT id, amount_minor FROM commissions
		WHERE partner_id = $1 AND currency = $2 AND credited AND paid_at IS NULL AND amount_minor > 0
			AND status IN ('approved', 'refunded')
		ORDER BY approved_at, id FOR NO KEY UPDATE`, w.PartnerID, string(w.Currency))
	if err != nil {
		return err
	}
	var ids, amounts []int64
	for rows.Next() {
		var id, amount int64
		if err := rows.Scan(&id, &amount); err != nil {
			rows.Close()
			return err
		}
		ids, amounts = append(ids, id), append(amounts, amount)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, cid := range ids[:ledger.CoveredCommissions(w.AmountMinor, amounts)] {
		if _, err := tx.ExecContext(ctx, `
			UPDATE commissions SET status = 'paid', paid_at = $2, withdrawal_id = $3, updated_at = $2 WHERE id = $1`,
			cid, now, w.ID); err != nil {
			return err
		}
	}
	return nil
}
