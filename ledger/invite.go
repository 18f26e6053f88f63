package ledger

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// Invites: a brand invites partners to its program by email (issue 24).
// The invite email carries a link with a secret token; the partner signs
// in and accepts (the partner portal, next issue), which makes them an
// active partner with a link.

// Invite statuses. Expired is not stored: a pending invite whose
// expires_at has passed reads as expired.
const (
	InvitePending   = "pending"
	InviteAccepted  = "accepted"
	InviteCancelled = "cancelled"
	InviteExpired   = "expired"
)

// Limits of invites.
const (
	MaxInvitesPerCall    = 50
	MaxInviteMessage     = 1000
	InviteTTL            = 30 * 24 * time.Hour
	InviteResendInterval = time.Minute
)

// Reasons an invite request skips a partner (data.skipped[].reason).
const (
	SkipDuplicate      = "duplicate"       // named earlier in the same request
	SkipAlreadyPartner = "already_partner" // active or suspended in the program
	SkipAlreadyInvited = "already_invited" // a pending invite that has not expired
	SkipUnknownPartner = "unknown_partner" // not a partner of any program of the workspace
)

// Messages of the invite routes.
const (
	MsgInviteEmails        = "emails must be an array of at most 50 email addresses"
	MsgInvitePartnerIDs    = "partner_ids must be an array of at most 50 partner ids (positive integers)"
	MsgInviteNobody        = "emails or partner_ids must name at least one partner"
	MsgInviteTooMany       = "emails and partner_ids together must name at most 50 partners"
	MsgGroupID             = "group_id must be the id of a group of this program"
	MsgInviteMessage       = "message must be text of at most 1000 characters"
	MsgInviteStatus        = "status must be one of: pending, accepted, cancelled, declined, expired"
	MsgInviteNotFound      = "invite not found"
	MsgInviteResendState   = "only a pending invite can be resent"
	MsgInviteCancelState   = "only a pending invite can be cancelled"
	MsgInviteResendTooSoon = "invite was sent less than a minute ago; resend it later"
	MsgInviteAcceptState   = "invite is no longer pending"
	MsgInviteExpired       = "invite has expired"
	MsgAlreadyPartner      = "email is already a partner of this program"
)

// MsgInviteEmail is the message of the i-th email of a request that is
// not an email address.
func MsgInviteEmail(i int) string {
	return "emails[" + strconv.Itoa(i) + "] must be a valid email address"
}

