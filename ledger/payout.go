package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"
)

// Payouts (issue 26): a brand pays a partner the approved balance the
// partner holds in one of its programs. A payout is money of one program,
// one partner and one currency: creating it moves the amount out of the
// balance with a 'payout' entry (program and payout named), so the same
// money is never paid twice; failing it gives the money back with a
// 'payout_return' entry. The brand pays outside the service and records
// the result: pending -> processing -> paid, or failed from pending or
// processing.

// Payout statuses.
const (
	PayoutPending    = "pending"
	PayoutProcessing = "processing"
	PayoutPaid       = "paid"
	PayoutFailed     = "failed"
)

// PayoutStatuses are the statuses the brand's listing filters on.
var PayoutStatuses = []string{PayoutPending, PayoutProcessing, PayoutPaid, PayoutFailed}

// Who asked for a payout.
const (
	PayoutByBrand   = "brand"
	PayoutByPartner = "partner"
)

// EntryPayoutReturn is the balance entry that gives a failed payout's
// amount back (positive).
const EntryPayoutReturn = "payout_return"

// MaxPayoutPartners bounds the partner_ids of one payout run.
const MaxPayoutPartners = 500

// PayoutExportBatch is how many payouts the CSV export reads per query.
const PayoutExportBatch = 500

// Limits of the transitions' texts, in characters.
const (
	MaxExternalReferenceLen = 200
	MaxFailureReasonLen     = 500
)

// Why a partner named in a payout run got no payout.
const (
	PayoutSkipNotDue       = "not_due"       // no approved balance in the program, or not a partner of it
	PayoutSkipBelowMinimum = "below_minimum" // a balance below the program's minimum_payout
	PayoutSkipDuplicate    = "duplicate"     // named twice in the request
)

// In-app notifications to the partner.
const (
	NoticePayoutPaid   = "payout.paid"
	NoticePayoutFailed = "payout.failed"
)

// Audit actions of the brand's payout decisions.
const (
	AuditPayoutCreated    = "payout.created"
	AuditPayoutProcessing = "payout.processing"
	AuditPayoutPaid       = "payout.paid"
	AuditPayoutFailed     = "payout.failed"
	AuditSubjectPayout    = "payout"
)

// Messages of payouts.
const (
	MsgPayoutNotFound        = "payout not found"
	MsgPayoutStatusFilter    = "status must be one of: pending, processing, paid, failed"
	MsgPayoutPartnerFilter   = "partner_id must be a positive integer"
	MsgPayoutFormat          = "format must be json or csv"
	MsgPayoutPartnerIDs      = "partner_ids must be an array of at most 500 positive integers"
	MsgExternalReference     = "external_reference must be a string of 1 to 200 characters"
	MsgFailureReason         = "reason must be a string of 1 to 500 characters"
	MsgPayoutAmount          = "amount must be a positive number in major units of the currency, exact to its minor unit"
	MsgPayoutCurrency        = "currency must be one of: USD, EUR, VND"
	MsgPayoutNothingDue      = "nothing to pay out: the approved balance in this program and currency is "
	MsgPayoutExceeds         = "amount exceeds the approved balance in this program and currency, which is "
	MsgPayoutBelowMinimum    = "amount is below the program's minimum payout of "
	MsgPayoutsAdminOnly      = "Only a workspace owner or admin can manage the program's payouts"
	MsgNoPayoutsRead         = "You do not have access to this program's payouts"
	MsgPayoutCSVAdminOnly    = "Only a workspace owner or admin can export payouts: the file holds the partners' payout details"
	msgPayoutFinalTail       = " and cannot be marked "
	msgPayoutAlreadyInPrefix = "payout is already "
	MsgPayoutProgramNotFound = "program not found"
	MsgPayoutMethodNotFound  = "no payout method on file"
	MsgPayoutMethod          = "method must be one of: bank_transfer, paypal, wise"
	MsgPayoutDetails         = "details must be an object of strings"
	// MsgPayoutDetailNotString follows "details.<field> " when a detail
	// is not a JSON string.
	MsgPayoutDetailNotString = "must be a string"
)

