package ledger

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v86"
)

// Stripe event types the service acts on. Any other type is stored and
// skipped.
const (
	StripeCheckoutCompleted    = string(stripe.EventTypeCheckoutSessionCompleted)
	StripeCheckoutAsyncPaid    = string(stripe.EventTypeCheckoutSessionAsyncPaymentSucceeded)
	StripeInvoicePaid          = string(stripe.EventTypeInvoicePaid)
	StripeInvoicePaymentOK     = string(stripe.EventTypeInvoicePaymentSucceeded)
	StripeInvoicePaymentPaid   = string(stripe.EventTypeInvoicePaymentPaid)
	StripeChargeRefunded       = string(stripe.EventTypeChargeRefunded)
	stripeSubscriptionCreation = "subscription_create"
)

// Why a Stripe event of a handled type asks for nothing.
const (
	SkipUnhandledType      = "event type not handled"
	SkipUnpaidCheckout     = "checkout not paid yet: the sale is recorded from checkout.session.async_payment_succeeded"
	SkipCheckoutMode       = "checkout in setup mode: no payment"
	SkipNothingPaid        = "nothing was paid"
	SkipNotSubscription    = "invoice of no subscription: one-time payments are recorded from checkout.session.completed"
	SkipInvoicePaymentOpen = "invoice payment not paid"
	SkipNoRefund           = "charge has no refunded amount"
	SkipAboveCeiling       = "amount above the ceiling of 1000000000000 minor units: not recorded"
)

// DecodeStripeEvent reads a Stripe event exactly as it was signed and works
// out what it means. Connected accounts send events in their own API
// versions: invoices of current versions carry their subscription under
// parent.subscription_details and their payments under payments.data[],
// older ones carry subscription, subscription_details, payment_intent and
// charge at the top level; both are read. Errors: EInvalid when the event
// or its object cannot be decoded.
func DecodeStripeEvent(payload []byte) (*PaymentEvent, error) {
	var ev stripe.Event
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, Errorf(EInvalid, "undecodable Stripe event: %v", err)
	}
	if ev.ID == "" || ev.Type == "" || ev.Data == nil || len(ev.Data.Raw) == 0 {
		return nil, NewError(EInvalid, "undecodable Stripe event: id, type or data.object missing")
	}
	e := &PaymentEvent{EventID: ev.ID, Type: string(ev.Type), Created: unixTime(ev.Created), Livemode: ev.Livemode}
	var err error
	switch e.Type {
	case StripeCheckoutCompleted, StripeCheckoutAsyncPaid:
		err = e.decodeCheckout(ev.Data.Raw)
	case StripeInvoicePaid, StripeInvoicePaymentOK:
		err = e.decodeInvoice(ev.Data.Raw)
	case StripeInvoicePaymentPaid:
		err = e.decodeInvoicePayment(ev.Data.Raw)
	case StripeChargeRefunded:
		err = e.decodeCharge(ev.Data.Raw)
	default:
		e.Skip = SkipUnhandledType
	}
	if err != nil {
		return nil, Errorf(EInvalid, "undecodable %s object: %v", e.Type, err)
	}
	// The sale endpoint refuses such an amount; a processor event cannot be
	// refused, so it is skipped with the reason in its outcome.
	if e.Action == ActionSale && e.Skip == "" && e.AmountCents > MaxAmountCents {
		e.Skip = SkipAboveCeiling
	}
	return e, nil
}

func unixTime(s int64) time.Time {
	if s <= 0 {
		return time.Time{}
	}
	return time.Unix(s, 0).UTC()
}

func (e *PaymentEvent) decodeCheckout(raw json.RawMessage) error {
	var s stripe.CheckoutSession
	if err := json.Unmarshal(raw, &s); err != nil {
		return err
	}
	e.TransactionID = s.ID
	e.AmountCents = s.AmountTotal
	e.Currency = string(s.Currency)
	e.OccurredAt = e.Created
	e.ClientReferenceID = s.ClientReferenceID
	e.Metadata = s.Metadata
	e.Email = s.CustomerEmail
	if s.CustomerDetails != nil && s.CustomerDetails.Email != "" {
		e.Email = s.CustomerDetails.Email
	}
	if s.Customer != nil {
		e.CustomerID = s.Customer.ID
	}
	if s.PaymentIntent != nil {
		e.PaymentID = s.PaymentIntent.ID
	}
	switch s.Mode {
	case stripe.CheckoutSessionModeSubscription:
		e.Action = ActionSubscriptionCheckout
		if s.Subscription != nil {
			e.SubscriptionID = s.Subscription.ID
		}
	case stripe.CheckoutSessionModePayment:
		e.Action, e.SaleType = ActionSale, SaleTypePayment
		switch {
		case s.PaymentStatus == stripe.CheckoutSessionPaymentStatusNoPaymentRequired || s.AmountTotal <= 0:
			e.Skip = SkipNothingPaid
		case s.PaymentStatus != stripe.CheckoutSessionPaymentStatusPaid:
			e.Skip = SkipUnpaidCheckout
		}
	default:
		e.Skip = SkipCheckoutMode
	}
	return nil
}

