package ledger

import (
	"context"
	"sort"
	"strconv"
	"time"

	"github.com/shopspring/decimal"
)

// The command-line tool signs a person in through the browser: it starts
// a login session and polls it while the person signs in with the
// provider on a page of the edge, whose callback marks the session signed
// in. The first poll after sign-in hands out a CLI login token and
// consumes the session; a session older than CLILoginTTL is expired.
//
//	pending ──callback──► signed_in ──first poll──► consumed
//	   │                      │
//	   └──── 5 minutes ───────┴──► expired (derived from expires_at)

// CLILoginTTL is how long a login link lives (the spec's "CLI login link
// lifetime").
const CLILoginTTL = 5 * time.Minute

// CLILoginState is the stored state of a login session. Expiry is not
// stored: it follows from the session's expires_at and the clock.
type CLILoginState string

// Stored login states.
const (
	CLILoginPending  CLILoginState = "pending"
	CLILoginSignedIn CLILoginState = "signed_in"
	CLILoginConsumed CLILoginState = "consumed"
)

// Values of data.status in a poll's answer.
const (
	PollPending  = "pending"
	PollComplete = "complete"
	PollExpired  = "expired"
)

// The spec's messages of the CLI endpoints, to the letter.
const (
	MsgCLICallbackFields      = "Missing required fields: state, id_token"
	MsgCLISessionNotFoundUsed = "Session not found or already used"
	MsgCLISessionExpired      = "Session expired"
	MsgCLIMissingState        = "Missing state parameter"
	MsgCLISessionNotFound     = "Session not found"
	MsgCLISessionConsumed     = "Session already consumed"
	MsgCLIAdvertiserMismatch  = "advertiser_id does not match the authenticated account"
	MsgChainCap               = "Too many synthetic chains (max 10/program/hour)."
)

// Our messages where the spec names the condition only.
const (
	MsgCLINoAdvertiser    = "No advertiser found for this account"
	MsgCLIStripeRetired   = "Stripe Connect through the CLI is retired: the operator connects a program's Stripe account; or add a Stripe webhook to /webhooks/stripe/<program id> with the program's stripe_webhook_secret setting, or report sales with POST /api/v1/track/sale."
	MsgCLIProgramMismatch = MsgProgramIDMismatch
)

// MsgInvalidEventType is the spec's message of an unknown test event type;
// value is the type as sent (null when absent).
func MsgInvalidEventType(value string) string {
	return "Invalid event_type: " + value + ". Valid: click, lead, sale"
}

// CLILogin is a stored login session.
type CLILogin struct {
	State     CLILoginState
	UserID    *int64 // set once signed in
	CreatedAt time.Time
	ExpiresAt time.Time

	UserCode      string // shown in the terminal and on the sign-in page ("" before issue 21)
	UserAgent     string // the starting client's User-Agent
	Confirmed     bool   // the person confirmed the code on the sign-in page
	CodeChallenge string // S256 challenge the poll's verifier must match; "" when none
}

// Expired reports whether the login link is older than its lifetime.
func (l *CLILogin) Expired(now time.Time) bool { return !now.Before(l.ExpiresAt) }

// CheckCallback tells whether the sign-in callback may complete the login
// l (nil: no session has the state). Errors: ENotFound (no session, or
// one already signed in or consumed: MsgCLISessionNotFoundUsed), EInvalid
// (MsgCLISessionExpired).
// The person's confirmation of the user code is asked by the sign-in page
// before it offers sign-in, not here: the contract's callback takes state
// and id_token alone (docs/decisions.md, issue 21).
func (l *CLILogin) CheckCallback(now time.Time) error {
	return l.checkPending(now)
}

// checkPending refuses a login that is gone, used or expired.
func (l *CLILogin) checkPending(now time.Time) error {
	if l == nil || l.State != CLILoginPending {
		return NewError(ENotFound, MsgCLISessionNotFoundUsed)
	}
	if l.Expired(now) {
		return NewError(EInvalid, MsgCLISessionExpired)
	}
	return nil
}

// Poll returns what a poll of l answers in data.status: PollPending before
// sign-in, PollComplete on the first poll after sign-in (the caller mints
// the token and consumes the session), PollExpired once the link has
// expired unconsumed. Errors: ENotFound (MsgCLISessionNotFound), EInvalid
// (MsgCLISessionConsumed: the token was handed out already).
func (l *CLILogin) Poll(now time.Time) (string, error) {
	switch {
	case l == nil:
		return "", NewError(ENotFound, MsgCLISessionNotFound)
	case l.State == CLILoginConsumed:
		return "", NewError(EInvalid, MsgCLISessionConsumed)
	case l.Expired(now):
		return PollExpired, nil
	case l.State == CLILoginSignedIn:
		return PollComplete, nil
	}
	return PollPending, nil
}

// CLILoginStart is a new login session: the state is shown once, to the
// CLI that started it; only its hash is stored.
type CLILoginStart struct {
	State     string
	UserCode  string // shown XXXX-XXXX (FormatUserCode)
	ExpiresAt time.Time
}

// CLIPoll is the answer to a poll. Token, Email and AdvertiserID are set
// when Status is PollComplete.
type CLIPoll struct {
	Status       string
	Token        string
	TokenExpires time.Time
	UserID       int64
	Email        string
	AdvertiserID *int64 // the workspace the user owns or administers; nil when none
}