// Invite is an invitation of one email to a program.
type Invite struct {
	ID          int64
	ProgramID   int64
	Email       string
	GroupID     *int64 // nil: the program's default group
	Message     string
	Status      string // as stored: pending, accepted or cancelled
	PartnerID   *int64 // the partner who accepted
	ExpiresAt   time.Time
	LastSentAt  time.Time
	AcceptedAt  *time.Time
	CancelledAt *time.Time
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// StatusAt is the invite's status at now: a pending invite past its
// expiry is expired.
func (i *Invite) StatusAt(now time.Time) string {
	if i.Status == InvitePending && !now.Before(i.ExpiresAt) {
		return InviteExpired
	}
	return i.Status
}

// InviteRequest is a validated invite request.
type InviteRequest struct {
	Emails      []string // normalized, in the order sent
	PartnerIDs  []int64
	GroupID     *int64
	Message     string
	ActorUserID int64
}

// InviteRequestInput is an invite request as the caller sent it.
type InviteRequestInput struct {
	Emails     Input[[]string]
	PartnerIDs Input[[]int64]
	GroupID    Input[int64]
	Message    Input[string]
}

// Validate checks the request in field order. An invalid email refuses
// the whole request (400 naming emails[i]); nothing is invited.
func (in InviteRequestInput) Validate(actor int64) (InviteRequest, error) {
	r := InviteRequest{ActorUserID: actor}
	if in.Emails.Present {
		if in.Emails.Bad || len(in.Emails.Value) > MaxInvitesPerCall {
			return r, NewError(EInvalid, MsgInviteEmails)
		}
		for i, e := range in.Emails.Value {
			addr, ok := NormalizeEmail(e)
			if !ok {
				return r, NewError(EInvalid, MsgInviteEmail(i))
			}
			r.Emails = append(r.Emails, addr)
		}
	}
	if in.PartnerIDs.Present {
		if in.PartnerIDs.Bad || len(in.PartnerIDs.Value) > MaxInvitesPerCall {
			return r, NewError(EInvalid, MsgInvitePartnerIDs)
		}
		for _, id := range in.PartnerIDs.Value {
			if id < 1 {
				return r, NewError(EInvalid, MsgInvitePartnerIDs)
			}
		}
		r.PartnerIDs = in.PartnerIDs.Value
	}
	switch n := len(r.Emails) + len(r.PartnerIDs); {
	case n == 0:
		return r, NewError(EInvalid, MsgInviteNobody)
	case n > MaxInvitesPerCall:
		return r, NewError(EInvalid, MsgInviteTooMany)
	}
	if in.GroupID.Present {
		if in.GroupID.Bad || in.GroupID.Value < 1 {
			return r, NewError(EInvalid, MsgGroupID)
		}
		g := in.GroupID.Value
		r.GroupID = &g
	}
	if in.Message.Present {
		m := strings.TrimSpace(in.Message.Value)
		if in.Message.Bad || len([]rune(m)) > MaxInviteMessage {
			return r, NewError(EInvalid, MsgInviteMessage)
		}
		r.Message = m
	}
	return r, nil
}

// InviteSkip is a partner an invite request did not invite, and why.
// Email is empty for a partner id that names no partner the brand may
// see (SkipUnknownPartner), so nothing about it is revealed.
type InviteSkip struct {
	Email     string
	PartnerID *int64
	Reason    string
}

// InviteResult is what an invite request did.
type InviteResult struct {
	Invited []Invite
	Skipped []InviteSkip
}

// InviteQueryInput is the invite listing's query as sent.
type InviteQueryInput struct {
	Page     Input[int64]
	PageSize Input[int64]
	Status   Input[string]
}

// InviteQuery is a validated invite listing request.
type InviteQuery struct {
	ProgramID int64
	Status    string // "" for every status
	Page      int64
	PageSize  int64
}

// Validate checks the query and applies the event listing's defaults.
func (in InviteQueryInput) Validate(programID int64) (InviteQuery, error) {
	page, size, err := validatePage(in.Page, in.PageSize)
	if err != nil {
		return InviteQuery{}, err
	}
	q := InviteQuery{ProgramID: programID, Page: page, PageSize: size}
	if in.Status.Present {
		switch in.Status.Value {
		case InvitePending, InviteAccepted, InviteCancelled, InviteDeclined, InviteExpired:
			q.Status = in.Status.Value
		default:
			return InviteQuery{}, NewError(EInvalid, MsgInviteStatus)
		}
	}
	return q, nil
}

// Offset is the number of rows before the page.
func (q InviteQuery) Offset() int64 { return pageOffset(q.Page, q.PageSize) }

// InvitePage is one page of the invite listing.
type InvitePage struct {
	Invites  []Invite
	Total    int64
	Page     int64
	PageSize int64
}

// PageCount is the number of pages of the matching invites.
func (p *InvitePage) PageCount() int64 { return (p.Total + p.PageSize - 1) / p.PageSize }

// Enrollment is what accepting an invite or approving an application
// made: the partner, active in the program, in a group, with a new link.
type Enrollment struct {
	ProgramID int64
	PartnerID int64
	Name      string
	Email     string
	GroupID   int64
	LinkID    int64
	LinkCode  string
	JoinedAt  time.Time
}

// InviteService is how a brand invites partners to a program.
type InviteService interface {
	// CreateInvites invites each email and partner id once, skipping (with
	// the reason) duplicates, partners of the program and emails with a
	// pending invite; each invite's email is written to the outbox.
	// Errors: EInvalid (MsgGroupID).
	CreateInvites(ctx context.Context, programID int64, r InviteRequest) (*InviteResult, error)
	// ListInvites returns a page of the program's invites, newest first.
	ListInvites(ctx context.Context, q InviteQuery) (*InvitePage, error)
	// ResendInvite sends a pending invite again, with a new link, expiring
	// InviteTTL from now. Errors: ENotFound, EConflict (not pending, sent
	// less than InviteResendInterval ago).
	ResendInvite(ctx context.Context, programID, inviteID, actor int64) (*Invite, error)
	// CancelInvite cancels a pending invite. Errors: ENotFound, EConflict.
	CancelInvite(ctx context.Context, programID, inviteID, actor int64) (*Invite, error)
	// AcceptInvite accepts the invite of the link's token for the signed-in
	// partner email (which must be the invite's): the partner (created
	// with name when new) becomes active in the program, in the invite's
	// group, with a new link. Errors: ENotFound (no such token, or another
	// email), EConflict (not pending, expired, already a partner).
	AcceptInvite(ctx context.Context, token, email, name string) (*Enrollment, error)
}

// NewInviteToken returns a secret for an invite link: 32 random bytes,
// base64url without padding (43 characters).
func NewInviteToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// InviteAcceptURL is the partner portal's page of an invite.
func InviteAcceptURL(publicBaseURL, token string) string {
	return strings.TrimRight(publicBaseURL, "/") + "/partner/invites/" + token
}

// NewLinkCode returns a random referral code for a partner's first link:
// 10 lowercase letters and digits (ValidLinkCode's alphabet), each drawn
// uniformly (bytes of 252 and above, which would favour the first
// letters, are drawn again).
func NewLinkCode() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	const limit = 256 - 256%len(alphabet)
	out := make([]byte, 0, 10)
	var buf [16]byte
	for len(out) < cap(out) {
		if _, err := rand.Read(buf[:]); err != nil {
			panic("crypto/rand: " + err.Error())
		}
		for _, c := range buf {
			if int(c) < limit && len(out) < cap(out) {
				out = append(out, alphabet[int(c)%len(alphabet)])
			}
		}
	}
	return string(out)
}

// validatePage checks page and pageSize as the event listing does.
func validatePage(page, size Input[int64]) (int64, int64, error) {
	p, s := int64(DefaultEventPage), int64(DefaultEventPageSize)
	if page.Present {
		if page.Bad || page.Value < 1 {
			return 0, 0, NewError(EInvalid, MsgEventPage)
		}
		p = page.Value
	}
	if size.Present {
		if size.Bad || size.Value < 1 || size.Value > MaxEventPageSize {
			return 0, 0, NewError(EInvalid, MsgEventPageSize)
		}
		s = size.Value
	}
	return p, s, nil
}
