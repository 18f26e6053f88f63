package postgres

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/partnertrack/partnertrack/ledger"
)

var _ ledger.SignInService = (*AccountService)(nil)

// LinkIdentity finds or creates the user of a verified identity, keyed by
// email, and records the provider's subject on it.
func (s *AccountService) LinkIdentity(ctx context.Context, id ledger.Identity) (u *ledger.User, err error) {
	defer wrap(&err, "postgres.LinkIdentity")
	email, ok := ledger.NormalizeEmail(id.Email)
	if !ok {
		return nil, ledger.ErrProviderEmailNotVerified()
	}
	now := s.db.now()
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		var err error
		u, err = linkIdentity(ctx, tx, email, id.Subject, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	if u.SuspendedAt != nil {
		return nil, ledger.ErrAccountBlocked()
	}
	return u, nil
}

// linkIdentity upserts the user of email with its subject. The subject is
// unique, so another user still holding it (the provider account's email
// changed) gives it up first.
func linkIdentity(ctx context.Context, tx *sqlx.Tx, email, subject string, now time.Time) (*ledger.User, error) {
	if _, err := tx.ExecContext(ctx,
		`UPDATE users SET oidc_subject = NULL WHERE oidc_subject = $1 AND email <> $2`, subject, email); err != nil {
		return nil, err
	}
	u := &ledger.User{}
	err := tx.QueryRowContext(ctx, `
		INSERT INTO users (email, oidc_subject, created_at) VALUES ($1, $2, $3)
		ON CONFLICT ON CONSTRAINT users_email_key DO UPDATE SET oidc_subject = EXCLUDED.oidc_subject
		RETURNING id, email, suspended_at, created_at`, email, subject, now).
		Scan(&u.ID, &u.Email, &u.SuspendedAt, &u.CreatedAt)
	if err != nil {
		return nil, err
	}
	u.CreatedAt = u.CreatedAt.UTC()
	return u, nil
}

// SignIn links the identity and mints a session; CreateSession refuses a
// user suspended meanwhile.
func (s *AccountService) SignIn(ctx context.Context, id ledger.Identity, kind ledger.SessionKind) (*ledger.User, *ledger.Session, error) {
	u, err := s.LinkIdentity(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	sess, err := s.CreateSession(ctx, u.ID, kind)
	if err != nil {
		return nil, nil, err
	}
	return u, sess, nil
}

// RevokeSession ends a session at once.
func (s *AccountService) RevokeSession(ctx context.Context, token string) (err error) {
	defer wrap(&err, "postgres.RevokeSession")
	_, err = s.db.ExecContext(ctx,
		`UPDATE sessions SET revoked_at = $2 WHERE token_hash = $1 AND revoked_at IS NULL`,
		ledger.HashSecret(token), s.db.now())
	return err
}
