package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/groupcommit"
)

// ProgramService implements ledger.ProgramService and ledger.KeyService.
type ProgramService struct {
	db *DB
	// keyLookup is the prepared key lookup of every program-key call,
	// whose concurrent calls share one statement (keyLookups).
	keyLookup  *preparedStatements
	keyLookups *groupcommit.Committer[*keyLookup]
}

// NewProgramService returns the program service over db.
func NewProgramService(db *DB) *ProgramService {
	s := &ProgramService{db: db, keyLookup: newPreparedStatements(db, qProgramKeysByHash, qProgramKeyByHash)}
	s.keyLookups = newKeyLookups(s)
	return s
}

var (
	_ ledger.ProgramService = (*ProgramService)(nil)
	_ ledger.KeyService     = (*ProgramService)(nil)
)

// programColumns are read by every program query, joined with the live key
// as k.
const programColumns = programFields + `, COALESCE(k.masked, '') AS masked`

// programFields are programColumns but the live key's masked form (k), for
// a read that has no use for it.
const programFields = `
	p.id, p.workspace_id, p.name, p.domain, p.commission_type, p.commission_rate,
	p.duration_months, p.cookie_duration, p.lead_auth, p.hold_days, p.currency,
	p.status, p.stripe_webhook_secret IS NOT NULL AS stripe_secret_set,
	p.slug, p.partner_approval, p.timezone, p.created_at, p.updated_at`

type programRow struct {
	ID              int64           `db:"id"`
	WorkspaceID     int64           `db:"workspace_id"`
	Name            string          `db:"name"`
	Domain          string          `db:"domain"`
	CommissionType  string          `db:"commission_type"`
	CommissionRate  decimal.Decimal `db:"commission_rate"`
	DurationMonths  int             `db:"duration_months"`
	CookieDuration  int             `db:"cookie_duration"`
	LeadAuth        string          `db:"lead_auth"`
	HoldDays        int             `db:"hold_days"`
	Currency        string          `db:"currency"`
	Status          string          `db:"status"`
	StripeSecretSet bool            `db:"stripe_secret_set"`
	Slug            string          `db:"slug"`
	PartnerApproval string          `db:"partner_approval"`
	Timezone        string          `db:"timezone"`
	CreatedAt       time.Time       `db:"created_at"`
	UpdatedAt       time.Time       `db:"updated_at"`
	Masked          string          `db:"masked"`
}

func (r *programRow) program() *ledger.Program {
	return &ledger.Program{
		ID:              r.ID,
		WorkspaceID:     r.WorkspaceID,
		Name:            r.Name,
		Domain:          r.Domain,
		CommissionType:  ledger.CommissionType(r.CommissionType),
		CommissionRate:  r.CommissionRate,
		DurationMonths:  r.DurationMonths,
		CookieDuration:  r.CookieDuration,
		LeadAuth:        r.LeadAuth,
		HoldDays:        r.HoldDays,
		Currency:        ledger.Currency(r.Currency),
		Status:          r.Status,
		APITokenMasked:  r.Masked,
		StripeSecretSet: r.StripeSecretSet,
		Slug:            r.Slug,
		PartnerApproval: r.PartnerApproval,
		Timezone:        r.Timezone,
		CreatedAt:       r.CreatedAt.UTC(),
		UpdatedAt:       r.UpdatedAt.UTC(),
	}
}

// CreateProgram creates a program with its live and test keys. The keys'
// values are never returned here: only the owner's generate action shows
// a key.
func (s *ProgramService) CreateProgram(ctx context.Context, workspaceID int64, in ledger.ProgramInput) (p *ledger.Program, err error) {
	defer wrap(&err, "postgres.CreateProgram(workspace %d)", workspaceID)
	valid, err := in.ValidateCreate()
	if err != nil {
		return nil, err
	}
	now := s.db.now()
	var id int64
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		var exists bool
		if err := tx.QueryRowContext(ctx,
			`SELECT EXISTS (SELECT 1 FROM workspaces WHERE id = $1)`, workspaceID).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return notFound("workspace")
		}
		id, err = insertProgram(ctx, tx, workspaceID, valid, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.Program(ctx, id)
}

// insertProgram writes a validated program and its live and test keys in
// the caller's transaction: the operator's and the dashboard's creation.
func insertProgram(ctx context.Context, tx *sqlx.Tx, workspaceID int64, valid ledger.Program, now time.Time) (id int64, err error) {
	err = tx.QueryRowContext(ctx, `
		INSERT INTO programs (workspace_id, name, domain, commission_type, commission_rate,
			duration_months, cookie_duration, lead_auth, hold_days, currency, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)
		RETURNING id`,
		workspaceID, valid.Name, valid.Domain, string(valid.CommissionType), valid.CommissionRate,
		valid.DurationMonths, valid.CookieDuration, valid.LeadAuth, valid.HoldDays, string(valid.Currency), now,
	).Scan(&id)
	if err != nil {
		return 0, err
	}
	for _, mode := range []ledger.KeyMode{ledger.LiveKey, ledger.TestKey} {
		_, hash, masked := ledger.NewProgramKey(mode)
		if _, err := tx.ExecContext(ctx, `
			INSERT INTO program_keys (program_id, mode, key_hash, masked, created_at)
			VALUES ($1, $2, $3, $4, $5)`, id, string(mode), hash, masked, now); err != nil {
			return 0, err
		}
	}
	return id, nil
}

