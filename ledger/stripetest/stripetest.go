// Package stripetest builds realistic Stripe events for tests and signs
// them the way Stripe does. The objects in testdata have the JSON shape of
// Stripe's API: checkout sessions, invoices and charges of a current API
// version, and an invoice and a charge of older versions (the invoice's
// subscription, subscription_details, payment_intent and charge at the top
// level; the charge's refunds listed on it).
//
// A test takes an event, changes the fields it cares about by dotted path
// and signs the payload:
//
//	ev := stripetest.CheckoutCompleted("acct_123").
//		Set("metadata.svc_click_id", clickID).
//		Set("amount_total", 4900)
//	payload := ev.Payload()
//	header := stripetest.Sign(payload, secret, time.Now())
package stripetest

import (
	"crypto/rand"
	"embed"
	"encoding/json"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v86"
	"github.com/stripe/stripe-go/v86/webhook"
)

//go:embed testdata/*.json
var fixtures embed.FS

// APIVersion is the API version events carry unless a test sets another:
// the version of the library's own objects.
const APIVersion = stripe.APIVersion

// LegacyAPIVersion is the version of the older fixtures.
const LegacyAPIVersion = "2024-06-20"

// Event is a Stripe event whose object a test may change before signing.
type Event struct {
	ID         string
	Type       string
	Account    string // the connected account ("" for an event of the account itself)
	APIVersion string
	Created    time.Time
	Livemode   bool
	Object     map[string]any
}

// Object returns a fresh copy of the object of a fixture (its file name
// without .json).
func Object(name string) map[string]any {
	raw, err := fixtures.ReadFile("testdata/" + name + ".json")
	if err != nil {
		panic("stripetest: " + err.Error())
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		panic("stripetest: " + name + ": " + err.Error())
	}
	return obj
}

// NewEvent wraps an object in an event of the given type from account.
func NewEvent(eventType, account string, object map[string]any) *Event {
	return &Event{ID: NewID("evt_"), Type: eventType, Account: account, APIVersion: APIVersion,
		Created: time.Now().UTC().Truncate(time.Second), Object: object}
}

// Set sets a field of the object by dotted path ("metadata.svc_click_id",
// "parent.subscription_details.metadata"), creating objects on the way.
// A nil value writes JSON null.
func (e *Event) Set(path string, v any) *Event {
	keys := strings.Split(path, ".")
	m := e.Object
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[keys[len(keys)-1]] = v
	return e
}

// Get returns a field of the object by dotted path (nil when absent).
func (e *Event) Get(path string) any {
	var v any = e.Object
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// Delete removes a field of the object by dotted path.
func (e *Event) Delete(path string) *Event {
	keys := strings.Split(path, ".")
	parent, _ := e.Get(strings.Join(keys[:len(keys)-1], ".")).(map[string]any)
	if len(keys) == 1 {
		parent = e.Object
	}
	delete(parent, keys[len(keys)-1])
	return e
}

// Payload is the event as Stripe sends it.
func (e *Event) Payload() []byte {
	ev := map[string]any{
		"id":               e.ID,
		"object":           "event",
		"api_version":      e.APIVersion,
		"created":          e.Created.Unix(),
		"data":             map[string]any{"object": e.Object},
		"livemode":         e.Livemode,
		"pending_webhooks": 1,
		"request": map[string]any{
			"id":              NewID("req_"),
			"idempotency_key": "5a9e1ed6-9a63-4b3f-9e3b-6f1a0c7d2b11",
		},
		"type": e.Type,
	}
	if e.Account != "" {
		ev["account"] = e.Account
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		panic("stripetest: " + err.Error())
	}
	return raw
}

// Sign returns the Stripe-Signature header of payload signed with secret
// at the given time.
func Sign(payload []byte, secret string, at time.Time) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{
		Payload: payload, Secret: secret, Timestamp: at}).Header
}

const idAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// NewID returns a Stripe-looking id with the prefix ("cs_test_", "in_").
func NewID(prefix string) string {
	b := make([]byte, 24)
	rand.Read(b)
	for i := range b {
		b[i] = idAlphabet[int(b[i])%len(idAlphabet)]
	}
	return prefix + string(b)
}

// CheckoutCompleted is a checkout.session.completed event of a paid
// one-time payment (4900 usd cents by a new processor customer), with
// fresh ids.
func CheckoutCompleted(account string) *Event {
	return NewEvent("checkout.session.completed", account, Object("checkout_session_payment")).
		Set("id", NewID("cs_test_")).
		Set("payment_intent", NewID("pi_")).
		Set("customer", NewID("cus_"))
}

