package ledger

import (
	"strconv"
	"strings"
)

// RefundStep is one refund a refund event applies: an amount with the id
// that makes it idempotent.
type RefundStep struct {
	RefundID    string
	AmountCents int64
	Reason      string
}

// PlanProcessorRefunds works out the refunds a refund event applies, given
// how much processor refunds already applied to the sale. Each listed
// refund is applied under its own id, at most up to the charge's
// cumulative amount_refunded; what the list does not explain (current API
// versions list no refunds) is applied as one refund whose id names the
// charge and the cumulative amount, so a redelivered or older event
// applies nothing twice, whatever order events arrive in.
func PlanProcessorRefunds(e *PaymentEvent, alreadyApplied int64, known func(refundID string) bool) []RefundStep {
	left := e.AmountRefunded - alreadyApplied
	var steps []RefundStep
	for _, r := range e.Refunds {
		if left <= 0 {
			break
		}
		if known(r.ID) {
			continue
		}
		amount := min(r.AmountCents, left)
		steps = append(steps, RefundStep{RefundID: r.ID, AmountCents: amount, Reason: refundReason(r.Reason)})
		left -= amount
	}
	if left > 0 {
		steps = append(steps, RefundStep{RefundID: CumulativeRefundID(e.ChargeID, e.AmountRefunded),
			AmountCents: left, Reason: ReasonRefund})
	}
	return steps
}

// CumulativeRefundID is the refund id of the part of a charge's refunds
// that no listed refund explains.
func CumulativeRefundID(chargeID string, amountRefunded int64) string {
	return chargeID + ":refunded:" + strconv.FormatInt(amountRefunded, 10)
}

func refundReason(r string) string {
	if r = strings.TrimSpace(r); r != "" {
		return r
	}
	return ReasonRefund
}