// legacyInvoice holds the fields of invoices of API versions before
// 2025-03-31 (basil) that current versions moved or removed.
type legacyInvoice struct {
	Subscription        *stripe.Subscription `json:"subscription"`
	SubscriptionDetails *struct {
		Metadata map[string]string `json:"metadata"`
	} `json:"subscription_details"`
	PaymentIntent *stripe.PaymentIntent `json:"payment_intent"`
	Charge        *stripe.Charge        `json:"charge"`
}

func (e *PaymentEvent) decodeInvoice(raw json.RawMessage) error {
	var in stripe.Invoice
	if err := json.Unmarshal(raw, &in); err != nil {
		return err
	}
	var old legacyInvoice
	if err := json.Unmarshal(raw, &old); err != nil {
		return err
	}
	e.Action, e.SaleType = ActionSale, SaleTypeSubscription
	e.TransactionID = in.ID
	e.AmountCents = in.AmountPaid
	e.Currency = string(in.Currency)
	e.Email = in.CustomerEmail
	if in.Customer != nil {
		e.CustomerID = in.Customer.ID
	}
	e.OccurredAt = e.Created
	if in.StatusTransitions != nil && in.StatusTransitions.PaidAt > 0 {
		e.OccurredAt = unixTime(in.StatusTransitions.PaidAt)
	}
	if p := in.Parent; p != nil && p.SubscriptionDetails != nil {
		if p.SubscriptionDetails.Subscription != nil {
			e.SubscriptionID = p.SubscriptionDetails.Subscription.ID
		}
		e.Metadata = p.SubscriptionDetails.Metadata
	}
	if e.SubscriptionID == "" && old.Subscription != nil {
		e.SubscriptionID = old.Subscription.ID
	}
	if len(e.Metadata) == 0 && old.SubscriptionDetails != nil {
		e.Metadata = old.SubscriptionDetails.Metadata
	}
	if in.Payments != nil {
		for _, p := range in.Payments.Data {
			if id := invoicePaymentID(p); id != "" && (p.Status == "" || p.Status == "paid") {
				e.PaymentID = id
				break
			}
		}
	}
	if e.PaymentID == "" && old.PaymentIntent != nil {
		e.PaymentID = old.PaymentIntent.ID
	}
	if e.PaymentID == "" && old.Charge != nil {
		e.PaymentID = old.Charge.ID
	}
	// The first payment of a subscription is not a recurring one; every
	// later invoice (renewals, updates) is.
	e.IsRecurring = in.BillingReason != stripeSubscriptionCreation
	switch {
	case e.SubscriptionID == "":
		e.Skip = SkipNotSubscription
	case in.AmountPaid <= 0:
		e.Skip = SkipNothingPaid
	}
	return nil
}

func invoicePaymentID(p *stripe.InvoicePayment) string {
	if p == nil || p.Payment == nil {
		return ""
	}
	if p.Payment.PaymentIntent != nil && p.Payment.PaymentIntent.ID != "" {
		return p.Payment.PaymentIntent.ID
	}
	if p.Payment.Charge != nil {
		return p.Payment.Charge.ID
	}
	return ""
}

func (e *PaymentEvent) decodeInvoicePayment(raw json.RawMessage) error {
	var p stripe.InvoicePayment
	if err := json.Unmarshal(raw, &p); err != nil {
		return err
	}
	e.Action = ActionInvoicePayment
	if p.Invoice != nil {
		e.TransactionID = p.Invoice.ID
	}
	e.PaymentID = invoicePaymentID(&p)
	if p.Status != "paid" || e.TransactionID == "" || e.PaymentID == "" {
		e.Skip = SkipInvoicePaymentOpen
	}
	return nil
}

func (e *PaymentEvent) decodeCharge(raw json.RawMessage) error {
	var c stripe.Charge
	if err := json.Unmarshal(raw, &c); err != nil {
		return err
	}
	e.Action = ActionRefund
	e.ChargeID = c.ID
	e.Currency = string(c.Currency)
	e.AmountCents = c.Amount
	e.AmountRefunded = c.AmountRefunded
	if c.PaymentIntent != nil {
		e.PaymentID = c.PaymentIntent.ID
	}
	if c.Customer != nil {
		e.CustomerID = c.Customer.ID
	}
	// Refunds are listed on the charge in API versions before 2022-11-15
	// (and when an endpoint expands them); current versions give only the
	// cumulative amount_refunded.
	if c.Refunds != nil {
		for _, r := range c.Refunds.Data {
			if r == nil || r.ID == "" || r.Amount <= 0 ||
				r.Status == stripe.RefundStatusFailed || r.Status == stripe.RefundStatusCanceled {
				continue
			}
			e.Refunds = append(e.Refunds, ProcessorRefund{ID: r.ID, AmountCents: r.Amount,
				Currency: string(r.Currency), Reason: string(r.Reason), Created: unixTime(r.Created)})
		}
		// Stripe lists the newest first; apply the oldest first.
		sort.SliceStable(e.Refunds, func(i, j int) bool { return e.Refunds[i].Created.Before(e.Refunds[j].Created) })
	}
	if c.AmountRefunded <= 0 {
		e.Skip = SkipNoRefund
	}
	return nil
}

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
