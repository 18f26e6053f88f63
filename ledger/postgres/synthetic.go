package postgres

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/partnertrack/partnertrack/ledger"
)

// SyntheticStore implements ledger.SyntheticStore: the program's test
// partner and link, the chain's verdict reads and records, and the CLI's
// single test events.
type SyntheticStore struct{ db *DB }

// NewSyntheticStore returns the store over db.
func NewSyntheticStore(db *DB) *SyntheticStore { return &SyntheticStore{db: db} }

var _ ledger.SyntheticStore = (*SyntheticStore)(nil)

// fixtureEmail is the test partner's address: one partner per program
// (partners are unique by email), on a domain that cannot receive mail.
func fixtureEmail(programID int64) string {
	return "synthetic-chain+p" + strconv.FormatInt(programID, 10) + "@partnertrack.invalid"
}

const fixturePartnerName = "Synthetic test partner"

// EnsureFixture creates or refreshes the program's test partner and link.
// The upsert of the partner row locks it, so concurrent runs of one
// program create one link.
func (s *SyntheticStore) EnsureFixture(ctx context.Context, programID int64) (fx *ledger.SyntheticFixture, err error) {
	defer wrap(&err, "postgres.EnsureFixture(%d)", programID)
	now := s.db.now()
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		prog, err := findProgram(ctx, tx, programID, false)
		if err != nil {
			return err
		}
		fx = &ledger.SyntheticFixture{ProgramID: programID, Domain: prog.Domain, Currency: prog.Currency}
		if err := tx.QueryRowContext(ctx, `
			INSERT INTO partners (email, name, is_test, created_at) VALUES ($1, $2, true, $3)
			ON CONFLICT ON CONSTRAINT partners_email_key DO UPDATE SET is_test = true
			RETURNING id`, fixtureEmail(programID), fixturePartnerName, now).Scan(&fx.PartnerID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `
			INSERT INTO enrollments (program_id, partner_id, status, created_at) VALUES ($1, $2, 'active', $3)
			ON CONFLICT (program_id, partner_id) DO UPDATE SET status = 'active'`,
			programID, fx.PartnerID, now); err != nil {
			return err
		}
		var active bool
		err = tx.QueryRowContext(ctx, `
			SELECT id, code, active FROM links WHERE program_id = $1 AND partner_id = $2 AND is_test
			ORDER BY id LIMIT 1 FOR NO KEY UPDATE`, programID, fx.PartnerID).Scan(&fx.LinkID, &fx.Code, &active)
		switch {
		case err == nil && active:
			return nil
		case err == nil:
			fx.Changed = true
			_, err = tx.ExecContext(ctx, `UPDATE links SET active = true, updated_at = $2 WHERE id = $1`, fx.LinkID, now)
			return err
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		fx.Changed = true
		fx.Code = "synthetic-" + strconv.FormatInt(programID, 10) + "-" + ledger.NewSecret("")[:8]
		return tx.QueryRowContext(ctx, `
			INSERT INTO links (program_id, partner_id, code, active, is_test, created_at, updated_at)
			VALUES ($1, $2, $3, true, true, $4, $4) RETURNING id`,
			programID, fx.PartnerID, fx.Code, now).Scan(&fx.LinkID)
	})
	if err != nil {
		return nil, err
	}
	return fx, nil
}

// CustomerPartner returns the partner of a customer.
func (s *SyntheticStore) CustomerPartner(ctx context.Context, customerID int64) (p *int64, err error) {
	defer wrap(&err, "postgres.CustomerPartner(%d)", customerID)
	err = s.db.GetContext(ctx, &p, `SELECT partner_id FROM customers WHERE id = $1`, customerID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("customer")
	}
	return p, err
}

