package ledger

import (
	"context"
	"strings"
	"unicode/utf8"
)

// Refund messages. The spec fixes the first three to the letter.
const (
	MsgRefundTransactionID = "transaction_id is required"
	MsgRefundReason        = "reason must be refund or chargeback"
	MsgSaleNotFound        = "Sale not found for transaction_id"

	MsgRefundAmount       = "refund_amount_cents must be a positive integer"
	MsgRefundID           = "refund_id must be a string of 1 to 255 characters"
	MsgRefundReasonText   = "refund_reason must be a string of at most 1000 characters"
	MsgRefundNoCommission = "This sale has no commission; the refund was recorded on the sale"
)

// Refund reasons a caller may send in reason.
const (
	ReasonRefund     = "refund"
	ReasonChargeback = "chargeback"
)

// Refund statuses of the response.
const (
	RefundReversed     = "reversed"
	RefundRefunded     = "refunded"
	RefundSkipped      = "skipped"
	RefundNoCommission = "no_commission"
)

// Why a refund was skipped.
const (
	SkipRefundID       = "refund_id already applied"
	SkipSameAmount     = "same amount already applied"
	SkipAlreadyReverse = "already reversed"
)

// RefundRequest is a refund call as the caller sent it.
type RefundRequest struct {
	ProgramID         int64
	TransactionID     Input[string]
	RefundAmountCents Input[int64]
	RefundID          Input[string]
	Reason            Input[string]
	RefundReason      Input[string]
}

// RefundInput is a validated refund, from the refund endpoint or from a
// processor's refund event.
type RefundInput struct {
	ProgramID     int64
	TransactionID string
	AmountCents   int64  // this refund's amount; 0 refunds all that is left
	RefundID      string // the caller's id; ignored when AmountCents is 0
	Reason        string // recorded on the commission: refund_reason, else reason
	Source        string // SourceAPI (also when empty) or SourceProcessor
}

// Validate checks a refund call in the spec's order. Errors: EInvalid.
func (r RefundRequest) Validate() (RefundInput, error) {
	in := RefundInput{ProgramID: r.ProgramID, Source: SourceAPI}
	if v := r.TransactionID; !v.OK() || strings.TrimSpace(v.Value) == "" {
		return in, NewError(EInvalid, MsgRefundTransactionID)
	}
	in.TransactionID = r.TransactionID.Value
	if v := r.RefundAmountCents; v.Present {
		if v.Bad || v.Value < 0 || v.Value > MaxAmountCents {
			return in, NewError(EInvalid, MsgRefundAmount)
		}
		in.AmountCents = v.Value
	}
	// The spec ignores refund_id when the amount is omitted or 0, so it
	// is not even read then.
	if v := r.RefundID; v.Present && in.AmountCents > 0 {
		if v.Bad || v.Value == "" || utf8.RuneCountInString(v.Value) > 255 {
			return in, NewError(EInvalid, MsgRefundID)
		}
		in.RefundID = v.Value
	}
	if v := r.Reason; v.Present {
		if v.Bad || (v.Value != ReasonRefund && v.Value != ReasonChargeback) {
			return in, NewError(EInvalid, MsgRefundReason)
		}
		in.Reason = v.Value
	}
	if v := r.RefundReason; v.Present {
		if v.Bad || utf8.RuneCountInString(v.Value) > 1000 {
			return in, NewError(EInvalid, MsgRefundReasonText)
		}
		if text := strings.TrimSpace(v.Value); text != "" {
			in.Reason = text
		}
	}
	return in, nil
}

// RefundResult is what a refund answers.
type RefundResult struct {
	Status         string // RefundReversed, RefundRefunded, RefundSkipped or RefundNoCommission
	CommissionID   int64
	DeductionMinor int64 // the commission share this refund covers (reversed, refunded)
	Currency       Currency
	SkipReason     string // skipped
	Message        string // no_commission
}

// CommissionState is what a refund needs to know of a commission.
type CommissionState struct {
	Status        string
	OriginalMinor int64
	AmountMinor   int64
	Credited      bool
}

// RefundShare is what a refund does to a commission.
type RefundShare struct {
	Status         string // the commission's next status: reversed or refunded
	AmountMinor    int64  // the commission's next amount
	DeductionMinor int64  // the share this refund covers (deductionAmount)
	Debit          bool   // deduct DeductionMinor from the partner's balance
}

// RefundShareOf applies a refund of applied minor units to a commission on
// a sale of saleAmount of which refundedBefore was already refunded.
//
// Full coverage reverses the commission and its share is everything left.
// A partial refund's share is the refunded fraction of the original
// commission, computed on the cumulative refunded amount so that the
// shares of several partial refunds add up, with one rounding, to the
// share of their sum. A pending commission partly refunded is cancelled
// whole (its share is informational); a credited one is reduced by the
// share, which comes off the partner's balance.
func RefundShareOf(c CommissionState, saleAmount, refundedBefore, applied int64) RefundShare {
	after := refundedBefore + applied
	if after >= saleAmount {
		return RefundShare{Status: CommissionReversed, AmountMinor: 0, DeductionMinor: c.AmountMinor, Debit: c.Credited}
	}
	shareBefore := FractionOf(c.OriginalMinor, refundedBefore, saleAmount)
	shareAfter := FractionOf(c.OriginalMinor, after, saleAmount)
	if !c.Credited {
		return RefundShare{Status: CommissionRefunded, AmountMinor: 0, DeductionMinor: shareAfter - shareBefore}
	}
	next := min(c.AmountMinor, c.OriginalMinor-shareAfter)
	return RefundShare{Status: CommissionRefunded, AmountMinor: next, DeductionMinor: c.AmountMinor - next, Debit: true}
}

// RefundService applies refunds: the refund endpoint and the processor's
// refund events share it.
type RefundService interface {
	// ApplyRefund applies a refund to the sale with in.TransactionID in
	// in.ProgramID, reversing or reducing its commission and deducting from
	// the partner's balance when the commission was credited, in one
	// transaction. Notifications are written to the outbox in that
	// transaction and relayed after commit. Errors: ENotFound.
	ApplyRefund(ctx context.Context, in RefundInput) (*RefundResult, error)
}
