package ledger

import (
	"context"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// The partner portal's API (issue 26): what a signed-in partner reads and
// does about its own programs, invites, links, numbers and money. Every
// read is scoped to the session's partner (or its email, for invites); a
// partner never sees another partner's rows, nor a customer's identity.

// InviteDeclined is the status of an invite its partner declined
// (migration 00019); like a cancelled one, it frees the program and email
// for a later invite.
const InviteDeclined = "declined"

// Bounds of the portal's listings.
const (
	DefaultPortalNotifications = 50
	MaxPortalNotifications     = 100
)

// Messages of the partner portal routes.
const (
	MsgPortalProgramNotFound  = "program not found"
	MsgPortalSlug             = "slug is required and must be a string"
	MsgPortalInviteToken      = "token is required and must be a string"
	MsgInviteDeclineState     = "only a pending invite can be declined"
	MsgPartnerLinksOff        = "This program does not let partners create their own links"
	MsgPartnerLinksInactive   = "Only an active partner of the program can create links"
	MsgPortalProgramFilter    = "program_id must be a positive integer"
	MsgPortalNotificationsMax = "limit must be an integer from 1 to 100"
	MsgNotificationNotFound   = "notification not found"
	MsgAlreadyPartnerApply    = "you are already a partner of this program"
)

// Program settings of the portal (issue 26): whether partners may make
// links with their own code, and the smallest balance a payout is made
// for.
const (
	DefaultMinimumPayout = 50
	MsgPartnerLinks      = "partner_links must be a boolean"
)

// MaxMinimumPayout bounds minimum_payout (the column's check).
var MaxMinimumPayout = decimal.New(1, 12)

// MsgMinimumPayout is the message of a minimum_payout the program's
// currency cannot hold.
func MsgMinimumPayout(c Currency) string {
	unit := "with at most 2 decimals"
	if c.Exponent() == 0 {
		unit = "without decimals"
	}
	return "minimum_payout must be a number from 0 to 1000000000000 " + unit + " (the smallest unit of " + string(c) + ")"
}

// ParseMinimumPayout checks a minimum_payout in major units of the
// program's currency c: at least 0, at most 1e12, exact to the currency's
// minor unit (cents; whole dong). Errors: EInvalid (MsgMinimumPayout).
func ParseMinimumPayout(in Input[decimal.Decimal], c Currency) (decimal.Decimal, error) {
	v := in.Value
	if in.Bad || v.IsNegative() || v.GreaterThan(MaxMinimumPayout) || !v.Truncate(c.Exponent()).Equal(v) {
		return decimal.Decimal{}, NewError(EInvalid, MsgMinimumPayout(c))
	}
	return v, nil
}

// PartnerLinkRule decides whether a partner may create a link with its own
// code in a program: the program's partner_links must be on and the
// partner active there (not suspended or removed). Errors: EForbidden.
func PartnerLinkRule(partnerLinks bool, enrollmentStatus string) error {
	if !partnerLinks {
		return NewError(EForbidden, MsgPartnerLinksOff)
	}
	if enrollmentStatus != EnrollmentActive {
		return NewError(EForbidden, MsgPartnerLinksInactive)
	}
	return nil
}

// PartnerProgram is one of a partner's enrollments: the program, the
// partner's status and group there, and the group's terms.
type PartnerProgram struct {
	ProgramID    int64
	Name         string
	Slug         string
	Domain       string
	Currency     Currency
	Status       string // the enrollment's: active, suspended, removed
	GroupID      int64
	GroupName    string
	Terms        PublicProgram // commission type, rate, duration, hold and currency in force for the group
	PartnerLinks bool
	JoinedAt     time.Time
}

// PartnerInvite is a pending, unexpired invite to a partner's email, as
// the portal lists it.
type PartnerInvite struct {
	ID          int64
	ProgramID   int64
	ProgramName string
	ProgramSlug string
	GroupName   string // the invite's group, else the program's default group
	Message     string
	ExpiresAt   time.Time
}

// PartnerCommission is a commission as its partner sees it: no sale,
// customer or transaction reference that could name the customer.
type PartnerCommission struct {
	ID          int64
	ProgramID   int64
	ProgramName string
	Status      string
	AmountMinor int64
	Currency    Currency
	CreatedAt   time.Time
	ApprovedAt  *time.Time
	PaidAt      *time.Time
	PayoutID    *int64
}

// PartnerCommissionQueryInput is the portal's commission listing query as
// sent.
type PartnerCommissionQueryInput struct {
	Page      Input[int64]
	PageSize  Input[int64]
	ProgramID Input[int64]
	Status    Input[string]
}

// PartnerCommissionQuery is a validated commission listing query of one
// partner.
type PartnerCommissionQuery struct {
	PartnerID int64
	ProgramID *int64
	Status    string // "" for every status
	Page      int64
	PageSize  int64
}

// Validate checks the query in parameter order with the event listing's
// page bounds and the brand's status filter. Errors: EInvalid naming the
// parameter.
func (in PartnerCommissionQueryInput) Validate(partnerID int64) (PartnerCommissionQuery, error) {
	page, size, err := validatePage(in.Page, in.PageSize)
	if err != nil {
		return PartnerCommissionQuery{}, err
	}
	q := PartnerCommissionQuery{PartnerID: partnerID, Page: page, PageSize: size}
	if in.ProgramID.Present {
		if in.ProgramID.Bad || in.ProgramID.Value < 1 {
			return PartnerCommissionQuery{}, NewError(EInvalid, MsgPortalProgramFilter)
		}
		id := in.ProgramID.Value
		q.ProgramID = &id
	}
	if in.Status.Present {
		if in.Status.Bad || !validCommissionStatus(in.Status.Value) {
			return PartnerCommissionQuery{}, NewError(EInvalid, MsgCommissionStatusFilter)
		}
		q.Status = in.Status.Value
	}
	return q, nil
}

// Offset is the number of rows before the page.
func (q PartnerCommissionQuery) Offset() int64 { return pageOffset(q.Page, q.PageSize) }

// PartnerCommissionPage is one page of a partner's commissions.
type PartnerCommissionPage struct {
	Commissions []PartnerCommission
	Total       int64
	Page        int64
	PageSize    int64
}

// PageCount is the number of pages of the matching commissions.
func (p *PartnerCommissionPage) PageCount() int64 { return (p.Total + p.PageSize - 1) / p.PageSize }

// PartnerBalance is a partner's money in one program and currency, in
// minor units: Balance is the sum of its balance entries there (approved
// commissions credited, less deductions and payouts), Pending the sum of
// its pending commissions.
type PartnerBalance struct {
	ProgramID   int64
	ProgramName string
	Currency    Currency
	Balance     int64
	Pending     int64
}

// PartnerStats are a partner's numbers in one program per day of a
// window, from the analytics rollups: clicks, leads, conversions (every
// currency) and earnings (commission per currency, never summed across
// currencies).
type PartnerStats struct {
	Query    PerformanceQuery
	Window   PerformanceWindow
	Currency Currency // the program's
	Days     []PerformanceDay
	Total    PerformanceNumbers
}

// ValidateNotificationLimit checks the notification listing's limit.
// Errors: EInvalid (MsgPortalNotificationsMax).
func ValidateNotificationLimit(in Input[int64]) (int, error) {
	if !in.Present {
		return DefaultPortalNotifications, nil
	}
	if in.Bad || in.Value < 1 || in.Value > MaxPortalNotifications {
		return 0, NewError(EInvalid, MsgPortalNotificationsMax)
	}
	return int(in.Value), nil
}

// ValidatePortalSlug reads the slug of an application from the portal:
// a non-empty string (whether a program has it is the store's to say).
// Errors: EInvalid (MsgPortalSlug).
func ValidatePortalSlug(in Input[string]) (string, error) {
	s := strings.TrimSpace(in.Value)
	if !in.OK() || s == "" {
		return "", NewError(EInvalid, MsgPortalSlug)
	}
	return s, nil
}

// PortalService is what a signed-in partner reads and changes. Every
// method is scoped to the partner (or its email) it is given; a program,
// link, invite or notification of someone else is ENotFound.
type PortalService interface {
	// PartnerPrograms lists the partner's enrollments (every status),
	// newest first.
	PartnerPrograms(ctx context.Context, partnerID int64) ([]PartnerProgram, error)
	// PartnerInvites lists the pending, unexpired invites to email,
	// newest first.
	PartnerInvites(ctx context.Context, email string) ([]PartnerInvite, error)
	// AcceptInviteByID accepts a pending invite to email as
	// InviteService.AcceptInvite accepts one by its token. Errors:
	// ENotFound (no such invite, or another email's), EConflict.
	AcceptInviteByID(ctx context.Context, inviteID int64, email, name string) (*Enrollment, error)
	// DeclineInvite declines a pending, unexpired invite to email.
	// Errors: ENotFound, EConflict (MsgInviteDeclineState,
	// MsgInviteExpired).
	DeclineInvite(ctx context.Context, inviteID int64, email string) (*Invite, error)
	// PartnerLinks lists the partner's links in a program it is enrolled
	// in (any status), newest first. Errors: ENotFound (not enrolled).
	PartnerLinks(ctx context.Context, partnerID, programID int64) ([]BrandLink, error)
	// CreatePartnerLink creates an active link with the partner's own code
	// (PartnerLinkRule; ValidLinkCode; a code unique in the service).
	// Errors: ENotFound (not enrolled), EForbidden, EInvalid (MsgLinkCode),
	// EConflict (MsgLinkCodeTaken).
	CreatePartnerLink(ctx context.Context, partnerID, programID int64, code string) (*BrandLink, error)
	// PartnerStats reads the partner's numbers in a program from the
	// rollups over q's window (in the program's days; `all` starts at the
	// partner's first day there). Errors: ENotFound (not enrolled).
	PartnerStats(ctx context.Context, partnerID int64, q PerformanceQuery) (*PartnerStats, error)
	// PartnerCommissions returns a page of the partner's commissions,
	// newest first.
	PartnerCommissions(ctx context.Context, q PartnerCommissionQuery) (*PartnerCommissionPage, error)
	// PartnerBalances returns the partner's balance and pending money per
	// program and currency: every program it is enrolled in (in the
	// program's currency, zeros included) and any other program and
	// currency it has money in.
	PartnerBalances(ctx context.Context, partnerID int64) ([]PartnerBalance, error)
	// MarkNotificationRead marks one of the partner's notifications read
	// (a read one keeps its first read_at). Errors: ENotFound.
	MarkNotificationRead(ctx context.Context, partnerID, notificationID int64) (*StoredNotification, error)
	// MarkAllNotificationsRead marks every unread notification of the
	// partner read and says how many.
	MarkAllNotificationsRead(ctx context.Context, partnerID int64) (int64, error)
}