// Payout is one payout, with the names a reader sees and the clawback:
// what refunds took back, after it was paid, of the commissions it paid.
type Payout struct {
	ID                int64
	ProgramID         int64
	ProgramName       string
	PartnerID         int64
	PartnerName       string
	PartnerEmail      string
	Currency          Currency
	AmountMinor       int64
	Status            string
	RequestedBy       string
	CreatedBy         *int64
	ExternalReference string
	FailureReason     string
	CreatedAt         time.Time
	UpdatedAt         time.Time
	ProcessingAt      *time.Time
	PaidAt            *time.Time
	FailedAt          *time.Time
	ClawbackMinor     int64
	// Method is the partner's payout method as the CSV export needs it
	// (unsealed); nil elsewhere, or when none is on file.
	Method *PayoutMethod
}

// PayoutWarnings are the warnings a payout read carries: a clawback
// after payment means the partner was paid money a refund took back, and
// the brand reviews it by hand (the refund's manual-review notice).
func PayoutWarnings(p *Payout) []string {
	if p.ClawbackMinor <= 0 {
		return []string{}
	}
	return []string{fmt.Sprintf("Refunds after this payout was paid took %s back from the partner's balance, "+
		"which may now be negative; review it manually.", FormatMoney(p.ClawbackMinor, p.Currency))}
}

// DuePayout is a partner whose approved balance in a program's currency
// reaches the program's minimum_payout.
type DuePayout struct {
	PartnerID    int64
	PartnerName  string
	PartnerEmail string
	Currency     Currency
	AmountMinor  int64
	// MethodOnFile tells whether a payout method is stored; Method is its
	// type and Masked its masked details.
	MethodOnFile bool
	Method       string
	Masked       map[string]string
}

// PayoutSkip is a partner named in a payout run that got no payout.
type PayoutSkip struct {
	PartnerID int64
	Reason    string
}

// PayoutRun is what a brand's payout run did.
type PayoutRun struct {
	Created []Payout
	Skipped []PayoutSkip
}

// PayoutQueryInput is the brand listing's query as the caller sent it.
type PayoutQueryInput struct {
	Page      Input[int64]
	PageSize  Input[int64]
	Status    Input[string]
	PartnerID Input[int64]
}

// PayoutQuery is a validated listing request.
type PayoutQuery struct {
	ProgramID int64
	Status    string // "" for every status
	PartnerID *int64
	Page      int64
	PageSize  int64
}

// Validate checks the query in parameter order and applies the defaults
// of the event listing. Errors: EInvalid naming the parameter.
func (in PayoutQueryInput) Validate(programID int64) (PayoutQuery, error) {
	ev, err := EventQueryInput{Page: in.Page, PageSize: in.PageSize}.Validate(programID)
	if err != nil {
		return PayoutQuery{}, err
	}
	q := PayoutQuery{ProgramID: programID, Page: int64(ev.Page), PageSize: int64(ev.PageSize)}
	if in.Status.Present {
		if in.Status.Bad || !validPayoutStatus(in.Status.Value) {
			return PayoutQuery{}, NewError(EInvalid, MsgPayoutStatusFilter)
		}
		q.Status = in.Status.Value
	}
	if in.PartnerID.Present {
		if in.PartnerID.Bad || in.PartnerID.Value < 1 {
			return PayoutQuery{}, NewError(EInvalid, MsgPayoutPartnerFilter)
		}
		id := in.PartnerID.Value
		q.PartnerID = &id
	}
	return q, nil
}

func validPayoutStatus(s string) bool {
	for _, v := range PayoutStatuses {
		if s == v {
			return true
		}
	}
	return false
}

// Offset is the number of rows before the page.
func (q PayoutQuery) Offset() int64 { return pageOffset(q.Page, q.PageSize) }

// PayoutPage is one page of a listing.
type PayoutPage struct {
	Payouts  []Payout
	Total    int64
	Page     int64
	PageSize int64
}

// PageCount is the number of pages of the matching payouts.
func (p *PayoutPage) PageCount() int64 { return (p.Total + p.PageSize - 1) / p.PageSize }

// CheckPayoutPartnerIDs checks a payout run's partner_ids: at most
// MaxPayoutPartners positive ids. Errors: EInvalid.
func CheckPayoutPartnerIDs(ids []int64) error {
	if len(ids) > MaxPayoutPartners {
		return NewError(EInvalid, MsgPayoutPartnerIDs)
	}
	for _, id := range ids {
		if id < 1 {
			return NewError(EInvalid, MsgPayoutPartnerIDs)
		}
	}
	return nil
}

