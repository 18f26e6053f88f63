package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/partnertrack/partnertrack/ledger"
)

// PartnerAccountService signs partners in and resolves their sessions.
type PartnerAccountService struct{ db *DB }

// NewPartnerAccountService returns the partner sign-in service over db.
func NewPartnerAccountService(db *DB) *PartnerAccountService { return &PartnerAccountService{db: db} }

var _ ledger.PartnerSignInService = (*PartnerAccountService)(nil)

// SignInPartner binds the identity to the partner of its email and mints
// a session, all in one transaction.
func (s *PartnerAccountService) SignInPartner(ctx context.Context, id ledger.Identity) (sess *ledger.PartnerSession, err error) {
	defer wrap(&err, "postgres.SignInPartner")
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
		sess, err = bindPartnerAccount(ctx, tx, email, id.Issuer, id.Subject, now)
		if err != nil {
			return err
		}
		sess.Token = ledger.NewSecret(ledger.PartnerTokenPrefix)
		sess.ExpiresAt = now.Add(ledger.PartnerSessionTTL)
		_, err = tx.ExecContext(ctx, `
			INSERT INTO partner_sessions (account_id, token_hash, created_at, expires_at) VALUES ($1, $2, $3, $4)`,
			sess.AccountID, ledger.HashSecret(sess.Token), now, sess.ExpiresAt)
		return err
	})
	if err != nil {
		return nil, err
	}
	return sess, nil
}

// bindPartnerAccount returns the account of the email's partner bound to
// issuer and subject, creating the partner and the account as needed. As
// with users, the provider's say-so about an email never moves an account
// that is bound already to another person.
func bindPartnerAccount(ctx context.Context, tx *sqlx.Tx, email, issuer, subject string, now time.Time) (*ledger.PartnerSession, error) {
	sess := &ledger.PartnerSession{Email: email}
	// The row lock serialises two first sign-ins of one email.
	err := tx.QueryRowContext(ctx, `
		INSERT INTO partners (email, name, created_at) VALUES ($1, $2, $3)
		ON CONFLICT ON CONSTRAINT partners_email_key DO UPDATE SET email = EXCLUDED.email
		RETURNING id, name`, email, ledger.PartnerName("", email), now).Scan(&sess.PartnerID, &sess.Name)
	if err != nil {
		return nil, err
	}
	var boundPartner int64
	err = tx.QueryRowContext(ctx, `
		SELECT id, partner_id FROM partner_accounts WHERE oidc_issuer = $1 AND oidc_subject = $2`,
		issuer, subject).Scan(&sess.AccountID, &boundPartner)
	switch {
	case err == nil && boundPartner == sess.PartnerID:
		return sess, nil
	case err == nil:
		return nil, ledger.ErrIdentityMismatch(ledger.MsgPartnerIdentityTaken)
	case !errors.Is(err, sql.ErrNoRows):
		return nil, err
	}
	err = tx.QueryRowContext(ctx, `
		INSERT INTO partner_accounts (partner_id, oidc_issuer, oidc_subject, created_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT ON CONSTRAINT partner_accounts_partner_id_key DO NOTHING
		RETURNING id`, sess.PartnerID, issuer, subject, now).Scan(&sess.AccountID)
	if errors.Is(err, sql.ErrNoRows) {
		// The email's partner is bound to another identity.
		return nil, ledger.ErrIdentityMismatch(ledger.MsgIdentityMismatch)
	} else if err != nil {
		return nil, err
	}
	return sess, nil
}

// AuthenticatePartner resolves a live partner token.
func (s *PartnerAccountService) AuthenticatePartner(ctx context.Context, token string) (sess *ledger.PartnerSession, err error) {
	defer wrap(&err, "postgres.AuthenticatePartner")
	sess = &ledger.PartnerSession{}
	err = s.db.QueryRowContext(ctx, `
		SELECT a.id, a.partner_id, p.email, p.name, s.expires_at
		FROM partner_sessions s
		JOIN partner_accounts a ON a.id = s.account_id
		JOIN partners p ON p.id = a.partner_id
		WHERE s.token_hash = $1 AND s.revoked_at IS NULL AND s.expires_at > $2`,
		ledger.HashSecret(token), s.db.now()).Scan(&sess.AccountID, &sess.PartnerID, &sess.Email, &sess.Name, &sess.ExpiresAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ledger.NewError(ledger.EUnauthorized, ledger.MsgPartnerTokenInvalid)
	} else if err != nil {
		return nil, err
	}
	sess.ExpiresAt = sess.ExpiresAt.UTC()
	return sess, nil
}

// RevokePartnerSession ends a partner session at once.
func (s *PartnerAccountService) RevokePartnerSession(ctx context.Context, token string) (err error) {
	defer wrap(&err, "postgres.RevokePartnerSession")
	_, err = s.db.ExecContext(ctx,
		`UPDATE partner_sessions SET revoked_at = $2 WHERE token_hash = $1 AND revoked_at IS NULL`,
		ledger.HashSecret(token), s.db.now())
	return err
}
