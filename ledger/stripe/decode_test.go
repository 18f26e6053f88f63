package stripe

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v86"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/stripetest"
)

func TestDecodeEvent(t *testing.T) {
	acct := "acct_1SZwOrPBUlX7cw67"
	for _, tc := range []struct {
		desc  string
		event *stripetest.Event
		check func(t *testing.T, e *ledger.PaymentEvent)
	}{
		{"OneTimeCheckout", stripetest.CheckoutCompleted(acct).Set("metadata.svc_click_id", "c1").
			Set("client_reference_id", "ref1"), func(t *testing.T, e *ledger.PaymentEvent) {
			want(t, e.Action, ledger.ActionSale)
			want(t, e.Skip, "")
			want(t, e.SaleType, ledger.SaleTypePayment)
			want(t, e.AmountCents, int64(4900))
			want(t, e.Currency, "usd")
			want(t, e.Email, "jenny.rosen@example.com")
			want(t, e.ClientReferenceID, "ref1")
			want(t, e.Metadata["svc_click_id"], "c1")
			want(t, strings.HasPrefix(e.TransactionID, "cs_test_"), true)
			want(t, strings.HasPrefix(e.PaymentID, "pi_"), true)
			want(t, strings.HasPrefix(e.CustomerID, "cus_"), true)
			want(t, e.OccurredAt, e.Created)
			want(t, e.QualifiesForSettlement(), true)
		}},
		{"GuestCheckoutWithCustomerEmail", stripetest.CheckoutCompleted(acct).Set("customer", nil).
			Set("customer_details", nil).Set("customer_email", "guest@example.com"), func(t *testing.T, e *ledger.PaymentEvent) {
			want(t, e.CustomerID, "")
			want(t, e.Email, "guest@example.com")
		}},
		{"UnpaidCheckoutWaitsForTheAsyncPayment", stripetest.CheckoutCompleted(acct).Set("payment_status", "unpaid"),
			func(t *testing.T, e *ledger.PaymentEvent) {
				want(t, e.Skip, ledger.SkipUnpaidCheckout)
				want(t, e.QualifiesForSettlement(), false)
			}},
		{"AsyncPaymentSucceeded", func() *stripetest.Event {
			ev := stripetest.CheckoutCompleted(acct)
			ev.Type = "checkout.session.async_payment_succeeded"
			return ev
		}(), func(t *testing.T, e *ledger.PaymentEvent) {
			want(t, e.Action, ledger.ActionSale)
			want(t, e.Skip, "")
		}},
		{"FreeCheckout", stripetest.CheckoutCompleted(acct).Set("amount_total", 0).Set("payment_status", "no_payment_required"),
			func(t *testing.T, e *ledger.PaymentEvent) { want(t, e.Skip, ledger.SkipNothingPaid) }},
		{"SetupCheckout", stripetest.CheckoutCompleted(acct).Set("mode", "setup"),
			func(t *testing.T, e *ledger.PaymentEvent) { want(t, e.Skip, ledger.SkipCheckoutMode) }},
		{"SubscriptionCheckoutRecordsNoSale", stripetest.SubscriptionCheckoutCompleted(acct), func(t *testing.T, e *ledger.PaymentEvent) {
			want(t, e.Action, ledger.ActionSubscriptionCheckout)
			want(t, strings.HasPrefix(e.SubscriptionID, "sub_"), true)
			want(t, e.PaymentID, "")
			want(t, e.QualifiesForSettlement(), false)
		}},
		{"InvoiceOfACurrentVersion", stripetest.InvoicePaid("invoice.paid", acct, "in_1", "sub_1", "cus_1").
			Set("status_transitions.paid_at", 1767225603).
			Set("parent.subscription_details.metadata", map[string]any{"svc_click_id": "c1"}), func(t *testing.T, e *ledger.PaymentEvent) {
			want(t, e.Action, ledger.ActionSale)
			want(t, e.Skip, "")
			want(t, e.TransactionID, "in_1")
			want(t, e.SubscriptionID, "sub_1")
			want(t, e.CustomerID, "cus_1")
			want(t, e.Metadata["svc_click_id"], "c1")
			want(t, e.SaleType, ledger.SaleTypeSubscription)
			want(t, e.IsRecurring, false) // subscription_create
			want(t, e.AmountCents, int64(2900))
			want(t, e.PaymentID, "")                              // current invoices name no payment
			want(t, e.OccurredAt, time.Unix(1767225603, 0).UTC()) // status_transitions.paid_at
			want(t, e.QualifiesForSettlement(), true)
		}},
		{"InvoiceWithItsPaymentsIncluded", stripetest.InvoicePaid("invoice.payment_succeeded", acct, "in_1", "sub_1", "cus_1").
			Set("billing_reason", "subscription_cycle").
			Set("payments", map[string]any{"object": "list", "has_more": false, "url": "/v1/invoice_payments", "data": []any{
				map[string]any{"id": "inpay_1", "object": "invoice_payment", "status": "open",
					"payment": map[string]any{"type": "payment_intent", "payment_intent": "pi_failed"}},
				map[string]any{"id": "inpay_2", "object": "invoice_payment", "status": "paid",
					"payment": map[string]any{"type": "payment_intent", "payment_intent": "pi_paid"}},
			}}), func(t *testing.T, e *ledger.PaymentEvent) {
			want(t, e.PaymentID, "pi_paid")
			want(t, e.IsRecurring, true)
		}},
		{"InvoiceOfAnOlderVersion", stripetest.LegacyInvoicePaid(acct, "in_2", "sub_2", "cus_2").
			Set("subscription_details.metadata", map[string]any{"svc_customer_key": "user-2"}), func(t *testing.T, e *ledger.PaymentEvent) {
			want(t, e.Skip, "")
			want(t, e.SubscriptionID, "sub_2")
			want(t, e.Metadata["svc_customer_key"], "user-2")
			want(t, e.Currency, "eur")
			want(t, e.AmountCents, int64(5000))
			want(t, e.IsRecurring, true) // subscription_cycle
			want(t, strings.HasPrefix(e.PaymentID, "pi_"), true)
		}},
		{"InvoiceOfAnOlderVersionPaidByACharge", stripetest.LegacyInvoicePaid(acct, "in_3", "sub_3", "cus_3").
			Set("payment_intent", nil), func(t *testing.T, e *ledger.PaymentEvent) {
			want(t, strings.HasPrefix(e.PaymentID, "ch_"), true)
		}},
		{"InvoiceOfNoSubscription", stripetest.InvoicePaid("invoice.paid", acct, "in_4", "sub_4", "cus_4").Set("parent", nil),
			func(t *testing.T, e *ledger.PaymentEvent) { want(t, e.Skip, ledger.SkipNotSubscription) }},
		{"TrialInvoice", stripetest.InvoicePaid("invoice.paid", acct, "in_5", "sub_5", "cus_5").Set("amount_paid", 0),
			func(t *testing.T, e *ledger.PaymentEvent) {
				want(t, e.Skip, ledger.SkipNothingPaid)
				want(t, e.QualifiesForSettlement(), false)
			}},
		{"InvoicePayment", stripetest.InvoicePaymentPaid(acct, "in_6", "pi_6"), func(t *testing.T, e *ledger.PaymentEvent) {
			want(t, e.Action, ledger.ActionInvoicePayment)
			want(t, e.Skip, "")
			want(t, e.TransactionID, "in_6")
			want(t, e.PaymentID, "pi_6")
		}},
		{"ChargeRefundedOfACurrentVersion", stripetest.ChargeRefunded(acct, "pi_7", 4900, 1000), func(t *testing.T, e *ledger.PaymentEvent) {
			want(t, e.Action, ledger.ActionRefund)
			want(t, e.PaymentID, "pi_7")
			want(t, e.AmountRefunded, int64(1000))
			want(t, len(e.Refunds), 0)
		}},
		{"ChargeRefundedListingItsRefunds", stripetest.LegacyChargeRefunded(acct, "pi_8", 1750,
			stripetest.LegacyRefund{ID: "re_old", Amount: 500, Created: time.Unix(1000, 0)},
			stripetest.LegacyRefund{ID: "re_new", Amount: 250, Created: time.Unix(2000, 0)}), func(t *testing.T, e *ledger.PaymentEvent) {
			want(t, e.AmountRefunded, int64(750))
			want(t, len(e.Refunds), 2)
			want(t, e.Refunds[0].ID, "re_old") // oldest first
			want(t, e.Refunds[1].Reason, "requested_by_customer")
		}},
		{"UnhandledType", stripetest.NewEvent("customer.created", acct, map[string]any{"id": "cus_1", "object": "customer"}),
			func(t *testing.T, e *ledger.PaymentEvent) {
				want(t, e.Action, ledger.ActionNone)
				want(t, e.Skip, ledger.SkipUnhandledType)
			}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			e, err := DecodeEvent(tc.event.Payload())
			if err != nil {
				t.Fatal(err)
			}
			want(t, e.EventID, tc.event.ID)
			want(t, e.Type, tc.event.Type)
			tc.check(t, e)
		})
	}
}

