package ledger

import (
	"context"
	"net/url"
)

// Link statuses as the brand's link routes name them; a link row stores
// them as its active flag.
const (
	LinkStatusActive   = "active"
	LinkStatusDisabled = "disabled"
)

// Messages of the brand's link routes (the partner_id and code messages
// are the operator's: MsgPartnerID, MsgLinkCode, MsgLinkCodeTaken).
const (
	MsgLinkStatus        = "status must be one of: active, disabled"
	MsgLinkPartnerFilter = "partner_id must be a positive integer"
	MsgLinkPage          = MsgEventPage
	MsgLinkPageSize      = MsgEventPageSize
)

// ParseLinkStatus reads a link status: true for active, false for
// disabled. Errors: EInvalid (MsgLinkStatus).
func ParseLinkStatus(s string) (active bool, err error) {
	switch s {
	case LinkStatusActive:
		return true, nil
	case LinkStatusDisabled:
		return false, nil
	}
	return false, NewError(EInvalid, MsgLinkStatus)
}

// LinkStatus names a link's active flag.
func LinkStatus(active bool) string {
	if active {
		return LinkStatusActive
	}
	return LinkStatusDisabled
}

// BrandLink is a referral link as the brand sees it in its program: the
// link, its partner's name and email, the program's domain (the landing
// URL) and how many clicks it has recorded.
type BrandLink struct {
	Link
	PartnerName  string // "" when the partner is gone
	PartnerEmail string
	Domain       string // the program's domain
	Clicks       int64  // recorded clicks, test clicks left out
}

// URL is the partner's landing URL on the brand's site:
// https://<program domain>/?aff=<code>. It does not depend on the edge's
// public URL: a click is reported from the brand's own page.
func (l *BrandLink) URL() string {
	return "https://" + l.Domain + "/?" + ReferralParam + "=" + url.QueryEscape(l.Code)
}

// BrandLinkQueryInput is the link listing's query as the caller sent it.
type BrandLinkQueryInput struct {
	Page      Input[int64]
	PageSize  Input[int64]
	PartnerID Input[int64]
	Status    Input[string]
}

// BrandLinkQuery is a validated link listing request: the event listing's
// page bounds and defaults, and optional filters.
type BrandLinkQuery struct {
	ProgramID int64
	PartnerID *int64
	Active    *bool
	Page      int64
	PageSize  int64
}

// Validate checks the query in parameter order and applies the defaults.
// Errors: EInvalid naming the parameter.
func (in BrandLinkQueryInput) Validate(programID int64) (BrandLinkQuery, error) {
	q := BrandLinkQuery{ProgramID: programID, Page: DefaultEventPage, PageSize: DefaultEventPageSize}
	if in.Page.Present {
		if in.Page.Bad || in.Page.Value < 1 {
			return BrandLinkQuery{}, NewError(EInvalid, MsgLinkPage)
		}
		q.Page = in.Page.Value
	}
	if in.PageSize.Present {
		if in.PageSize.Bad || in.PageSize.Value < 1 || in.PageSize.Value > MaxEventPageSize {
			return BrandLinkQuery{}, NewError(EInvalid, MsgLinkPageSize)
		}
		q.PageSize = in.PageSize.Value
	}
	if in.PartnerID.Present {
		if in.PartnerID.Bad || in.PartnerID.Value < 1 {
			return BrandLinkQuery{}, NewError(EInvalid, MsgLinkPartnerFilter)
		}
		id := in.PartnerID.Value
		q.PartnerID = &id
	}
	if in.Status.Present {
		active, err := ParseLinkStatus(in.Status.Value)
		if in.Status.Bad || err != nil {
			return BrandLinkQuery{}, NewError(EInvalid, MsgLinkStatus)
		}
		q.Active = &active
	}
	return q, nil
}

// Offset is the number of rows before the page; a page beyond any
// possible row saturates instead of overflowing.
func (q BrandLinkQuery) Offset() int64 {
	const maxOffset = 1<<63 - 1
	if q.Page-1 > maxOffset/q.PageSize {
		return maxOffset
	}
	return (q.Page - 1) * q.PageSize
}

// BrandLinkPage is one page of the link listing.
type BrandLinkPage struct {
	Links    []BrandLink
	Total    int64 // links matching the filters
	Page     int64
	PageSize int64
}

// PageCount is the number of pages of the matching links.
func (p *BrandLinkPage) PageCount() int64 { return (p.Total + p.PageSize - 1) / p.PageSize }

// BrandLinkService is how a brand manages its partners' referral links
// in one program. The test partner's fixture link (is_test) is not the
// brand's to list or change.
type BrandLinkService interface {
	// CreateLink creates a link of a partner enrolled in the program, with
	// the operator's rules (ValidLinkCode, a code unique in the service).
	// Errors: EInvalid (code, partner_id), ENotFound (program),
	// EConflict (MsgLinkCodeTaken).
	CreateLink(ctx context.Context, programID, partnerID int64, code string, active bool) (*BrandLink, error)
	// ListLinks returns one page of the program's links, newest first.
	ListLinks(ctx context.Context, q BrandLinkQuery) (*BrandLinkPage, error)
	// SetLinkStatus turns a link of the program on or off. Errors:
	// ENotFound (no such link in the program).
	SetLinkStatus(ctx context.Context, programID, linkID int64, active bool) (*BrandLink, error)
}
