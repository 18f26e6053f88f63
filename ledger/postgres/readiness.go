package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
)

// ReadinessService implements ledger.ReadinessService. Every read is one
// indexed query of the program: clicks through their listing index
// (program_id, occurred_at DESC) per monthly partition, leads and sales
// through tracking_logs (program_id, event_type, created_at DESC).
type ReadinessService struct{ db *DB }

// NewReadinessService returns the readiness service over db.
func NewReadinessService(db *DB) *ReadinessService { return &ReadinessService{db: db} }

var _ ledger.ReadinessService = (*ReadinessService)(nil)

// ReadinessFacts reads a program's facts.
func (s *ReadinessService) ReadinessFacts(ctx context.Context, programID int64, now time.Time) (f *ledger.ReadinessFacts, err error) {
	defer wrap(&err, "postgres.ReadinessFacts(%d)", programID)
	now = now.UTC()
	prog, err := findProgram(ctx, s.db, programID, false)
	if err != nil {
		return nil, err
	}
	f = &ledger.ReadinessFacts{Program: prog}
	if err := s.db.QueryRowContext(ctx, `
		SELECT EXISTS (SELECT 1 FROM processor_accounts WHERE program_id = $1),
			EXISTS (SELECT 1 FROM commissions WHERE program_id = $1),
			(SELECT rotated_at FROM program_keys WHERE program_id = $1 AND mode = 'live')`, programID).
		Scan(&f.ProcessorConnected, &f.RealAttributedSale, &f.KeyRotatedAt); err != nil {
		return nil, err
	}
	if f.LastClickAt, err = lastTime(ctx, s.db, `
		SELECT occurred_at FROM clicks WHERE program_id = $1 AND NOT is_test
		ORDER BY occurred_at DESC LIMIT 1`, programID); err != nil {
		return nil, err
	}
	logs := []struct {
		dst   **time.Time
		where string
	}{
		{&f.LastLeadAt, `event_type = 'lead' AND ` + integrationLog},
		{&f.LastSaleAt, `event_type = 'sale' AND ` + integrationLog},
		{&f.ServerSaleAt, `event_type = 'sale' AND source = '` + ledger.SourceAPI + `'`},
		{&f.KeyUsedAt, `event_type IN ('lead', 'sale', 'refund') AND source IN ('server', '` + ledger.SourceAPI + `')`},
	}
	for _, l := range logs {
		if *l.dst, err = lastTime(ctx, s.db, `
			SELECT created_at FROM tracking_logs WHERE program_id = $1 AND `+l.where+`
			ORDER BY created_at DESC LIMIT 1`, programID); err != nil {
			return nil, err
		}
	}
	if f.Counts24h, err = recentCounts(ctx, s.db, programID, now); err != nil {
		return nil, err
	}
	if f.LastChain, err = lastChain(ctx, s.db, programID); err != nil {
		return nil, err
	}
	return f, nil
}

// lastTime runs a query of one time (nil when it finds no row).
func lastTime(ctx context.Context, db *DB, query string, args ...any) (*time.Time, error) {
	var t time.Time
	if err := db.QueryRowContext(ctx, query, args...).Scan(&t); errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	t = t.UTC()
	return &t, nil
}

// lastChain reads the program's latest synthetic chain, nil when none.
func lastChain(ctx context.Context, db *DB, programID int64) (*ledger.ChainRun, error) {
	var row struct {
		ID            int64          `db:"id"`
		LinkID        *int64         `db:"link_id"`
		ShortCode     string         `db:"short_code"`
		CustomerKey   string         `db:"customer_key"`
		ClickID       sql.NullString `db:"click_id"`
		LeadID        *int64         `db:"lead_id"`
		SaleID        *int64         `db:"sale_id"`
		TransactionID sql.NullString `db:"transaction_id"`
		Click         string         `db:"click_verdict"`
		Lead          string         `db:"lead_verdict"`
		Sale          string         `db:"sale_verdict"`
		CreatedAt     time.Time      `db:"created_at"`
	}
	err := db.GetContext(ctx, &row, `
		SELECT id, link_id, short_code, customer_key, click_id, lead_id, sale_id, transaction_id,
			click_verdict, lead_verdict, sale_verdict, created_at
		FROM synthetic_chains WHERE program_id = $1 ORDER BY created_at DESC, id DESC LIMIT 1`, programID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	run := &ledger.ChainRun{
		ID: row.ID, ProgramID: programID, ShortCode: row.ShortCode, CustomerKey: row.CustomerKey,
		ClickID: row.ClickID.String, LeadID: row.LeadID, SaleID: row.SaleID, TransactionID: row.TransactionID.String,
		Verdict: ledger.ChainVerdicts{Click: ledger.ChainVerdict(row.Click), Lead: ledger.ChainVerdict(row.Lead),
			Sale: ledger.ChainVerdict(row.Sale)},
		CreatedAt: row.CreatedAt.UTC(),
	}
	if row.LinkID != nil {
		run.LinkID = *row.LinkID
	}
	return run, nil
}
