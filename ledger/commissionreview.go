package ledger

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Commission review (issue 24): the brand lists the commissions its
// program owes, approves a pending one before its hold ends and rejects
// one with a reason. Each decision is written to the program's audit log
// in its transaction.

// CommissionRejected is the status of a commission the brand rejected
// while it was pending: it never pays and never entered the balance.
const CommissionRejected = "rejected"

// CommissionStatuses are the statuses the review listing filters on.
var CommissionStatuses = []string{CommissionPending, CommissionApproved, CommissionPaid,
	CommissionReversed, CommissionRefunded, CommissionRejected}

// CommissionExportBatch is how many commissions the CSV export reads per
// query.
const CommissionExportBatch = 500

// NoticeCommissionRejected is the kind of the in-app notification that
// tells a partner the brand rejected (or reversed) one of its commissions.
const NoticeCommissionRejected = "commission.rejected"

// MaxRejectReasonLen bounds a rejection's reason, in characters.
const MaxRejectReasonLen = 500

// Audit actions and subject of the review.
const (
	AuditCommissionApproved = "commission.approved"
	AuditCommissionRejected = "commission.rejected"
	AuditSubjectCommission  = "commission"
)

// Messages of commission review.
const (
	MsgCommissionNotFound      = "commission not found"
	MsgCommissionStatusFilter  = "status must be one of: pending, approved, paid, reversed, refunded, rejected"
	MsgCommissionPartnerFilter = "partner_id must be a positive integer"
	MsgCommissionFormat        = "format must be json or csv"
	MsgRejectReason            = "reason must be a string of 1 to 500 characters"
	MsgApproveNotPending       = "only a pending commission can be approved; this commission is "
	MsgRejectPaid              = "commission is paid out and cannot be rejected; refund its sale to reverse it"
	MsgRejectRejected          = "commission is already rejected"
	MsgRejectReversed          = "commission is already reversed"
	MsgRejectRefunded          = "commission was refunded and cannot be rejected"
	MsgCommissionRejected      = "commission is rejected and cannot be approved or paid"
	MsgAuditAction             = "action must be a string of 1 to 100 characters"
	MsgAuditSubjectType        = "subject_type must be a string of 1 to 50 characters"
)

// CommissionQueryInput is the review listing's query as the caller sent
// it.
type CommissionQueryInput struct {
	Page      Input[int64]
	PageSize  Input[int64]
	Status    Input[string]
	PartnerID Input[int64]
	DateFrom  Input[string]
	DateTo    Input[string]
}

// CommissionQuery is a validated review listing request: the event
// listing's page bounds, dates and messages, on the commission's
// created_at.
type CommissionQuery struct {
	ProgramID int64
	Status    string // "" for every status
	PartnerID *int64
	From      *time.Time // inclusive
	To        *time.Time // inclusive
	Page      int64
	PageSize  int64
}

// Validate checks the query in parameter order and applies the defaults.
// Errors: EInvalid naming the parameter.
func (in CommissionQueryInput) Validate(programID int64) (CommissionQuery, error) {
	ev, err := EventQueryInput{Page: in.Page, PageSize: in.PageSize}.Validate(programID)
	if err != nil {
		return CommissionQuery{}, err
	}
	q := CommissionQuery{ProgramID: programID, Page: int64(ev.Page), PageSize: int64(ev.PageSize)}
	if in.Status.Present {
		if in.Status.Bad || !validCommissionStatus(in.Status.Value) {
			return CommissionQuery{}, NewError(EInvalid, MsgCommissionStatusFilter)
		}
		q.Status = in.Status.Value
	}
	if in.PartnerID.Present {
		if in.PartnerID.Bad || in.PartnerID.Value < 1 {
			return CommissionQuery{}, NewError(EInvalid, MsgCommissionPartnerFilter)
		}
		id := in.PartnerID.Value
		q.PartnerID = &id
	}
	dates, err := EventQueryInput{DateFrom: in.DateFrom, DateTo: in.DateTo}.Validate(programID)
	if err != nil {
		return CommissionQuery{}, err
	}
	q.From, q.To = dates.From, dates.To
	return q, nil
}

func validCommissionStatus(s string) bool {
	for _, v := range CommissionStatuses {
		if s == v {
			return true
		}
	}
	return false
}

// Offset is the number of rows before the page; a page beyond any
// possible row saturates instead of overflowing.
func (q CommissionQuery) Offset() int64 { return pageOffset(q.Page, q.PageSize) }

