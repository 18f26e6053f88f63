package postgres

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/partnertrack/partnertrack/ledger"
)

// PartnerService implements ledger.PartnerService.
type PartnerService struct{ db *DB }

// NewPartnerService returns the partner service over db.
func NewPartnerService(db *DB) *PartnerService { return &PartnerService{db: db} }

var _ ledger.PartnerService = (*PartnerService)(nil)

// EnrollPartner creates the partner when new and enrols it in a program.
func (s *PartnerService) EnrollPartner(ctx context.Context, programID int64, emailIn, name string) (p *ledger.Partner, err error) {
	defer wrap(&err, "postgres.EnrollPartner(%d)", programID)
	email, ok := ledger.NormalizeEmail(emailIn)
	if !ok {
		return nil, ledger.NewError(ledger.EInvalid, ledger.MsgEmail)
	}
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 200 {
		return nil, ledger.NewError(ledger.EInvalid, ledger.MsgPartnerName)
	}
	now := s.db.now()
	p = &ledger.Partner{}
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		if err := lockProgramKeyShare(ctx, tx, programID); err != nil {
			return err
		}
		err := tx.QueryRowContext(ctx, `
			INSERT INTO partners (email, name, created_at) VALUES ($1, $2, $3)
			ON CONFLICT ON CONSTRAINT partners_email_key DO UPDATE SET email = EXCLUDED.email
			RETURNING id, email, name, created_at`, email, name, now).
			Scan(&p.ID, &p.Email, &p.Name, &p.CreatedAt)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `
			INSERT INTO enrollments (program_id, partner_id, created_at) VALUES ($1, $2, $3)
			ON CONFLICT (program_id, partner_id) DO UPDATE SET status = 'active'
			WHERE enrollments.status = 'removed'`,
			programID, p.ID, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	p.CreatedAt = p.CreatedAt.UTC()
	return p, nil
}

// lockProgramKeyShare checks that a program exists and keeps it from being
// deleted until the transaction ends.
func lockProgramKeyShare(ctx context.Context, tx *sqlx.Tx, programID int64) error {
	var id int64
	err := tx.QueryRowContext(ctx, `SELECT id FROM programs WHERE id = $1 FOR KEY SHARE`, programID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("program")
	}
	return err
}

const linkColumns = `id, program_id, partner_id, code, active, created_at, updated_at`

func scanLink(row interface{ Scan(...any) error }) (*ledger.Link, error) {
	l := &ledger.Link{}
	if err := row.Scan(&l.ID, &l.ProgramID, &l.PartnerID, &l.Code, &l.Active, &l.CreatedAt, &l.UpdatedAt); err != nil {
		return nil, err
	}
	l.CreatedAt, l.UpdatedAt = l.CreatedAt.UTC(), l.UpdatedAt.UTC()
	return l, nil
}

// CreateLink creates a referral link for a partner enrolled in the program.
func (s *PartnerService) CreateLink(ctx context.Context, programID, partnerID int64, code string, active bool) (l *ledger.Link, err error) {
	defer wrap(&err, "postgres.CreateLink(%d, %q)", programID, code)
	if !ledger.ValidLinkCode(code) {
		return nil, ledger.NewError(ledger.EInvalid, ledger.MsgLinkCode)
	}
	now := s.db.now()
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		l, err = insertLink(ctx, tx, programID, partnerID, code, active, now)
		return err
	})
	if err != nil {
		return nil, formatError(err)
	}
	return l, nil
}

// insertLink writes a referral link of a partner enrolled in the program:
// the one link INSERT of the operator's and the brand's routes. The code
// must already be valid (ledger.ValidLinkCode); a taken code fails on
// links_code_key, which formatError turns into EConflict.
func insertLink(ctx context.Context, tx *sqlx.Tx, programID, partnerID int64, code string, active bool, now time.Time) (*ledger.Link, error) {
	if err := lockProgramKeyShare(ctx, tx, programID); err != nil {
		return nil, err
	}
	// The synthetic test partner is enrolled too, but its only link is
	// the fixture's test link: a normal one would send it real clicks.
	var enrolled, isTest bool
	if err := tx.QueryRowContext(ctx, `
		SELECT EXISTS (SELECT 1 FROM enrollments WHERE program_id = $1 AND partner_id = $2 AND status = 'active'),
			COALESCE((SELECT is_test FROM partners WHERE id = $2), false)`,
		programID, partnerID).Scan(&enrolled, &isTest); err != nil {
		return nil, err
	}
	if !enrolled {
		return nil, ledger.NewError(ledger.EInvalid, ledger.MsgPartnerID)
	}
	if isTest {
		return nil, ledger.NewError(ledger.EInvalid, ledger.MsgTestPartnerLink)
	}
	return scanLink(tx.QueryRowContext(ctx, `
		INSERT INTO links (program_id, partner_id, code, active, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $5)
		RETURNING `+linkColumns, programID, partnerID, code, active, now))
}

