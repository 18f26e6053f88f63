package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/partnertrack/partnertrack/ledger"
)

var _ ledger.SignInService = (*AccountService)(nil)

// LinkIdentity finds or creates the user of a verified identity, keyed by
// email, binds it to the identity's issuer and subject at first sign-in,
// and uses up the id_token.
func (s *AccountService) LinkIdentity(ctx context.Context, id ledger.Identity) (u *ledger.User, err error) {
	defer wrap(&err, "postgres.LinkIdentity")
	email, ok := ledger.NormalizeEmail(id.Email)
	if !ok {
		return nil, ledger.ErrProviderEmailNotVerified()
	}
	now := s.db.now()
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		if err := useIDToken(ctx, tx, id, now); err != nil {
			return err
		}
		var err error
		u, err = linkIdentity(ctx, tx, email, id.Issuer, id.Subject, now)
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

// useIDToken records the id_token's hash until it expires, refusing a
// token recorded already, and deletes a bounded batch of expired hashes.
func useIDToken(ctx context.Context, tx *sqlx.Tx, id ledger.Identity, now time.Time) error {
	if len(id.TokenHash) == 0 {
		return nil
	}
	res, err := tx.ExecContext(ctx, `
		INSERT INTO used_id_tokens (token_hash, expires_at) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
		id.TokenHash, id.TokenExpires)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return ledger.NewError(ledger.EUnauthorized, ledger.MsgIDTokenUsed)
	}
	_, err = tx.ExecContext(ctx, `
		DELETE FROM used_id_tokens WHERE token_hash IN (
			SELECT token_hash FROM used_id_tokens WHERE expires_at < $1 LIMIT 100)`, now)
	return err
}

// linkIdentity returns the user of email bound to issuer and subject,
// creating the user or binding an unbound one (an invited member, or one
// an operator unlinked). A user bound to another identity, or an identity
// bound to another user, is refused: the provider's say-so about an email
// alone never moves an account to another person.
func linkIdentity(ctx context.Context, tx *sqlx.Tx, email, issuer, subject string, now time.Time) (*ledger.User, error) {
	var other int64
	err := tx.GetContext(ctx, &other, `
		SELECT id FROM users WHERE oidc_subject = $1 AND oidc_issuer IS NOT DISTINCT FROM $2 AND email <> $3
		LIMIT 1`, subject, nullable(issuer), email)
	if err == nil {
		return nil, ledger.ErrIdentityMismatch(ledger.MsgIdentityTaken)
	} else if !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	u := &ledger.User{}
	var boundIssuer, boundSubject sql.NullString
	// The row lock serializes two first sign-ins of one email.
	err = tx.QueryRowContext(ctx, `
		INSERT INTO users (email, created_at) VALUES ($1, $2)
		ON CONFLICT ON CONSTRAINT users_email_key DO UPDATE SET email = EXCLUDED.email
		RETURNING id, email, oidc_issuer, oidc_subject, suspended_at, created_at`, email, now).
		Scan(&u.ID, &u.Email, &boundIssuer, &boundSubject, &u.SuspendedAt, &u.CreatedAt)
	if err != nil {
		return nil, err
	}
	u.CreatedAt = u.CreatedAt.UTC()
	switch {
	case !boundSubject.Valid:
		// First sign-in (or after an operator's unlink): bind.
	case boundSubject.String != subject:
		return nil, ledger.ErrIdentityMismatch(ledger.MsgIdentityMismatch)
	case boundIssuer.Valid && boundIssuer.String != issuer:
		return nil, ledger.ErrIdentityMismatch(ledger.MsgIdentityMismatch)
	case boundIssuer.Valid:
		return u, nil // bound to this identity already
	}
	// Bind, or complete a binding made before issuers were recorded.
	if _, err := tx.ExecContext(ctx,
		`UPDATE users SET oidc_issuer = $2, oidc_subject = $3 WHERE id = $1`, u.ID, nullable(issuer), subject); err != nil {
		return nil, err
	}
	return u, nil
}

// nullable is NULL for "" and s otherwise.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// UnlinkIdentity removes a user's binding to a provider identity.
func (s *AccountService) UnlinkIdentity(ctx context.Context, userID int64) (u *ledger.User, err error) {
	defer wrap(&err, "postgres.UnlinkIdentity(%d)", userID)
	u = &ledger.User{}
	err = s.db.QueryRowContext(ctx, `
		UPDATE users SET oidc_issuer = NULL, oidc_subject = NULL WHERE id = $1
		RETURNING id, email, suspended_at, created_at`, userID).
		Scan(&u.ID, &u.Email, &u.SuspendedAt, &u.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("user")
	} else if err != nil {
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