// PlanPayoutRun decides whom a brand's payout run visits: requested is
// the partner_ids the brand named (nil: every partner with a balance),
// withEntries the partners with entries in the program and currency
// (only they can hold a balance). It answers the partners to visit, in
// ascending id (the order their balance accounts are locked in, so runs
// never deadlock), and the named ones skipped, in the request's order:
// named twice (duplicate) or without entries (not_due).
func PlanPayoutRun(requested, withEntries []int64) (todo []int64, skipped []PayoutSkip) {
	has := make(map[int64]bool, len(withEntries))
	for _, id := range withEntries {
		has[id] = true
	}
	order := requested
	if order == nil {
		order = withEntries
	}
	seen := make(map[int64]bool, len(order))
	for _, id := range order {
		switch {
		case seen[id]:
			skipped = append(skipped, PayoutSkip{PartnerID: id, Reason: PayoutSkipDuplicate})
		case !has[id]:
			skipped = append(skipped, PayoutSkip{PartnerID: id, Reason: PayoutSkipNotDue})
		default:
			todo = append(todo, id)
		}
		seen[id] = true
	}
	slices.Sort(todo)
	return todo, skipped
}

// MinimumPayoutMinor is a program's minimum_payout (major units, exact)
// in minor units of c, rounded up: a balance is due when it reaches it.
func MinimumPayoutMinor(minimum decimal.Decimal, c Currency) int64 {
	d := minimum.Shift(c.Exponent()).Ceil()
	if d.Sign() <= 0 {
		return 0
	}
	return ClampMinor(d)
}

// PayoutDue tells whether a balance is paid out by a brand's run: it is
// positive and reaches the minimum.
func PayoutDue(balance, minimum int64) bool {
	return balance > 0 && balance >= minimum
}

// PlanBrandPayout is the amount of a brand's payout to a partner: the
// whole approved balance when it is due, else the reason to skip.
func PlanBrandPayout(balance, minimum int64) (amount int64, skip string) {
	if balance <= 0 {
		return 0, PayoutSkipNotDue
	}
	if !PayoutDue(balance, minimum) {
		return 0, PayoutSkipBelowMinimum
	}
	return balance, ""
}

// PlanPartnerPayout is the amount of a payout the partner asks for:
// requested (nil: the whole approved balance), never more than the
// balance and never less than the program's minimum. Errors: EConflict
// when nothing is there to pay, EInvalid naming amount otherwise.
func PlanPartnerPayout(balance, minimum int64, requested *int64, c Currency) (int64, error) {
	if requested == nil {
		if balance <= 0 {
			return 0, NewError(EConflict, MsgPayoutNothingDue+FormatMoney(balance, c))
		}
		if balance < minimum {
			return 0, NewError(EConflict, MsgPayoutBelowMinimum+FormatMoney(minimum, c)+
				"; the approved balance is "+FormatMoney(balance, c))
		}
		return balance, nil
	}
	amount := *requested
	if amount <= 0 {
		return 0, NewError(EInvalid, MsgPayoutAmount)
	}
	if balance <= 0 {
		return 0, NewError(EConflict, MsgPayoutNothingDue+FormatMoney(balance, c))
	}
	if amount > balance {
		return 0, NewError(EInvalid, MsgPayoutExceeds+FormatMoney(balance, c))
	}
	if amount < minimum {
		return 0, NewError(EInvalid, MsgPayoutBelowMinimum+FormatMoney(minimum, c))
	}
	return amount, nil
}

// PayoutTransition decides moving a payout from its status to next
// (processing, paid or failed): changed is false when it is already
// there (the payout is answered unchanged). pending -> processing;
// pending or processing -> paid or failed. Errors: EConflict naming both
// statuses.
func PayoutTransition(from, next string) (changed bool, err error) {
	if from == next {
		return false, nil
	}
	switch {
	case from == PayoutPending && (next == PayoutProcessing || next == PayoutPaid || next == PayoutFailed):
		return true, nil
	case from == PayoutProcessing && (next == PayoutPaid || next == PayoutFailed):
		return true, nil
	}
	return false, NewError(EConflict, msgPayoutAlreadyInPrefix+from+msgPayoutFinalTail+next)
}