// CLILoginService runs the browser login of the CLI.
type CLILoginService interface {
	// StartLogin creates a pending login session that expires after
	// CLILoginTTL, with a fresh user code and what the client told.
	StartLogin(ctx context.Context, opts CLILoginOptions) (*CLILoginStart, error)
	// LoginInfo returns the session of state for the sign-in page (nil
	// when none).
	LoginInfo(ctx context.Context, state string) (*CLILogin, error)
	// ConfirmLogin records that the person confirmed the user code on the
	// sign-in page. Errors: those of CLILogin.CheckConfirm.
	ConfirmLogin(ctx context.Context, state, userCode string) error
	// CheckLogin tells whether the callback may complete the session of
	// state, before the id_token is verified. Errors: those of
	// CLILogin.CheckCallback.
	CheckLogin(ctx context.Context, state string) error
	// CompleteLogin marks the session of state signed in by userID, checking
	// again under the session's lock. Errors: those of
	// CLILogin.CheckCallback.
	CompleteLogin(ctx context.Context, state string, userID int64) error
	// PollLogin answers a poll; the first poll after sign-in mints a CLI
	// login token (a CLISession) and consumes the session in the same
	// transaction. Errors: those of CLILogin.Poll; EForbidden with
	// details.code ACCOUNT_BLOCKED when the user was suspended after
	// signing in. A session started with a code challenge answers only a
	// poll with its verifier (EForbidden, MsgCLIVerifierMismatch).
	PollLogin(ctx context.Context, state, verifier string) (*CLIPoll, error)
}

// AdvertiserRole is one workspace a user owns or administers.
type AdvertiserRole struct {
	WorkspaceID int64
	Role        Role
}

// ResolveAdvertiser picks the advertiser (workspace) of a CLI call. The
// user's workspaces are those they own or administer; without one, the
// call is refused (EForbidden, MsgCLINoAdvertiser). A requested
// advertiser_id must be one of them (EForbidden,
// MsgCLIAdvertiserMismatch); without one, the login's advertiser applies:
// the oldest workspace the user owns, else the oldest they administer.
func ResolveAdvertiser(roles []AdvertiserRole, requested Input[int64]) (int64, error) {
	var mine []AdvertiserRole
	for _, r := range roles {
		if r.Role == RoleOwner || r.Role == RoleAdmin {
			mine = append(mine, r)
		}
	}
	if len(mine) == 0 {
		return 0, NewError(EForbidden, MsgCLINoAdvertiser)
	}
	sort.Slice(mine, func(i, j int) bool {
		if (mine[i].Role == RoleOwner) != (mine[j].Role == RoleOwner) {
			return mine[i].Role == RoleOwner
		}
		return mine[i].WorkspaceID < mine[j].WorkspaceID
	})
	if !requested.Present {
		return mine[0].WorkspaceID, nil
	}
	for _, r := range mine {
		if !requested.Bad && r.WorkspaceID == requested.Value {
			return r.WorkspaceID, nil
		}
	}
	return 0, NewError(EForbidden, MsgCLIAdvertiserMismatch)
}

// ProgramSummary is one program in the CLI's program list.
type ProgramSummary struct {
	ID         int64
	Name       string
	Domain     string
	Status     string
	Commission string // display text, e.g. "30% recurring (12 months)"
	Partners   int64  // active partners, the test fixture excluded
	CreatedAt  time.Time
}

// CommissionText describes a program's commission for people:
// "30% one-time", "30% recurring (12 months)", "25.00 USD recurring
// (lifetime)". One-time types pay a customer's first sale only.
func CommissionText(t CommissionType, rate decimal.Decimal, durationMonths int, currency Currency) string {
	var amount string
	if t.IsPercent() {
		amount = rate.String() + "%"
	} else {
		if currency == "" {
			currency = DefaultCurrency
		}
		amount = rate.StringFixed(currency.Exponent()) + " " + string(currency)
	}
	if !t.IsRecurring() {
		return amount + " one-time"
	}
	switch durationMonths {
	case 0:
		return amount + " recurring (lifetime)"
	case 1:
		return amount + " recurring (1 month)"
	}
	return amount + " recurring (" + strconv.Itoa(durationMonths) + " months)"
}

// EventCounts are a program's clicks, leads and sales in some window.
type EventCounts struct {
	Clicks int64
	Leads  int64
	Sales  int64
}

// ProgramStatus is what the CLI's status command shows.
type ProgramStatus struct {
	ProgramID          int64
	Name               string
	Domain             string
	ProcessorConnected bool
	Recent             EventCounts // the last 24 hours, see ReadinessFacts
	ActivePartners     int64       // the test fixture excluded
	PendingCommissions int64
}

// Test events of the CLI.
const (
	TestEventClick = "click"
	TestEventLead  = "lead"
	TestEventSale  = "sale"
	TestEventChain = "chain"
)

// ValidTestEventType reports whether t names a single test event.
func ValidTestEventType(t string) bool {
	return t == TestEventClick || t == TestEventLead || t == TestEventSale
}

// TestEventResult is one flagged test event the CLI created.
type TestEventResult struct {
	EventType string
	EventID   string
}

// CLIService serves the CLI's program commands.
type CLIService interface {
	// AdvertiserRoles returns the workspaces the user owns or administers.
	AdvertiserRoles(ctx context.Context, userID int64) ([]AdvertiserRole, error)
	// Programs lists the programs of every workspace the user belongs to,
	// oldest first.
	Programs(ctx context.Context, userID int64) ([]ProgramSummary, error)
	// Status returns a program's status. Errors: ENotFound.
	Status(ctx context.Context, programID int64) (*ProgramStatus, error)
}