func TestDecodeEventRefusesUndecodable(t *testing.T) {
	for _, tc := range []struct {
		desc    string
		payload []byte
	}{
		{"NotJSON", []byte("not json")},
		{"NoID", []byte(`{"object": "event", "type": "invoice.paid", "data": {"object": {}}}`)},
		{"NoObject", []byte(`{"id": "evt_1", "object": "event", "type": "invoice.paid", "data": {}}`)},
		{"ObjectOfTheWrongShape", stripetest.CheckoutCompleted("acct_1").Set("amount_total", "lots").Payload()},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := DecodeEvent(tc.payload)
			if ledger.ErrorCode(err) != ledger.EInvalid {
				t.Fatalf("err = %v, want an %s error", err, ledger.EInvalid)
			}
		})
	}
}

// TestAmountAboveTheCeiling: a Stripe payment above the ceiling
// is skipped with its reason instead of being recorded as a sale.
func TestAmountAboveTheCeiling(t *testing.T) {
	acct := "acct_1SZwOrPBUlX7cw67"
	for _, tc := range []struct {
		desc  string
		event *stripetest.Event
		skip  string
	}{
		{"CheckoutAtTheCeiling", stripetest.CheckoutCompleted(acct).Set("amount_total", ledger.MaxAmountCents), ""},
		{"CheckoutAbove", stripetest.CheckoutCompleted(acct).Set("amount_total", ledger.MaxAmountCents+1), ledger.SkipAboveCeiling},
		{"InvoiceAbove", stripetest.InvoicePaid("invoice.paid", acct, "in_1", "sub_1", "cus_1").
			Set("amount_paid", int64(math.MaxInt64)), ledger.SkipAboveCeiling},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			e, err := DecodeEvent(tc.event.Payload())
			if err != nil || e.Skip != tc.skip {
				t.Fatalf("skip = %q, %v; want %q", e.Skip, err, tc.skip)
			}
		})
	}
}

// TestEventTypesMatchTheSDK: the event types ledger spells out are
// stripe-go's own.
func TestEventTypesMatchTheSDK(t *testing.T) {
	for _, tc := range []struct {
		ours string
		sdk  stripe.EventType
	}{
		{ledger.StripeCheckoutCompleted, stripe.EventTypeCheckoutSessionCompleted},
		{ledger.StripeCheckoutAsyncPaid, stripe.EventTypeCheckoutSessionAsyncPaymentSucceeded},
		{ledger.StripeInvoicePaid, stripe.EventTypeInvoicePaid},
		{ledger.StripeInvoicePaymentOK, stripe.EventTypeInvoicePaymentSucceeded},
		{ledger.StripeInvoicePaymentPaid, stripe.EventTypeInvoicePaymentPaid},
		{ledger.StripeChargeRefunded, stripe.EventTypeChargeRefunded},
	} {
		if tc.ours != string(tc.sdk) {
			t.Errorf("ledger has %q, stripe-go %q", tc.ours, tc.sdk)
		}
	}
}

func want[T comparable](t *testing.T, got, wanted T) {
	t.Helper()
	if got != wanted {
		t.Fatalf("got %v, want %v", got, wanted)
	}
}