// ParseExternalReference checks mark-paid's external_reference: a string
// of 1 to 200 characters once trimmed. Errors: EInvalid.
func ParseExternalReference(in Input[string]) (string, error) {
	return boundedText(in, MaxExternalReferenceLen, MsgExternalReference)
}

// ParseFailureReason checks mark-failed's reason: a string of 1 to 500
// characters once trimmed. Errors: EInvalid.
func ParseFailureReason(in Input[string]) (string, error) {
	return boundedText(in, MaxFailureReasonLen, MsgFailureReason)
}

func boundedText(in Input[string], max int, msg string) (string, error) {
	if !in.OK() {
		return "", NewError(EInvalid, msg)
	}
	s := strings.TrimSpace(in.Value)
	if s == "" || utf8.RuneCountInString(s) > max {
		return "", NewError(EInvalid, msg)
	}
	return s, nil
}

// PayoutCoverage is how much of a program's credited commissions a paid
// payout of amount pays out: its amount plus carry, what the program's
// earlier paid payouts paid beyond the whole commissions they covered (a
// negative carry counts as none), saturated at the bounds of int64.
func PayoutCoverage(amount, carry int64) int64 {
	if carry <= 0 {
		return amount
	}
	if amount > math.MaxInt64-carry {
		return math.MaxInt64
	}
	return amount + carry
}

// SplitWithdrawal spreads an operator withdrawal's amount over the
// partner's program balances (in the order given: the program credited
// first comes first), never taking more than a program's positive
// balance, so program balances stay right. What no program holds (money
// credited before balances named programs) is the remainder, written
// without a program.
func SplitWithdrawal(amount int64, balances []int64) (parts []int64, remainder int64) {
	parts = make([]int64, len(balances))
	left := max(amount, 0)
	for i, b := range balances {
		take := min(left, max(b, 0))
		parts[i] = take
		left -= take
	}
	return parts, left
}

// PayoutPaidNotification is the in-app notification to the partner of a
// paid payout.
func PayoutPaidNotification(p *Payout) Notification {
	partnerID := p.PartnerID
	return Notification{
		PartnerID: &partnerID,
		Kind:      NoticePayoutPaid,
		Title:     "Payout paid",
		Body: fmt.Sprintf("Your payout #%d of %s from %s was paid (reference: %s).",
			p.ID, FormatMoney(p.AmountMinor, p.Currency), p.ProgramName, p.ExternalReference),
		Data: payoutNoticeData(p),
	}
}

// PayoutFailedNotification is the in-app notification to the partner of
// a failed payout, whose amount is back in the balance.
func PayoutFailedNotification(p *Payout) Notification {
	partnerID := p.PartnerID
	return Notification{
		PartnerID: &partnerID,
		Kind:      NoticePayoutFailed,
		Title:     "Payout failed",
		Body: fmt.Sprintf("Your payout #%d of %s from %s failed and the amount is back in your balance (reason: %s).",
			p.ID, FormatMoney(p.AmountMinor, p.Currency), p.ProgramName, p.FailureReason),
		Data: payoutNoticeData(p),
	}
}

func payoutNoticeData(p *Payout) map[string]any {
	return map[string]any{
		"payout_id":          p.ID,
		"program_id":         p.ProgramID,
		"status":             p.Status,
		"amount":             MinorToMajor(p.AmountMinor, p.Currency).String(),
		"currency":           string(p.Currency),
		"external_reference": p.ExternalReference,
		"reason":             p.FailureReason,
	}
}

// PayoutEventData is the data of payout.created, payout.paid and
// payout.failed: the payout after the change.
type PayoutEventData struct {
	ID                int64       `json:"id"`
	ProgramID         int64       `json:"program_id"`
	PartnerID         int64       `json:"partner_id"`
	Amount            json.Number `json:"amount"`
	Currency          string      `json:"currency"`
	Status            string      `json:"status"`
	RequestedBy       string      `json:"requested_by"`
	ExternalReference *string     `json:"external_reference"`
	FailureReason     *string     `json:"failure_reason"`
	CreatedAt         string      `json:"created_at"`
	PaidAt            *string     `json:"paid_at"`
	FailedAt          *string     `json:"failed_at"`
}

