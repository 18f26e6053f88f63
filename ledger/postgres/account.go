package postgres

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/partnertrack/partnertrack/ledger"
)

// AccountService implements ledger.AccountService.
type AccountService struct{ db *DB }

// NewAccountService returns the account service over db.
func NewAccountService(db *DB) *AccountService { return &AccountService{db: db} }

var _ ledger.AccountService = (*AccountService)(nil)

// CreateWorkspace creates a workspace and its owner.
func (s *AccountService) CreateWorkspace(ctx context.Context, name, ownerEmail string) (ws *ledger.Workspace, err error) {
	defer wrap(&err, "postgres.CreateWorkspace")
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 200 {
		return nil, ledger.NewError(ledger.EInvalid, ledger.MsgWorkspaceName)
	}
	email, ok := ledger.NormalizeEmail(ownerEmail)
	if !ok {
		return nil, ledger.NewError(ledger.EInvalid, ledger.MsgEmail)
	}
	now := s.db.now()
	ws = &ledger.Workspace{Name: name, CreatedAt: now}
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		if err := tx.QueryRowContext(ctx,
			`INSERT INTO workspaces (name, created_at) VALUES ($1, $2) RETURNING id`,
			name, now).Scan(&ws.ID); err != nil {
			return err
		}
		userID, err := upsertUser(ctx, tx, email, now)
		if err != nil {
			return err
		}
		ws.OwnerUserID = userID
		return upsertMembership(ctx, tx, ws.ID, userID, ledger.RoleOwner, now)
	})
	if err != nil {
		return nil, err
	}
	return ws, nil
}

// AddMember adds a user to a workspace, creating the user when new.
func (s *AccountService) AddMember(ctx context.Context, workspaceID int64, emailIn string, role ledger.Role) (userID int64, err error) {
	defer wrap(&err, "postgres.AddMember(%d)", workspaceID)
	email, ok := ledger.NormalizeEmail(emailIn)
	if !ok {
		return 0, ledger.NewError(ledger.EInvalid, ledger.MsgEmail)
	}
	if _, ok := ledger.ParseRole(string(role)); !ok {
		return 0, ledger.NewError(ledger.EInvalid, ledger.MsgRole)
	}
	now := s.db.now()
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		var exists bool
		if err := tx.QueryRowContext(ctx,
			`SELECT EXISTS (SELECT 1 FROM workspaces WHERE id = $1)`, workspaceID).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return notFound("workspace")
		}
		if userID, err = upsertUser(ctx, tx, email, now); err != nil {
			return err
		}
		return upsertMembership(ctx, tx, workspaceID, userID, role, now)
	})
	return userID, err
}

func upsertUser(ctx context.Context, tx *sqlx.Tx, email string, now time.Time) (int64, error) {
	var id int64
	// DO UPDATE (a no-op) so that RETURNING yields the existing row too.
	err := tx.QueryRowContext(ctx, `
		INSERT INTO users (email, created_at) VALUES ($1, $2)
		ON CONFLICT ON CONSTRAINT users_email_key DO UPDATE SET email = EXCLUDED.email
		RETURNING id`, email, now).Scan(&id)
	return id, err
}

func upsertMembership(ctx context.Context, tx *sqlx.Tx, workspaceID, userID int64, role ledger.Role, now time.Time) error {
	_, err := tx.ExecContext(ctx, `
		INSERT INTO memberships (workspace_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (workspace_id, user_id) DO UPDATE SET role = EXCLUDED.role`,
		workspaceID, userID, string(role), now)
	return err
}

// CreateSession mints a sign-in token for a user.
func (s *AccountService) CreateSession(ctx context.Context, userID int64, kind ledger.SessionKind) (sess *ledger.Session, err error) {
	defer wrap(&err, "postgres.CreateSession(%d)", userID)
	now := s.db.now()
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		var err error
		sess, err = createSession(ctx, tx, userID, kind, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	return sess, nil
}

// createSession mints a session of a user who is not suspended.
// Errors: ENotFound, EForbidden (ACCOUNT_BLOCKED).
func createSession(ctx context.Context, tx *sqlx.Tx, userID int64, kind ledger.SessionKind, now time.Time) (*ledger.Session, error) {
	ttl, prefix := ledger.DashboardSessionTTL, ledger.DashboardTokenPrefix
	if kind == ledger.CLISession {
		ttl, prefix = ledger.CLISessionTTL, ledger.CLITokenPrefix
	}
	sess := &ledger.Session{Token: ledger.NewSecret(prefix), UserID: userID, Kind: kind, ExpiresAt: now.Add(ttl)}
	var suspended sql.NullTime
	err := tx.QueryRowContext(ctx, `SELECT suspended_at FROM users WHERE id = $1`, userID).Scan(&suspended)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("user")
	} else if err != nil {
		return nil, err
	}
	if suspended.Valid {
		return nil, ledger.ErrAccountBlocked()
	}
	_, err = tx.ExecContext(ctx, `
		INSERT INTO sessions (user_id, kind, token_hash, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5)`,
		userID, string(kind), ledger.HashSecret(sess.Token), now, sess.ExpiresAt)
	if err != nil {
		return nil, err
	}
	return sess, nil
}

// AuthenticateSession resolves a sign-in token.
func (s *AccountService) AuthenticateSession(ctx context.Context, token string) (sess *ledger.Session, err error) {
	defer wrap(&err, "postgres.AuthenticateSession")
	sess = &ledger.Session{}
	var kind string
	err = s.db.QueryRowContext(ctx, `
		SELECT s.user_id, s.kind, s.expires_at
		FROM sessions s JOIN users u ON u.id = s.user_id
		WHERE s.token_hash = $1 AND s.revoked_at IS NULL AND s.expires_at > $2 AND u.suspended_at IS NULL`,
		ledger.HashSecret(token), s.db.now()).Scan(&sess.UserID, &kind, &sess.ExpiresAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ledger.NewError(ledger.EUnauthorized, "invalid or expired token")
	} else if err != nil {
		return nil, err
	}
	sess.Kind = ledger.SessionKind(kind)
	return sess, nil
}

// SuspendUser suspends a user and revokes every session of theirs.
func (s *AccountService) SuspendUser(ctx context.Context, userID int64) (u *ledger.User, err error) {
	defer wrap(&err, "postgres.SuspendUser(%d)", userID)
	now := s.db.now()
	u = &ledger.User{}
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		err := tx.QueryRowContext(ctx, `
			UPDATE users SET suspended_at = COALESCE(suspended_at, $2) WHERE id = $1
			RETURNING id, email, suspended_at, created_at`, userID, now).
			Scan(&u.ID, &u.Email, &u.SuspendedAt, &u.CreatedAt)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("user")
		} else if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx,
			`UPDATE sessions SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL`, userID, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// ProgramRole returns a user's role in the workspace of a program.
func (s *AccountService) ProgramRole(ctx context.Context, userID, programID int64) (role ledger.Role, err error) {
	defer wrap(&err, "postgres.ProgramRole(%d, %d)", userID, programID)
	var r sql.NullString
	err = s.db.QueryRowContext(ctx, `
		SELECT m.role FROM programs p
		LEFT JOIN memberships m ON m.workspace_id = p.workspace_id AND m.user_id = $1
		WHERE p.id = $2`, userID, programID).Scan(&r)
	if errors.Is(err, sql.ErrNoRows) {
		return "", notFound("program")
	} else if err != nil {
		return "", err
	}
	if !r.Valid {
		return "", ledger.NewError(ledger.EForbidden, "you are not a member of this program's workspace")
	}
	return ledger.Role(r.String), nil
}
