package ledger

import (
	"context"
	"strings"
	"time"
)

// Partner sessions: a partner signs in with the same provider as the
// dashboard, and gets a token of its own kind. A partner session opens
// only the /api/v1/partner routes, and a dashboard session never opens
// them: one person can be a brand member and a partner, with two accounts.
const (
	PartnerTokenPrefix = "pt_partner_"
	PartnerSessionTTL  = 30 * 24 * time.Hour
)

// Messages of partner sign-in.
const (
	MsgPartnerIdentityTaken = "This sign-in account is already linked to another partner. " +
		"Sign in with the account you used before, or ask an operator to unlink it."
	MsgPartnerAuthRequired = "Partner sign-in required"
	MsgPartnerTokenInvalid = "invalid or expired partner token"
)

// PartnerSession is a signed-in partner: the account bound to the
// provider's identity and the partner row of its verified email.
type PartnerSession struct {
	Token     string // set only when the session is minted
	AccountID int64
	PartnerID int64
	Email     string
	Name      string
	ExpiresAt time.Time
}

// PartnerSignInService signs partners in.
type PartnerSignInService interface {
	// SignInPartner binds a verified identity to the partner of its email
	// (creating the partner, named after the email, when there is none)
	// and mints a partner session. The first sign-in binds the partner to
	// the issuer and subject; later ones must present them. The id_token
	// (id.TokenHash) is used up.
	//
	// Errors: EForbidden with details.code IDENTITY_MISMATCH (the email's
	// partner is bound to another identity: MsgIdentityMismatch; the
	// identity is bound to another partner: MsgPartnerIdentityTaken);
	// EUnauthorized (MsgIDTokenUsed).
	SignInPartner(ctx context.Context, id Identity) (*PartnerSession, error)
	// AuthenticatePartner resolves a live partner token. Errors:
	// EUnauthorized (MsgPartnerTokenInvalid).
	AuthenticatePartner(ctx context.Context, token string) (*PartnerSession, error)
	// RevokePartnerSession ends the session of token at once; an unknown
	// or ended token is not an error.
	RevokePartnerSession(ctx context.Context, token string) error
}

// PartnerName is the name a partner created without one chosen gets:
// name trimmed, else the email's local part, at most 200 characters (the
// partners' limit). Sign-in, invites and the widget name new partners by
// it.
func PartnerName(name, email string) string {
	name = strings.TrimSpace(name)
	if name == "" {
		name, _, _ = strings.Cut(email, "@")
	}
	if name == "" {
		name = email
	}
	if r := []rune(name); len(r) > 200 {
		name = string(r[:200])
	}
	return name
}