// SetLinkActive turns a referral link on or off.
func (s *PartnerService) SetLinkActive(ctx context.Context, linkID int64, active bool) (l *ledger.Link, err error) {
	defer wrap(&err, "postgres.SetLinkActive(%d)", linkID)
	return updateLinkActive(ctx, s.db, linkID, nil, active, s.db.now())
}

// updateLinkActive sets a link's active flag: the one link UPDATE of the
// operator's and the brand's routes. With programID set, only a normal
// (not test) link of that program matches; the brand's routes reach no
// other. Errors: ENotFound (link).
func updateLinkActive(ctx context.Context, q sqlx.QueryerContext, linkID int64, programID *int64, active bool, now time.Time) (*ledger.Link, error) {
	l, err := scanLink(q.QueryRowxContext(ctx, `
		UPDATE links SET active = $2, updated_at = $3
		WHERE id = $1 AND ($4::bigint IS NULL OR (program_id = $4 AND NOT is_test))
		RETURNING `+linkColumns, linkID, active, now, programID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("link")
	}
	return l, err
}

// ConnectProcessorAccount maps a processor account to a program.
func (s *PartnerService) ConnectProcessorAccount(ctx context.Context, programID int64, accountID string) (a *ledger.ProcessorAccount, err error) {
	defer wrap(&err, "postgres.ConnectProcessorAccount(%d)", programID)
	if !ledger.ValidProcessorAccount(accountID) {
		return nil, ledger.NewError(ledger.EInvalid, ledger.MsgProcessorAcct)
	}
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		if err := lockProgramKeyShare(ctx, tx, programID); err != nil {
			return err
		}
		// Reconnecting the same program replaces its account.
		if _, err := tx.ExecContext(ctx,
			`DELETE FROM processor_accounts WHERE program_id = $1 AND account_id <> $2`, programID, accountID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `
			INSERT INTO processor_accounts (account_id, program_id, created_at) VALUES ($1, $2, $3)
			ON CONFLICT (account_id) DO NOTHING`, accountID, programID, s.db.now())
		if err != nil {
			return err
		}
		var owner int64
		if err := tx.QueryRowContext(ctx,
			`SELECT program_id FROM processor_accounts WHERE account_id = $1`, accountID).Scan(&owner); err != nil {
			return err
		}
		if owner != programID {
			return ledger.NewError(ledger.EConflict, ledger.MsgProcessorTaken)
		}
		return nil
	})
	if err != nil {
		return nil, formatError(err)
	}
	return &ledger.ProcessorAccount{ProgramID: programID, AccountID: accountID}, nil
}

// CreateAgentKey issues an agent key for a workspace.
func (s *PartnerService) CreateAgentKey(ctx context.Context, workspaceID int64, scopes []string) (k *ledger.AgentKey, err error) {
	defer wrap(&err, "postgres.CreateAgentKey(%d)", workspaceID)
	if len(scopes) == 0 {
		return nil, ledger.NewError(ledger.EInvalid, ledger.MsgScopes)
	}
	for _, sc := range scopes {
		if !ledger.ValidScope(sc) {
			return nil, ledger.NewError(ledger.EInvalid, ledger.MsgScopes)
		}
	}
	plain := ledger.NewSecret(ledger.AgentKeyPrefix)
	k = &ledger.AgentKey{WorkspaceID: workspaceID, Key: plain, Scopes: scopes}
	err = s.db.QueryRowContext(ctx, `
		INSERT INTO agent_keys (workspace_id, key_hash, masked, scopes, created_at)
		SELECT id, $2, $3, $4, $5 FROM workspaces WHERE id = $1
		RETURNING id`,
		workspaceID, ledger.HashSecret(plain), ledger.MaskSecret(ledger.AgentKeyPrefix, plain),
		pq.Array(scopes), s.db.now()).Scan(&k.ID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("workspace")
	} else if err != nil {
		return nil, err
	}
	return k, nil
}
