package ledger

import (
	"context"
	"time"
)

// Identity is who a verified OpenID Connect id_token says the caller is.
// An Identity is only ever returned with a verified email address.
type Identity struct {
	Issuer  string // the token's iss
	Subject string // the token's sub: the person's stable id at the provider
	Email   string // lower-cased, verified by the provider

	// TokenHash is the SHA-256 of the id_token and TokenExpires its exp:
	// sign-in stores the hash until then and refuses the token a second
	// time. An Identity without a hash is not checked for reuse.
	TokenHash    []byte
	TokenExpires time.Time

	// Nonce is the token's nonce claim: a browser sign-in compares it
	// with the one it sent, so that a token is bound to its sign-in.
	Nonce string
}

// Codes carried in error.details.code by sign-in refusals (dashboard
// sign-in and the CLI login callback answer them alike).
const (
	DetailAccountBlocked           = "ACCOUNT_BLOCKED"
	DetailProviderEmailNotVerified = "PROVIDER_EMAIL_NOT_VERIFIED"
	DetailIdentityMismatch         = "IDENTITY_MISMATCH"
)

// Messages of sign-in.
const (
	MsgIDTokenRequired          = "id_token is required and must be a string"
	MsgIDTokenInvalid           = "Invalid id_token"
	MsgIDTokenExpired           = "id_token has expired"
	MsgProviderEmailNotVerified = "Your sign-in provider has not verified your email address."
	MsgIDTokenUsed              = "id_token has already been used"
	MsgIdentityMismatch         = "This email address is linked to a different account at the sign-in provider. " +
		"Sign in with that account, or ask an operator to unlink it."
	MsgIdentityTaken = "This sign-in account is already linked to another partnertrack user. " +
		"Ask an operator to unlink it."
)

// ErrIdentityMismatch is the refusal of an id_token whose issuer and
// subject are not the ones the user of its email is bound to, or that are
// bound to another user (403, details.code IDENTITY_MISMATCH).
func ErrIdentityMismatch(msg string) *Error {
	return NewError(EForbidden, msg).WithDetails(map[string]any{"code": DetailIdentityMismatch})
}

// ErrAccountBlocked is the refusal of a suspended user (403, details.code
// ACCOUNT_BLOCKED).
func ErrAccountBlocked() *Error {
	return NewError(EForbidden, MsgAccountBlocked).WithDetails(map[string]any{"code": DetailAccountBlocked})
}

// ErrProviderEmailNotVerified is the refusal of an id_token whose email the
// provider has not verified, or that carries no usable email (403,
// details.code PROVIDER_EMAIL_NOT_VERIFIED).
func ErrProviderEmailNotVerified() *Error {
	return NewError(EForbidden, MsgProviderEmailNotVerified).WithDetails(map[string]any{"code": DetailProviderEmailNotVerified})
}

// IdentityVerifier checks the id_tokens of the sign-in provider. Dashboard
// sign-in and the CLI login callback use the same verifier, so both accept
// and refuse exactly the same tokens.
type IdentityVerifier interface {
	// VerifyIDToken checks an id_token: its signature against the issuer's
	// published keys (JWKS), its issuer, its audience (our client id), its
	// expiry, and that it carries an email the provider verified
	// (email_verified true, as a JSON boolean or the string "true").
	//
	// Errors: EUnauthorized (malformed, bad signature, wrong issuer or
	// audience, expired: MsgIDTokenInvalid or MsgIDTokenExpired),
	// EForbidden with details.code PROVIDER_EMAIL_NOT_VERIFIED. Any other
	// error means the provider could not be reached or answered nonsense
	// (an unexpected failure: retry later).
	VerifyIDToken(ctx context.Context, idToken string) (*Identity, error)
}

// SignInService turns a verified identity into a user of the service and
// a session.
type SignInService interface {
	// LinkIdentity returns the user of a verified identity. Users are keyed
	// by lower-cased email, as invitations are: the first sign-in creates
	// the user, or links the user the operator API already created for that
	// email (an invited member), and binds it to the provider's issuer and
	// subject. Later sign-ins must present that issuer and subject. The
	// id_token (id.TokenHash) is used up.
	//
	// Errors: EForbidden with details.code ACCOUNT_BLOCKED (suspended) or
	// IDENTITY_MISMATCH (the email's user is bound to another subject:
	// MsgIdentityMismatch; the subject is bound to another user:
	// MsgIdentityTaken); EUnauthorized (MsgIDTokenUsed).
	LinkIdentity(ctx context.Context, id Identity) (*User, error)
	// SignIn links the identity as LinkIdentity does and mints a session of
	// the given kind. Errors: those of LinkIdentity.
	SignIn(ctx context.Context, id Identity, kind SessionKind) (*User, *Session, error)
	// RevokeSession ends the session of token at once (sign-out). Revoking
	// an unknown, expired or revoked token is not an error.
	RevokeSession(ctx context.Context, token string) error
}