// SalePartner returns the partner of a sale.
func (s *SyntheticStore) SalePartner(ctx context.Context, saleID int64) (p *int64, err error) {
	defer wrap(&err, "postgres.SalePartner(%d)", saleID)
	err = s.db.GetContext(ctx, &p, `SELECT partner_id FROM sales WHERE id = $1`, saleID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("sale")
	}
	return p, err
}

// RecordChain stores a run and relabels the tracking log rows of its lead
// and sale as the chain's.
func (s *SyntheticStore) RecordChain(ctx context.Context, run *ledger.ChainRun) (err error) {
	defer wrap(&err, "postgres.RecordChain(%d)", run.ProgramID)
	now := s.db.now()
	return s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		var clickID, txnID *string
		if run.ClickID != "" {
			clickID = &run.ClickID
		}
		if run.SaleID != nil {
			txnID = &run.TransactionID
		}
		if err := tx.QueryRowContext(ctx, `
			INSERT INTO synthetic_chains (program_id, link_id, short_code, customer_key, click_id, lead_id, sale_id,
				transaction_id, click_verdict, lead_verdict, sale_verdict, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
			RETURNING id`,
			run.ProgramID, run.LinkID, run.ShortCode, run.CustomerKey, clickID, run.LeadID, run.SaleID, txnID,
			string(run.Verdict.Click), string(run.Verdict.Lead), string(run.Verdict.Sale), now).Scan(&run.ID); err != nil {
			return err
		}
		run.CreatedAt = now
		var leadRef string
		if run.LeadID != nil {
			leadRef = strconv.FormatInt(*run.LeadID, 10)
		}
		_, err := tx.ExecContext(ctx, `
			UPDATE tracking_logs SET source = $4
			WHERE program_id = $1 AND event_type IN ('lead', 'sale')
				AND ((event_type = 'lead' AND reference = $2) OR (event_type = 'sale' AND reference = $3))`,
			run.ProgramID, leadRef, run.TransactionID, ledger.LogSourceSyntheticChain)
		return err
	})
}

// TestLead stores one flagged test lead and its tracking log row.
func (s *SyntheticStore) TestLead(ctx context.Context, programID int64, customerKey string) (id int64, err error) {
	defer wrap(&err, "postgres.TestLead(%d)", programID)
	now := s.db.now()
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		if _, err := findProgram(ctx, tx, programID, false); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `
			INSERT INTO leads (program_id, customer_key, event_name, mode, is_test, occurred_at, created_at)
			VALUES ($1, $2, 'cli_test', 'server', true, $3, $3) RETURNING id`,
			programID, customerKey, now).Scan(&id); err != nil {
			return err
		}
		return insertTestLog(ctx, tx, programID, "lead", strconv.FormatInt(id, 10), now)
	})
	return id, err
}

// TestSale stores one flagged test sale (source test_event) of one major
// unit of the program's currency, and its tracking log row.
func (s *SyntheticStore) TestSale(ctx context.Context, programID int64, transactionID string) (id int64, err error) {
	defer wrap(&err, "postgres.TestSale(%d)", programID)
	now := s.db.now()
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		prog, err := findProgram(ctx, tx, programID, false)
		if err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `
			INSERT INTO sales (program_id, processor_event_id, amount_cents, currency, is_test, source, occurred_at, created_at)
			VALUES ($1, $2, $3, $4, true, 'test_event', $5, $5) RETURNING id`,
			programID, transactionID, ledger.DefaultTestAmount(prog.Currency), string(prog.Currency), now).Scan(&id); err != nil {
			return err
		}
		return insertTestLog(ctx, tx, programID, "sale", transactionID, now)
	})
	return id, err
}

func insertTestLog(ctx context.Context, tx *sqlx.Tx, programID int64, eventType, reference string, now time.Time) error {
	_, err := tx.ExecContext(ctx, `
		INSERT INTO tracking_logs (program_id, event_type, is_test, source, reference, created_at)
		VALUES ($1, $2, true, $3, $4, $5)`, programID, eventType, ledger.LogSourceCLITest, reference, now)
	return err
}
