// Package stripe is the ledger's Stripe adapter: it reads a Stripe event
// with stripe-go's typed objects, of current and older API versions, and
// says what it means for the ledger (a ledger.PaymentEvent), so that
// package ledger does not import the Stripe SDK. Inside this package the
// name stripe is the SDK.
package stripe

import (
	"encoding/json"
	"sort"
	"time"

	"github.com/stripe/stripe-go/v86"

	"github.com/partnertrack/partnertrack/ledger"
)

// subscriptionCreation is the billing_reason of a subscription's first
// invoice.
const subscriptionCreation = "subscription_create"

// DecodeEvent reads a Stripe event exactly as it was signed and works
// out what it means. Connected accounts send events in their own API
// versions: invoices of current versions carry their subscription under
// parent.subscription_details and their payments under payments.data[],
// older ones carry subscription, subscription_details, payment_intent and
// charge at the top level; both are read. Errors: ledger.EInvalid when
// the event or its object cannot be decoded.
func DecodeEvent(payload []byte) (*ledger.PaymentEvent, error) {
	var ev stripe.Event
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, ledger.Errorf(ledger.EInvalid, "undecodable Stripe event: %v", err)
	}
	if ev.ID == "" || ev.Type == "" || ev.Data == nil || len(ev.Data.Raw) == 0 {
		return nil, ledger.NewError(ledger.EInvalid, "undecodable Stripe event: id, type or data.object missing")
	}
	e := &ledger.PaymentEvent{EventID: ev.ID, Type: string(ev.Type), Created: unixTime(ev.Created), Livemode: ev.Livemode}
	var err error
	switch e.Type {
	case ledger.StripeCheckoutCompleted, ledger.StripeCheckoutAsyncPaid:
		err = decodeCheckout(e, ev.Data.Raw)
	case ledger.StripeInvoicePaid, ledger.StripeInvoicePaymentOK:
		err = decodeInvoice(e, ev.Data.Raw)
	case ledger.StripeInvoicePaymentPaid:
		err = decodeInvoicePayment(e, ev.Data.Raw)
	case ledger.StripeChargeRefunded:
		err = decodeCharge(e, ev.Data.Raw)
	default:
		e.Skip = ledger.SkipUnhandledType
	}
	if err != nil {
		return nil, ledger.Errorf(ledger.EInvalid, "undecodable %s object: %v", e.Type, err)
	}
	// The sale endpoint refuses such an amount; a processor event cannot be
	// refused, so it is skipped with the reason in its outcome.
	if e.Action == ledger.ActionSale && e.Skip == "" && e.AmountCents > ledger.MaxAmountCents {
		e.Skip = ledger.SkipAboveCeiling
	}
	return e, nil
}

func unixTime(s int64) time.Time {
	if s <= 0 {
		return time.Time{}
	}
	return time.Unix(s, 0).UTC()
}

func decodeCheckout(e *ledger.PaymentEvent, raw json.RawMessage) error {
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
		e.Action = ledger.ActionSubscriptionCheckout
		if s.Subscription != nil {
			e.SubscriptionID = s.Subscription.ID
		}
	case stripe.CheckoutSessionModePayment:
		e.Action, e.SaleType = ledger.ActionSale, ledger.SaleTypePayment
		switch {
		case s.PaymentStatus == stripe.CheckoutSessionPaymentStatusNoPaymentRequired || s.AmountTotal <= 0:
			e.Skip = ledger.SkipNothingPaid
		case s.PaymentStatus != stripe.CheckoutSessionPaymentStatusPaid:
			e.Skip = ledger.SkipUnpaidCheckout
		}
	default:
		e.Skip = ledger.SkipCheckoutMode
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

func decodeInvoice(e *ledger.PaymentEvent, raw json.RawMessage) error {
	var in stripe.Invoice
	if err := json.Unmarshal(raw, &in); err != nil {
		return err
	}
	var old legacyInvoice
	if err := json.Unmarshal(raw, &old); err != nil {
		return err
	}
	e.Action, e.SaleType = ledger.ActionSale, ledger.SaleTypeSubscription
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
	e.IsRecurring = in.BillingReason != subscriptionCreation
	switch {
	case e.SubscriptionID == "":
		e.Skip = ledger.SkipNotSubscription
	case in.AmountPaid <= 0:
		e.Skip = ledger.SkipNothingPaid
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

func decodeInvoicePayment(e *ledger.PaymentEvent, raw json.RawMessage) error {
	var p stripe.InvoicePayment
	if err := json.Unmarshal(raw, &p); err != nil {
		return err
	}
	e.Action = ledger.ActionInvoicePayment
	if p.Invoice != nil {
		e.TransactionID = p.Invoice.ID
	}
	e.PaymentID = invoicePaymentID(&p)
	if p.Status != "paid" || e.TransactionID == "" || e.PaymentID == "" {
		e.Skip = ledger.SkipInvoicePaymentOpen
	}
	return nil
}

func decodeCharge(e *ledger.PaymentEvent, raw json.RawMessage) error {
	var c stripe.Charge
	if err := json.Unmarshal(raw, &c); err != nil {
		return err
	}
	e.Action = ledger.ActionRefund
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
			e.Refunds = append(e.Refunds, ledger.ProcessorRefund{ID: r.ID, AmountCents: r.Amount,
				Currency: string(r.Currency), Reason: string(r.Reason), Created: unixTime(r.Created)})
		}
		// Stripe lists the newest first; apply the oldest first.
		sort.SliceStable(e.Refunds, func(i, j int) bool { return e.Refunds[i].Created.Before(e.Refunds[j].Created) })
	}
	if c.AmountRefunded <= 0 {
		e.Skip = ledger.SkipNoRefund
	}
	return nil
}