// NewPayoutEventData is the webhook data of p.
func NewPayoutEventData(p *Payout) PayoutEventData {
	opt := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	at := func(t *time.Time) *string {
		if t == nil {
			return nil
		}
		s := FormatTime(*t)
		return &s
	}
	return PayoutEventData{ID: p.ID, ProgramID: p.ProgramID, PartnerID: p.PartnerID,
		Amount: MajorNumber(p.AmountMinor, p.Currency), Currency: string(p.Currency), Status: p.Status,
		RequestedBy: p.RequestedBy, ExternalReference: opt(p.ExternalReference), FailureReason: opt(p.FailureReason),
		CreatedAt: FormatTime(p.CreatedAt), PaidAt: at(p.PaidAt), FailedAt: at(p.FailedAt)}
}

// PayoutRequest is a payout the partner asks for in one program: Amount
// in major units (nil: the whole approved balance), Currency (nil: the
// program's).
type PayoutRequest struct {
	PartnerID int64
	ProgramID int64
	Amount    *decimal.Decimal
	Currency  *Currency
}

// PayoutService runs a program's payouts (the brand) and a partner's
// view and requests of them.
type PayoutService interface {
	// DuePayouts lists the program's partners whose approved balance in
	// the program currency reaches its minimum_payout, largest first.
	// Errors: ENotFound (program).
	DuePayouts(ctx context.Context, programID int64) ([]DuePayout, error)
	// CreatePayouts pays every due partner (partnerIDs nil) or each named
	// one with a due balance, moving the balance out. Errors: ENotFound.
	CreatePayouts(ctx context.Context, programID int64, partnerIDs []int64, actorUserID int64) (*PayoutRun, error)
	// Payouts is a page of the program's payouts, newest first.
	Payouts(ctx context.Context, q PayoutQuery) (*PayoutPage, error)
	// PayoutBatch is the CSV export's next batch after after (nil: the
	// first), newest first, with each partner's unsealed payout method.
	PayoutBatch(ctx context.Context, q PayoutQuery, after *Payout) ([]Payout, error)
	// MarkPayout moves one of the program's payouts to next (processing,
	// paid with text the external reference, failed with text the
	// reason). Errors: ENotFound, EConflict (PayoutTransition).
	MarkPayout(ctx context.Context, programID, payoutID int64, next, text string, actorUserID int64) (*Payout, error)
	// PartnerPayouts lists a partner's payouts in every program, newest
	// first, at most limit of them.
	PartnerPayouts(ctx context.Context, partnerID int64, limit int) ([]Payout, error)
	// RequestPayout is a payout the partner asks for. Errors: ENotFound
	// (not a partner of the program), EInvalid (amount, currency),
	// EConflict (nothing to pay).
	RequestPayout(ctx context.Context, r PayoutRequest) (*Payout, error)
	// PayoutMethod returns the partner's payout method, masked. Errors:
	// ENotFound.
	PayoutMethod(ctx context.Context, partnerID int64) (*PayoutMethod, error)
	// SetPayoutMethod stores (replaces) the partner's payout method,
	// sealed, and returns it masked.
	SetPayoutMethod(ctx context.Context, partnerID int64, m PayoutMethodInput) (*PayoutMethod, error)
	// DeletePayoutMethod removes it. Errors: ENotFound.
	DeletePayoutMethod(ctx context.Context, partnerID int64) error
}

// PayoutPaidEmail tells a partner a payout was paid.
type PayoutPaidEmail struct {
	ProgramName       string    `json:"program_name"`
	PartnerName       string    `json:"partner_name"`
	Amount            string    `json:"amount"` // "12.50 USD" (FormatMoney)
	ExternalReference string    `json:"external_reference"`
	PaidAt            time.Time `json:"paid_at"`
}

// EmailKind implements EmailData.
func (PayoutPaidEmail) EmailKind() string { return EmailPayoutPaid }

// Validate implements EmailData.
func (d PayoutPaidEmail) Validate() error {
	return errors.Join(required("program_name", d.ProgramName), required("partner_name", d.PartnerName),
		required("amount", d.Amount), required("external_reference", d.ExternalReference), requiredTime("paid_at", d.PaidAt))
}
