package ledger

import (
	"context"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// Applications: a partner applies on a program's public page; the brand
// approves or rejects (or the program approves at once when its
// partner_approval is auto).

// Application statuses.
const (
	ApplicationPending  = "pending"
	ApplicationApproved = "approved"
	ApplicationRejected = "rejected"
)

// Limits and messages of applications.
const (
	MaxApplicationText     = 1000
	MaxApplicationWebsite  = 2048
	MsgApplicationName     = MsgPartnerName
	MsgApplicationMessage  = "message must be text of at most 1000 characters"
	MsgApplicationWebsite  = "website must be an absolute http or https URL of at most 2048 characters"
	MsgApplicationReason   = "reason must be text of at most 1000 characters"
	MsgApplicationStatus   = "status must be one of: pending, approved, rejected"
	MsgApplicationNotFound = "application not found"
	MsgApplicationDecided  = "application has already been decided"
)

// Application is a partner's application to a program.
type Application struct {
	ID        int64
	ProgramID int64
	Email     string
	Name      string
	Message   string
	Website   string
	Status    string
	Reason    string // the brand's, when rejected
	GroupID   *int64 // the group approved into
	PartnerID *int64 // the partner approved
	DecidedAt *time.Time
	CreatedAt time.Time
}

// ApplicationInput is an application as the applicant sent it.
type ApplicationInput struct {
	Name    Input[string]
	Email   Input[string]
	Message Input[string]
	Website Input[string]
}

// ApplicationRequest is a validated application.
type ApplicationRequest struct {
	Name, Email, Message, Website string
}

// Validate checks the application in field order.
func (in ApplicationInput) Validate() (ApplicationRequest, error) {
	var r ApplicationRequest
	name := strings.TrimSpace(in.Name.Value)
	if !in.Name.OK() || name == "" || utf8.RuneCountInString(name) > 200 {
		return r, NewError(EInvalid, MsgApplicationName)
	}
	email, ok := NormalizeEmail(in.Email.Value)
	if !in.Email.OK() || !ok {
		return r, NewError(EInvalid, MsgEmail)
	}
	r.Name, r.Email = name, email
	if in.Message.Present {
		m := strings.TrimSpace(in.Message.Value)
		if in.Message.Bad || len([]rune(m)) > MaxApplicationText {
			return r, NewError(EInvalid, MsgApplicationMessage)
		}
		r.Message = m
	}
	if in.Website.Present {
		w := strings.TrimSpace(in.Website.Value)
		u, err := url.Parse(w)
		if in.Website.Bad || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(w) > MaxApplicationWebsite {
			return r, NewError(EInvalid, MsgApplicationWebsite)
		}
		r.Website = w
	}
	return r, nil
}

// ValidateReason checks a rejection reason. Errors: EInvalid.
func ValidateReason(in Input[string]) (string, error) {
	if !in.Present {
		return "", nil
	}
	r := strings.TrimSpace(in.Value)
	if in.Bad || len([]rune(r)) > MaxApplicationText {
		return "", NewError(EInvalid, MsgApplicationReason)
	}
	return r, nil
}

// ApplicationQueryInput is the application listing's query as sent.
type ApplicationQueryInput struct {
	Page     Input[int64]
	PageSize Input[int64]
	Status   Input[string]
}

// ApplicationQuery is a validated application listing request.
type ApplicationQuery struct {
	ProgramID int64
	Status    string
	Page      int64
	PageSize  int64
}

// Validate checks the query and applies the event listing's defaults.
func (in ApplicationQueryInput) Validate(programID int64) (ApplicationQuery, error) {
	page, size, err := validatePage(in.Page, in.PageSize)
	if err != nil {
		return ApplicationQuery{}, err
	}
	q := ApplicationQuery{ProgramID: programID, Page: page, PageSize: size}
	if in.Status.Present {
		switch in.Status.Value {
		case ApplicationPending, ApplicationApproved, ApplicationRejected:
			q.Status = in.Status.Value
		default:
			return ApplicationQuery{}, NewError(EInvalid, MsgApplicationStatus)
		}
	}
	return q, nil
}

// Offset is the number of rows before the page.
func (q ApplicationQuery) Offset() int64 { return pageOffset(q.Page, q.PageSize) }

// ApplicationPage is one page of the application listing.
type ApplicationPage struct {
	Applications []Application
	Total        int64
	Page         int64
	PageSize     int64
}

// PageCount is the number of pages of the matching applications.
func (p *ApplicationPage) PageCount() int64 { return (p.Total + p.PageSize - 1) / p.PageSize }

// ApplicationService is the public page, applications and their review.
type ApplicationService interface {
	// PublicProgram returns the public page of an active program.
	// Errors: ENotFound (unknown slug, paused program).
	PublicProgram(ctx context.Context, slug string) (*PublicProgram, error)
	// Apply records an application to the program of slug, approved at
	// once when its partner_approval is auto. A pending application of
	// the same email is answered instead (created false), unchanged; an
	// email already a partner of the program records nothing and is
	// answered with an unsaved application (created false, id 0) of the
	// status a new one would have. Errors: ENotFound.
	Apply(ctx context.Context, slug string, r ApplicationRequest) (a *Application, created bool, err error)
	// ListApplications returns a page of the program's applications,
	// newest first.
	ListApplications(ctx context.Context, q ApplicationQuery) (*ApplicationPage, error)
	// ApproveApplication makes the applicant an active partner in the
	// group (nil: the default) with a new link. Errors: ENotFound,
	// EInvalid (MsgGroupID), EConflict (decided, already a partner).
	ApproveApplication(ctx context.Context, programID, applicationID, actor int64, groupID *int64) (*Application, error)
	// RejectApplication rejects a pending application with an optional
	// reason. Errors: ENotFound, EConflict (decided).
	RejectApplication(ctx context.Context, programID, applicationID, actor int64, reason string) (*Application, error)
}