// Program returns one program.
func (s *ProgramService) Program(ctx context.Context, id int64) (p *ledger.Program, err error) {
	defer wrap(&err, "postgres.Program(%d)", id)
	return findProgram(ctx, s.db, id, false)
}

type queryer interface {
	GetContext(ctx context.Context, dest any, query string, args ...any) error
}

func findProgram(ctx context.Context, q queryer, id int64, forUpdate bool) (*ledger.Program, error) {
	query := `SELECT ` + programColumns + `, p.partner_links, p.minimum_payout
		FROM programs p LEFT JOIN program_keys k ON k.program_id = p.id AND k.mode = 'live'
		WHERE p.id = $1`
	if forUpdate {
		query += ` FOR NO KEY UPDATE OF p`
	}
	var row programSettingsRow
	if err := q.GetContext(ctx, &row, query, id); errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("program")
	} else if err != nil {
		return nil, err
	}
	p := row.program()
	p.PartnerLinks, p.MinimumPayout = row.PartnerLinks, row.MinimumPayout
	return p, nil
}

// programSettingsRow is a program row with the portal's settings (issue
// 26), which only the one-program read carries.
type programSettingsRow struct {
	programRow
	PartnerLinks  bool            `db:"partner_links"`
	MinimumPayout decimal.Decimal `db:"minimum_payout"`
}

// UpdateProgram applies a validated update to a program.
func (s *ProgramService) UpdateProgram(ctx context.Context, id int64, in ledger.ProgramInput) (p *ledger.Program, err error) {
	defer wrap(&err, "postgres.UpdateProgram(%d)", id)
	now := s.db.now()
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		return updateProgram(ctx, tx, id, in, now)
	})
	if err != nil {
		return nil, err
	}
	return s.Program(ctx, id)
}

// updateProgram locks a program, validates the update against it and
// writes it.
func updateProgram(ctx context.Context, tx *sqlx.Tx, id int64, in ledger.ProgramInput, now time.Time) error {
	cur, err := findProgram(ctx, tx, id, true)
	if err != nil {
		return err
	}
	if err := in.ApplyUpdate(cur); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `
		UPDATE programs SET name = $2, domain = $3, commission_type = $4, commission_rate = $5,
			duration_months = $6, cookie_duration = $7, lead_auth = $8, hold_days = $9,
			currency = $10, updated_at = $11
		WHERE id = $1`,
		id, cur.Name, cur.Domain, string(cur.CommissionType), cur.CommissionRate,
		cur.DurationMonths, cur.CookieDuration, cur.LeadAuth, cur.HoldDays, string(cur.Currency), now)
	return err
}

// AuthenticateProgramKey looks a key up by its hash. It reads Postgres on
// every call (a prepared statement that concurrent calls share, see
// keybatch.go), so a regenerated key fails on every edge instance as soon
// as the regeneration commits.
func (s *ProgramService) AuthenticateProgramKey(ctx context.Context, token string) (k *ledger.ProgramKey, err error) {
	defer wrap(&err, "postgres.AuthenticateProgramKey")
	if err := s.keyLookup.prepare(ctx); err != nil {
		return nil, err
	}
	lookup := &keyLookup{hash: ledger.HashSecret(token)}
	if err := s.keyLookups.Add(ctx, lookup); err != nil {
		return nil, err
	}
	if lookup.key == nil {
		return nil, notFound("program key")
	}
	return lookup.key, nil
}

// RegenerateProgramKey replaces a program's key in place and clears its
// rotation mark.
func (s *ProgramService) RegenerateProgramKey(ctx context.Context, programID int64, mode ledger.KeyMode) (g *ledger.GeneratedKey, err error) {
	defer wrap(&err, "postgres.RegenerateProgramKey(%d)", programID)
	plain, hash, masked := ledger.NewProgramKey(mode)
	now := s.db.now()
	res, err := s.db.ExecContext(ctx, `
		INSERT INTO program_keys (program_id, mode, key_hash, masked, created_at, rotated_at)
		SELECT id, $2, $3, $4, $5, $5 FROM programs WHERE id = $1
		ON CONFLICT (program_id, mode) DO UPDATE SET key_hash = EXCLUDED.key_hash,
			masked = EXCLUDED.masked, rotated_at = EXCLUDED.rotated_at,
			marked_at = NULL, deadline = NULL`,
		programID, string(mode), hash, masked, now)
	if err != nil {
		return nil, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, notFound("program")
	}
	return &ledger.GeneratedKey{APIKey: plain, APITokenMasked: masked, Mode: mode}, nil
}

// MarkKeyRotation marks a program's live key for rotation.
func (s *ProgramService) MarkKeyRotation(ctx context.Context, programID int64, deadline time.Time) (r *ledger.KeyRotation, err error) {
	defer wrap(&err, "postgres.MarkKeyRotation(%d)", programID)
	r = &ledger.KeyRotation{}
	err = s.db.QueryRowContext(ctx, `
		UPDATE program_keys SET marked_at = $2, deadline = $3
		WHERE program_id = $1 AND mode = 'live'
		RETURNING marked_at, deadline`,
		programID, s.db.now(), deadline.UTC().Truncate(time.Microsecond)).Scan(&r.MarkedAt, &r.Deadline)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("program")
	} else if err != nil {
		return nil, err
	}
	r.MarkedAt, r.Deadline = r.MarkedAt.UTC(), r.Deadline.UTC()
	return r, nil
}
