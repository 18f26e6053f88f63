package ledger

import (
	"context"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"
)

// The embeddable referral widget (issue 26): a brand's server mints a
// short-lived token for one of its own users (by email) with the program
// key, and the brand's app frames the edge's page with it. The page
// enrolls the user as a partner of the program on first open and shows
// their link, clicks, conversions and earnings.

// Embed tokens.
const (
	// EmbedTokenPrefix starts every embed token, so scanners and people
	// can tell it from keys and sessions.
	EmbedTokenPrefix = "pt_embed_"
	// EmbedTokenTTL is how long a token opens the page: long enough for a
	// page that stays open a while, short enough that a leaked address is
	// soon worthless. The brand mints a new one each time it renders.
	EmbedTokenTTL = time.Hour
	// EmbedPath is the widget page of the edge.
	EmbedPath = "/embed/referrals"
)

// Messages of the embed token route and page.
const (
	MsgEmbedEmail        = "email is required and must be a valid email address"
	MsgEmbedName         = "name must be a string of 1 to 200 characters"
	MsgEmbedTokenMissing = "token is missing or malformed"
	MsgEmbedTokenUnknown = "token is unknown"
	MsgEmbedTokenExpired = "token has expired"
)

// Enrollment states the widget shows. EmbedClosed: the user is no partner
// and the program is not active, so nobody is enrolled.
const (
	EmbedActive    = "active"
	EmbedSuspended = "suspended"
	EmbedRemoved   = "removed"
	EmbedClosed    = "closed"
)

// EmbedTokenInput is the body of the token route as sent.
type EmbedTokenInput struct {
	Email Input[string]
	Name  Input[string]
}

// EmbedTokenRequest is a validated token request.
type EmbedTokenRequest struct {
	ProgramID int64
	Email     string // normalized (lower case)
	Name      string // "" when not sent: the partner is then named after the email
}

// Validate checks the body in field order. Errors: EInvalid.
func (in EmbedTokenInput) Validate(programID int64) (EmbedTokenRequest, error) {
	r := EmbedTokenRequest{ProgramID: programID}
	email, ok := NormalizeEmail(in.Email.Value)
	if !in.Email.OK() || !ok {
		return r, NewError(EInvalid, MsgEmbedEmail)
	}
	r.Email = email
	if in.Name.Present {
		name := strings.TrimSpace(in.Name.Value)
		if in.Name.Bad || name == "" || utf8.RuneCountInString(name) > 200 {
			return r, NewError(EInvalid, MsgEmbedName)
		}
		r.Name = name
	}
	return r, nil
}

// PartnerName is the name the partner is created with on first open.
func (r EmbedTokenRequest) PartnerName() string {
	return PartnerName(r.Name, r.Email)
}

// NewEmbedToken returns a fresh token and the instant it expires.
func NewEmbedToken(now time.Time) (token string, expiresAt time.Time) {
	return NewSecret(EmbedTokenPrefix), now.Add(EmbedTokenTTL).UTC()
}

// WellFormedEmbedToken reports whether s has the shape of a token (the
// page answers 401 for anything else, without a query).
func WellFormedEmbedToken(s string) bool {
	rest, ok := strings.CutPrefix(s, EmbedTokenPrefix)
	if !ok || len(rest) != 32 {
		return false
	}
	return strings.Trim(rest, "abcdefghijklmnopqrstuvwxyz234567") == ""
}

// EmbedURL is the address the brand frames: the edge's public base URL,
// the page and the token.
func EmbedURL(baseURL, token string) string {
	return strings.TrimRight(baseURL, "/") + EmbedPath + "?token=" + url.QueryEscape(token)
}

// EmbedToken is a minted token.
type EmbedToken struct {
	Token     string
	ProgramID int64
	Email     string
	ExpiresAt time.Time
}

// EmbedGrant is what a stored token grants: one user (by email) of one
// program, until it expires, and the program's domain (the only site
// that may frame the page, even its error page).
type EmbedGrant struct {
	ProgramID int64
	Email     string
	Name      string
	ExpiresAt time.Time
	Domain    string
}

// Expired reports whether the token no longer opens the page.
func (g *EmbedGrant) Expired(now time.Time) bool { return !now.Before(g.ExpiresAt) }

// FrameAncestors is the CSP frame-ancestors source list of a program's
// domain: https on the domain and on its www. form (or, for a www.
// domain, its bare form), as a referrer's domain is matched without its
// www. elsewhere. An empty or malformed domain allows no framing.
func FrameAncestors(domain string) string {
	d, ok := NormalizeDomain(domain)
	if !ok {
		return "'none'"
	}
	other := "www." + d
	if bare, ok := strings.CutPrefix(d, "www."); ok && bare != "" {
		other = bare
	}
	return "https://" + d + " https://" + other
}

// EmbedLink is one of the partner's links in the program.
type EmbedLink struct {
	Code   string
	Active bool
	URL    string // https://<program domain>/?aff=<code>
}

// EmbedMoney is an amount of one currency, exact.
type EmbedMoney struct {
	Currency Currency
	Minor    decimal.Decimal // a sum of minor units, never rounded
}

// Words writes the amount for people (MoneyWords).
func (m EmbedMoney) Words() string {
	return MoneyWords(m.Minor.Shift(-m.Currency.Exponent()), m.Currency)
}

// EmbedView is what the widget shows to the token's user: the program and
// its terms, the user's enrollment and links, and their numbers over all
// time, read from the analytics rollups as the partner stats are.
type EmbedView struct {
	ProgramName string
	Terms       string // CommissionWords of the partner's group, else the program's
	HoldDays    int
	Status      string // EmbedActive, EmbedSuspended, EmbedRemoved or EmbedClosed
	Enrolled    bool   // this open enrolled the user
	PartnerName string
	Links       []EmbedLink
	Clicks      int64
	Leads       int64
	Conversions int64
	Earnings    []EmbedMoney // commission per currency, never summed across currencies
}

// EmbedService mints widget tokens and opens the widget.
type EmbedService interface {
	// CreateEmbedToken stores the SHA-256 of a new token for the user of
	// the request and deletes a bounded batch of expired ones. Errors:
	// ENotFound (the program is gone).
	CreateEmbedToken(ctx context.Context, r EmbedTokenRequest) (*EmbedToken, error)
	// EmbedGrant resolves a token. Errors: ENotFound (MsgEmbedTokenUnknown).
	EmbedGrant(ctx context.Context, token string) (*EmbedGrant, error)
	// OpenEmbed enrolls the grant's user as an active partner of the
	// program in its default group, with a link, when they are no partner
	// of it yet and the program is active (exactly once, however many
	// opens race), and reads the view. A suspended or removed enrollment
	// is shown as it is, never re-activated.
	OpenEmbed(ctx context.Context, g *EmbedGrant) (*EmbedView, error)
}