// SubscriptionCheckoutCompleted is a checkout.session.completed event of a
// subscription (2900 usd cents a month), with fresh ids for the session,
// the subscription, its first invoice and the customer.
func SubscriptionCheckoutCompleted(account string) *Event {
	return NewEvent("checkout.session.completed", account, Object("checkout_session_subscription")).
		Set("id", NewID("cs_test_")).
		Set("subscription", NewID("sub_")).
		Set("invoice", NewID("in_")).
		Set("customer", NewID("cus_"))
}

// InvoicePaid is an invoice.paid (or invoice.payment_succeeded) event of a
// current API version: the subscription and its metadata under
// parent.subscription_details, no payment on the invoice.
func InvoicePaid(eventType, account, invoiceID, subscriptionID, customerID string) *Event {
	ev := NewEvent(eventType, account, Object("invoice")).
		Set("id", invoiceID).
		Set("customer", customerID).
		Set("parent.subscription_details.subscription", subscriptionID)
	ev.Set("status_transitions.paid_at", ev.Created.Unix())
	ev.Object["lines"].(map[string]any)["data"].([]any)[0].(map[string]any)["invoice"] = invoiceID
	return ev
}

// LegacyInvoicePaid is an invoice.paid event of API version 2024-06-20: a
// renewal of 5000 eur cents with subscription, subscription_details,
// payment_intent and charge at the top level.
func LegacyInvoicePaid(account, invoiceID, subscriptionID, customerID string) *Event {
	ev := NewEvent("invoice.paid", account, Object("invoice_legacy")).
		Set("id", invoiceID).
		Set("customer", customerID).
		Set("subscription", subscriptionID).
		Set("payment_intent", NewID("pi_")).
		Set("charge", NewID("ch_"))
	ev.Set("status_transitions.paid_at", ev.Created.Unix())
	ev.APIVersion = LegacyAPIVersion
	return ev
}

// InvoicePaymentPaid is an invoice_payment.paid event: paymentIntentID
// paid invoiceID.
func InvoicePaymentPaid(account, invoiceID, paymentIntentID string) *Event {
	return NewEvent("invoice_payment.paid", account, Object("invoice_payment")).
		Set("id", NewID("inpay_")).
		Set("invoice", invoiceID).
		Set("payment.payment_intent", paymentIntentID)
}

// ChargeRefunded is a charge.refunded event of a current API version: the
// charge of paymentIntentID with amountRefunded refunded so far (refunds
// are not listed on the charge).
func ChargeRefunded(account, paymentIntentID string, amount, amountRefunded int64) *Event {
	return NewEvent("charge.refunded", account, Object("charge")).
		Set("id", NewID("ch_")).
		Set("payment_intent", paymentIntentID).
		Set("amount", amount).
		Set("amount_captured", amount).
		Set("amount_refunded", amountRefunded).
		Set("refunded", amountRefunded >= amount)
}

// LegacyRefund is one refund listed on a charge of an older API version.
type LegacyRefund struct {
	ID      string
	Amount  int64
	Created time.Time
}

// LegacyChargeRefunded is a charge.refunded event of API version
// 2020-08-27, whose charge lists its refunds.
func LegacyChargeRefunded(account, paymentIntentID string, amount int64, refunds ...LegacyRefund) *Event {
	ev := NewEvent("charge.refunded", account, Object("charge_legacy"))
	ev.APIVersion = "2020-08-27"
	chargeID := NewID("ch_")
	template := ev.Object["refunds"].(map[string]any)["data"].([]any)[0].(map[string]any)
	var list []any
	var total int64
	for i := len(refunds) - 1; i >= 0; i-- { // newest first, as Stripe lists them
		r := map[string]any{}
		for k, v := range template {
			r[k] = v
		}
		r["id"], r["amount"], r["created"] = refunds[i].ID, refunds[i].Amount, refunds[i].Created.Unix()
		r["charge"], r["payment_intent"] = chargeID, paymentIntentID
		list = append(list, r)
		total += refunds[i].Amount
	}
	return ev.Set("id", chargeID).
		Set("payment_intent", paymentIntentID).
		Set("amount", amount).
		Set("amount_captured", amount).
		Set("amount_refunded", total).
		Set("refunded", total >= amount).
		Set("refunds.data", list).
		Set("refunds.total_count", len(list)).
		Set("refunds.url", "/v1/charges/"+chargeID+"/refunds")
}
