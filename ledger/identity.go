package ledger

import "context"

// Identity is who a verified OpenID Connect id_token says the caller is.
// An Identity is only ever returned with a verified email address.
type Identity struct {
	Issuer  string // the token's iss
	Subject string // the token's sub: the person's stable id at the provider
	Email   string // lower-cased, verified by the provider
}

// Codes carried in error.details.code by sign-in refusals (dashboard
// sign-in and the CLI login callback answer them alike).
const (
	DetailAccountBlocked           = "ACCOUNT_BLOCKED"
	DetailProviderEmailNotVerified = "PROVIDER_EMAIL_NOT_VERIFIED"
)

// Messages of sign-in.
const (
	MsgIDTokenRequired          = "id_token is required and must be a string"
	MsgIDTokenInvalid           = "Invalid id_token"
	MsgIDTokenExpired           = "id_token has expired"
	MsgProviderEmailNotVerified = "Your sign-in provider has not verified your email address."
)

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
	// email (an invited member), and records the provider's subject (the
	// latest one, should the provider's account behind the email change).
	//
	// Errors: EForbidden with details.code ACCOUNT_BLOCKED (suspended).
	LinkIdentity(ctx context.Context, id Identity) (*User, error)
	// SignIn links the identity as LinkIdentity does and mints a session of
	// the given kind. Errors: those of LinkIdentity.
	SignIn(ctx context.Context, id Identity, kind SessionKind) (*User, *Session, error)
	// RevokeSession ends the session of token at once (sign-out). Revoking
	// an unknown, expired or revoked token is not an error.
	RevokeSession(ctx context.Context, token string) error
}