// ReviewedCommission is a commission as the brand reviews it: with its
// partner's name and email (empty when the partner is gone) and when it
// was rejected. The customer is never shown.
type ReviewedCommission struct {
	Commission
	PartnerName  string
	PartnerEmail string
	RejectedAt   *time.Time
}

// CommissionPage is one page of the review listing.
type CommissionPage struct {
	Commissions []ReviewedCommission
	Total       int64 // commissions matching the filters
	Page        int64
	PageSize    int64
}

// PageCount is the number of pages of the matching commissions.
func (p *CommissionPage) PageCount() int64 { return (p.Total + p.PageSize - 1) / p.PageSize }

// ParseRejectReason checks a rejection's reason: a string of 1 to 500
// characters once surrounding spaces are trimmed. Errors: EInvalid
// (MsgRejectReason).
func ParseRejectReason(in Input[string]) (string, error) {
	if !in.OK() {
		return "", NewError(EInvalid, MsgRejectReason)
	}
	s := strings.TrimSpace(in.Value)
	if s == "" || utf8.RuneCountInString(s) > MaxRejectReasonLen {
		return "", NewError(EInvalid, MsgRejectReason)
	}
	return s, nil
}

// CheckApprovable admits the brand's approval of a commission: only a
// pending one. Errors: EConflict naming the commission's status.
func CheckApprovable(c *Commission) error {
	if c.Status != CommissionPending {
		return NewError(EConflict, MsgApproveNotPending+c.Status)
	}
	return nil
}

// RejectionPlan is what rejecting a commission writes.
type RejectionPlan struct {
	// Status is the commission's next status: rejected (it was pending and
	// never entered the balance) or reversed (it was approved).
	Status string
	// Deduction takes the approved amount back from the partner's
	// balance, as a refund's deduction does; nil when nothing was credited.
	Deduction *BalanceDeduction
	// FitWithdrawals tells that the partner's open withdrawals must then be
	// lowered to fit the balance, as after a refund's deduction.
	FitWithdrawals bool
}

// PlanRejection decides the brand's rejection of a commission from its
// locked state: a pending commission becomes rejected and never pays; an
// approved one is reversed and its credited amount deducted from the
// balance, the open withdrawals then fitted to what is left (the refund
// path's reversal), as is a credited one partly refunded and not paid. A
// paid commission is refused (refunding its sale reverses it and leaves
// the partner owing); one already rejected or reversed, or refunded to
// nothing, too. Errors: EConflict.
func PlanRejection(c *Commission) (RejectionPlan, error) {
	switch c.Status {
	case CommissionPending:
		return RejectionPlan{Status: CommissionRejected}, nil
	case CommissionApproved:
		return reversal(c), nil
	case CommissionRefunded:
		// Partly refunded after it was credited, and not paid out: what is
		// left of it would still be paid, so it is reversed as an approved
		// one is. A pending one partly refunded was cancelled whole.
		if c.PaidAt != nil {
			return RejectionPlan{}, NewError(EConflict, MsgRejectPaid)
		}
		if c.Credited && c.AmountMinor > 0 {
			return reversal(c), nil
		}
	case CommissionPaid:
		return RejectionPlan{}, NewError(EConflict, MsgRejectPaid)
	case CommissionRejected:
		return RejectionPlan{}, NewError(EConflict, MsgRejectRejected)
	case CommissionReversed:
		return RejectionPlan{}, NewError(EConflict, MsgRejectReversed)
	}
	return RejectionPlan{}, NewError(EConflict, MsgRejectRefunded)
}

// reversal reverses a credited commission: what it still credits is
// deducted and the open withdrawals fitted to the balance left.
func reversal(c *Commission) RejectionPlan {
	p := RejectionPlan{Status: CommissionReversed}
	if c.Credited && c.AmountMinor > 0 {
		p.Deduction = &BalanceDeduction{PartnerID: c.PartnerID, Currency: c.Currency, CommissionID: c.ID,
			AmountMinor: c.AmountMinor}
		p.FitWithdrawals = true
	}
	return p
}

