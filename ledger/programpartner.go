package ledger

import (
	"context"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// Enrollment statuses: a partner joined to a program is active until it
// is removed; the brand may suspend it meanwhile (its links answer 410 and
// it earns nothing new) and make it active again.
const (
	EnrollmentActive    = "active"
	EnrollmentSuspended = "suspended"
	EnrollmentRemoved   = "removed"
)

// MaxPartnerSearch is the longest q of the brand's partner listing, in
// characters: a name is at most 200 and an email 320, and a search word
// longer than this finds nothing a shorter one would not.
const MaxPartnerSearch = 100

// PartnerExportBatch is how many partners the CSV export reads per query:
// the export streams every matching partner, a batch at a time, so memory
// stays bounded whatever the program's size.
const PartnerExportBatch = 500

// Messages of the partner listing's query parameters (page and pageSize
// share the event listing's: MsgEventPage, MsgEventPageSize).
const (
	MsgPartnerStatus = "status must be one of: active, suspended, removed"
	// MsgPartnerGroupFilter is the listing's group_id filter message.
	MsgPartnerGroupFilter = "group_id must be a positive integer"
	MsgPartnerSearch      = "q must be text of at most 100 characters"
	MsgPartnerFormat      = "format must be json or csv"
)

// ProgramPartnerQueryInput is the brand's partner listing query as the
// caller sent it.
type ProgramPartnerQueryInput struct {
	Page     Input[int64]
	PageSize Input[int64]
	Status   Input[string]
	GroupID  Input[int64]
	Q        Input[string]
}

// ProgramPartnerQuery is a validated partner listing request.
type ProgramPartnerQuery struct {
	ProgramID int64
	Status    string // "" for every status
	GroupID   int64  // 0 for every group
	Search    string // lower-cased; "" for no search
	Page      int
	PageSize  int
}

// Validate checks the query in parameter order and applies the defaults
// of the event listing (page 1, pageSize 10, at most 100).
func (in ProgramPartnerQueryInput) Validate(programID int64) (ProgramPartnerQuery, error) {
	q := ProgramPartnerQuery{ProgramID: programID, Page: DefaultEventPage, PageSize: DefaultEventPageSize}
	if in.Page.Present {
		if in.Page.Bad || in.Page.Value < 1 {
			return ProgramPartnerQuery{}, NewError(EInvalid, MsgEventPage)
		}
		q.Page = int(in.Page.Value)
	}
	if in.PageSize.Present {
		if in.PageSize.Bad || in.PageSize.Value < 1 || in.PageSize.Value > MaxEventPageSize {
			return ProgramPartnerQuery{}, NewError(EInvalid, MsgEventPageSize)
		}
		q.PageSize = int(in.PageSize.Value)
	}
	if in.Status.Present {
		switch v := in.Status.Value; {
		case in.Status.Bad, v != EnrollmentActive && v != EnrollmentSuspended && v != EnrollmentRemoved:
			return ProgramPartnerQuery{}, NewError(EInvalid, MsgPartnerStatus)
		}
		q.Status = in.Status.Value
	}
	if in.GroupID.Present {
		if in.GroupID.Bad || in.GroupID.Value < 1 {
			return ProgramPartnerQuery{}, NewError(EInvalid, MsgPartnerGroupFilter)
		}
		q.GroupID = in.GroupID.Value
	}
	if in.Q.Present {
		s := in.Q.Value
		// Postgres text holds neither NUL nor invalid UTF-8: such a q is
		// refused here rather than failing in the query.
		if in.Q.Bad || !utf8.ValidString(s) || strings.ContainsRune(s, 0) || utf8.RuneCountInString(s) > MaxPartnerSearch {
			return ProgramPartnerQuery{}, NewError(EInvalid, MsgPartnerSearch)
		}
		q.Search = strings.ToLower(s)
	}
	return q, nil
}

// Offset is the number of partners before the query's page, saturated so
// that a far page never overflows (it is simply empty).
func (q ProgramPartnerQuery) Offset() int64 {
	if int64(q.Page-1) > math.MaxInt64/int64(q.PageSize) {
		return math.MaxInt64
	}
	return int64(q.Page-1) * int64(q.PageSize)
}

// CommissionTotals are a partner's commissions in one currency by status,
// in minor units. Reversed and refunded commissions pay nothing and are
// not counted.
type CommissionTotals struct {
	Pending  int64
	Approved int64
	Paid     int64
}

// ProgramPartner is one partner of a program with its counts and money in
// that program. Counts are of real events only (no test events, no
// synthetic chain). Revenue and Commissions are keyed by currency, since a
// program's sales may be in another currency than the program's own.
type ProgramPartner struct {
	PartnerID int64
	Name      string
	Email     string
	Status    string // the enrollment status
	GroupID   int64  // the partner's group in the program
	GroupName string
	JoinedAt  time.Time // the enrollment's creation
	Currency  Currency  // the program's currency

	Clicks      int64
	Leads       int64 // settled leads
	Conversions int64 // sales
	// Revenue is the sum of the sales' amounts less what was refunded,
	// per currency, in minor units.
	Revenue     map[Currency]int64
	Commissions map[Currency]CommissionTotals
	// Balance is the partner's balance in the program's currency, minor
	// units. Balances belong to the partner and currency, not to one
	// program: it is what the partner would be paid in that currency.
	Balance int64
}

// ProgramPartnerDetail is a partner of a program with its links there.
type ProgramPartnerDetail struct {
	ProgramPartner
	Links []Link
}

// ProgramPartnerPage is a page of the partner listing.
type ProgramPartnerPage struct {
	Partners []ProgramPartner
	Total    int64
	Page     int
	PageSize int
}

// PageCount is the number of pages of the matching partners.
func (p *ProgramPartnerPage) PageCount() int64 {
	return (p.Total + int64(p.PageSize) - 1) / int64(p.PageSize)
}

// Messages of the brand's change of a partner (PATCH).
const (
	MsgPartnerChangeStatus = "status must be one of: active, suspended"
	MsgPartnerGroupID      = "group_id must be the id of a group of this program"
	MsgPartnerNoChange     = "Missing fields: send at least one of status, group_id"
	MsgPartnerRemoved      = "partner was removed from this program and cannot be changed"
)

// PartnerChangeInput is the brand's change of a partner in its program as
// the caller sent it.
type PartnerChangeInput struct {
	Status  Input[string]
	GroupID Input[int64]
}

// PartnerChange is a validated change: the fields sent ("" and 0 keep
// the current value).
type PartnerChange struct {
	Status  string
	GroupID int64
}

// Validate checks the change in field order: status, then group_id (a
// positive integer here; that it is a group of the program is checked
// against the database). Errors: EInvalid.
func (in PartnerChangeInput) Validate() (PartnerChange, error) {
	var ch PartnerChange
	if !in.Status.Present && !in.GroupID.Present {
		return ch, NewError(EInvalid, MsgPartnerNoChange)
	}
	if in.Status.Present {
		if v := in.Status.Value; in.Status.Bad || (v != EnrollmentActive && v != EnrollmentSuspended) {
			return ch, NewError(EInvalid, MsgPartnerChangeStatus)
		}
		ch.Status = in.Status.Value
	}
	if in.GroupID.Present {
		if in.GroupID.Bad || in.GroupID.Value < 1 {
			return ch, NewError(EInvalid, MsgPartnerGroupID)
		}
		ch.GroupID = in.GroupID.Value
	}
	return ch, nil
}

// PartnerChanged is what a committed change did: the partner's link codes
// in the program, which every edge must drop from its cache when the
// status changed (StatusChanged).
type PartnerChanged struct {
	StatusChanged bool
	LinkCodes     []string
}

// ProgramPartnerService reads a program's partners for the brand.
type ProgramPartnerService interface {
	// ProgramPartners returns q's page of the program's partners, newest
	// enrollment first (partner id breaks ties), with the total that
	// match, in one query. The synthetic test partner is never listed.
	ProgramPartners(ctx context.Context, q ProgramPartnerQuery) (*ProgramPartnerPage, error)
	// ProgramPartnerBatch returns, in one query, up to PartnerExportBatch
	// partners q matches (its Page and PageSize are ignored) in the
	// listing's order, starting after the partner after (nil: from the
	// first). A batch shorter than PartnerExportBatch is the last.
	ProgramPartnerBatch(ctx context.Context, q ProgramPartnerQuery, after *ProgramPartner) ([]ProgramPartner, error)
	// ProgramPartner returns one partner of the program with its links
	// there. Errors: ENotFound (the partner is not enrolled in it).
	ProgramPartner(ctx context.Context, programID, partnerID int64) (*ProgramPartnerDetail, error)
	// ChangePartner suspends, re-activates and/or moves a partner of the
	// program to another of its groups, in one transaction with its audit
	// entries and webhooks (partner.suspended; partner.enrolled when it is
	// made active again). Nothing changes for a value equal to the
	// current one. Errors: EInvalid (MsgPartnerGroupID), ENotFound
	// (partner not enrolled), EConflict (MsgPartnerRemoved).
	ChangePartner(ctx context.Context, programID, partnerID, actorID int64, ch PartnerChange) (*PartnerChanged, error)
}