// RejectionNotification is the in-app notification to the partner of a
// commission the brand rejected: c after the rejection, of rejectedMinor,
// deductionMinor of it taken back from the balance (an approved one).
func RejectionNotification(c *Commission, reason string, rejectedMinor, deductionMinor int64) Notification {
	// Like the refund notices, it names the commission, never the
	// brand's transaction id.
	body := fmt.Sprintf("Your commission #%d (%s) was rejected by the program (reason: %s).",
		c.ID, FormatMoney(rejectedMinor, c.Currency), reason)
	if c.Status == CommissionReversed {
		body = fmt.Sprintf("Your commission #%d was rejected by the program and reversed: %s was deducted from your balance (reason: %s).",
			c.ID, FormatMoney(deductionMinor, c.Currency), reason)
	}
	partnerID := c.PartnerID
	return Notification{
		PartnerID: &partnerID,
		Kind:      NoticeCommissionRejected,
		Title:     "Commission rejected",
		Body:      body,
		Data: map[string]any{
			"commission_id": c.ID,
			"program_id":    c.ProgramID,
			"status":        c.Status,
			"amount":        MinorToMajor(rejectedMinor, c.Currency).String(),
			"deduction":     MinorToMajor(deductionMinor, c.Currency).String(),
			"currency":      string(c.Currency),
			"reason":        reason,
		},
	}
}

// AuditQueryInput is the audit listing's query as the caller sent it.
type AuditQueryInput struct {
	Page        Input[int64]
	PageSize    Input[int64]
	Action      Input[string]
	SubjectType Input[string]
}

// AuditQuery is a validated audit listing request.
type AuditQuery struct {
	ProgramID   int64
	Action      string // "" for every action
	SubjectType string // "" for every subject
	Page        int64
	PageSize    int64
}

// Validate checks the query in parameter order and applies the event
// listing's page defaults. Errors: EInvalid naming the parameter.
func (in AuditQueryInput) Validate(programID int64) (AuditQuery, error) {
	ev, err := EventQueryInput{Page: in.Page, PageSize: in.PageSize}.Validate(programID)
	if err != nil {
		return AuditQuery{}, err
	}
	q := AuditQuery{ProgramID: programID, Page: int64(ev.Page), PageSize: int64(ev.PageSize)}
	if in.Action.Present {
		if in.Action.Bad || utf8.RuneCountInString(in.Action.Value) > 100 {
			return AuditQuery{}, NewError(EInvalid, MsgAuditAction)
		}
		q.Action = in.Action.Value
	}
	if in.SubjectType.Present {
		if in.SubjectType.Bad || utf8.RuneCountInString(in.SubjectType.Value) > 50 {
			return AuditQuery{}, NewError(EInvalid, MsgAuditSubjectType)
		}
		q.SubjectType = in.SubjectType.Value
	}
	return q, nil
}

// Offset is the number of rows before the page.
func (q AuditQuery) Offset() int64 { return pageOffset(q.Page, q.PageSize) }

// AuditPage is one page of the audit listing.
type AuditPage struct {
	Entries  []AuditEntry
	Total    int64
	Page     int64
	PageSize int64
}

// PageCount is the number of pages of the matching entries.
func (p *AuditPage) PageCount() int64 { return (p.Total + p.PageSize - 1) / p.PageSize }

// CommissionReviewService is the brand's review of one program's
// commissions. Test-mode commissions are not the brand's to list or
// review; a commission of another program is not found.
type CommissionReviewService interface {
	// Commissions returns one page of the program's commissions, newest
	// first.
	Commissions(ctx context.Context, q CommissionQuery) (*CommissionPage, error)
	// CommissionBatch returns, in the listing's order, up to
	// CommissionExportBatch commissions q matches after the given one (nil:
	// from the first). A batch shorter than CommissionExportBatch is the
	// last.
	CommissionBatch(ctx context.Context, q CommissionQuery, after *ReviewedCommission) ([]ReviewedCommission, error)
	// ApproveCommission approves a pending commission now, before its hold
	// ends, crediting the balance as the scheduled approval does, and
	// records it in the audit log as actorUserID. Errors: ENotFound
	// (MsgCommissionNotFound), EConflict (not pending).
	ApproveCommission(ctx context.Context, programID, commissionID, actorUserID int64) (*ReviewedCommission, error)
	// RejectCommission rejects a commission as PlanRejection decides, and
	// records it in the audit log as actorUserID. Errors: ENotFound,
	// EConflict.
	RejectCommission(ctx context.Context, programID, commissionID, actorUserID int64, reason string) (*ReviewedCommission, error)
	// Audit returns one page of the program's audit log, newest first.
	Audit(ctx context.Context, q AuditQuery) (*AuditPage, error)
}
