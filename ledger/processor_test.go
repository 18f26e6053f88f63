package ledger

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger/stripetest"
)

func TestMetadataHints(t *testing.T) {
	click := NewClickID(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	for _, tc := range []struct {
		desc   string
		prefix string
		meta   map[string]string
		want   Hints
	}{
		{"DefaultPrefix", "", map[string]string{"svc_click_id": click, "svc_customer_key": "user-1", "program_id": "7"},
			Hints{ClickID: click, CustomerKey: "user-1", ProgramID: "7"}},
		{"BrandPrefix", "acme", map[string]string{"acme_click_id": click, "acme_customer_key": "user-1", "svc_click_id": "other"},
			Hints{ClickID: click, CustomerKey: "user-1"}},
		{"TrimmedValues", "svc", map[string]string{"svc_click_id": " " + click + " ", "svc_customer_key": " user-1 "},
			Hints{ClickID: click, CustomerKey: "user-1"}},
		{"LegacyCustomerCodeIsAClick", "svc", map[string]string{"customer_code": "anything-the-tracker-wrote", "customer_key": "user-9"},
			Hints{ClickID: "anything-the-tracker-wrote", CustomerKey: "user-9"}},
		{"PrefixedKeysWinOverLegacy", "svc", map[string]string{"svc_click_id": click, "customer_code": "old", "svc_customer_key": "k", "customer_key": "old"},
			Hints{ClickID: click, CustomerKey: "k"}},
		{"PartnerCodeHoldingOurClickID", "svc", map[string]string{"partner_code": click}, Hints{ClickID: click}},
		{"PartnerCodeHoldingAReferralCodeIsIgnored", "svc", map[string]string{"partner_code": "pat"}, Hints{}},
		{"CustomerKeyWithControlCharactersIsIgnored", "svc", map[string]string{"svc_customer_key": "a\x00b"}, Hints{}},
		{"NoMetadata", "svc", nil, Hints{}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := NewMetadataKeys(tc.prefix).Hints(tc.meta); got != tc.want {
				t.Fatalf("Hints = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestHintsOtherProgram(t *testing.T) {
	for _, tc := range []struct {
		desc  string
		value string
		want  bool
	}{
		{"Absent", "", false},
		{"Same", "7", false},
		{"Other", "8", true},
		{"Placeholder", "YOUR_PROGRAM_ID", false},
		{"Negative", "-8", false},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := (Hints{ProgramID: tc.value}).OtherProgram(7); got != tc.want {
				t.Fatalf("OtherProgram(%q) = %v, want %v", tc.value, got, tc.want)
			}
		})
	}
}

func TestAttributionPlan(t *testing.T) {
	click := NewClickID(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	ref := NewClickID(time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC))
	keys := NewMetadataKeys("svc")
	step := func(kind, value string) AttributionStep { return AttributionStep{kind, value} }
	for _, tc := range []struct {
		desc string
		ev   PaymentEvent
		want []AttributionStep
	}{
		{"EverythingInTheSpecOrderClientReferenceLeftOut",
			PaymentEvent{Metadata: map[string]string{"svc_click_id": click, "svc_customer_key": "user-1"},
				Email: "Buyer@Example.com", CustomerID: "cus_1", ClientReferenceID: ref},
			[]AttributionStep{step(StepClickID, click), step(StepEmail, "buyer@example.com"),
				step(StepProcessorCustomer, "cus_1"), step(StepCustomerKey, "user-1")}},
		{"ClientReferenceWhenTheMetadataNamesNoClick",
			PaymentEvent{Metadata: map[string]string{"svc_customer_key": "user-1"}, CustomerID: "cus_1", ClientReferenceID: ref},
			[]AttributionStep{step(StepProcessorCustomer, "cus_1"), step(StepClientReference, ref), step(StepCustomerKey, "user-1")}},
		{"AClientReferenceThatCannotBeAClickIsLeftOut",
			PaymentEvent{ClientReferenceID: "user@example.com"}, nil},
		{"ABrandUserIDInClientReferenceIsTried",
			PaymentEvent{ClientReferenceID: "user_42"}, []AttributionStep{step(StepClientReference, "user_42")}},
		{"AnEmailThatIsNoAddressIsLeftOut",
			PaymentEvent{Email: "not an address", CustomerID: "cus_1"}, []AttributionStep{step(StepProcessorCustomer, "cus_1")}},
		{"Nothing", PaymentEvent{}, nil},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := AttributionPlan(&tc.ev, keys); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("plan = %+v\nwant   %+v", got, tc.want)
			}
		})
	}
}

func TestDecodeStripeEvent(t *testing.T) {
	acct := "acct_1SZwOrPBUlX7cw67"
	for _, tc := range []struct {
		desc  string
		event *stripetest.Event
		check func(t *testing.T, e *PaymentEvent)
	}{
		{"OneTimeCheckout", stripetest.CheckoutCompleted(acct).Set("metadata.svc_click_id", "c1").
			Set("client_reference_id", "ref1"), func(t *testing.T, e *PaymentEvent) {
			want(t, e.Action, ActionSale)
			want(t, e.Skip, "")
			want(t, e.SaleType, SaleTypePayment)
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
			Set("customer_details", nil).Set("customer_email", "guest@example.com"), func(t *testing.T, e *PaymentEvent) {
			want(t, e.CustomerID, "")
			want(t, e.Email, "guest@example.com")
		}},
		{"UnpaidCheckoutWaitsForTheAsyncPayment", stripetest.CheckoutCompleted(acct).Set("payment_status", "unpaid"),
			func(t *testing.T, e *PaymentEvent) {
				want(t, e.Skip, SkipUnpaidCheckout)
				want(t, e.QualifiesForSettlement(), false)
			}},
		{"AsyncPaymentSucceeded", func() *stripetest.Event {
			ev := stripetest.CheckoutCompleted(acct)
			ev.Type = "checkout.session.async_payment_succeeded"
			return ev
		}(), func(t *testing.T, e *PaymentEvent) {
			want(t, e.Action, ActionSale)
			want(t, e.Skip, "")
		}},
		{"FreeCheckout", stripetest.CheckoutCompleted(acct).Set("amount_total", 0).Set("payment_status", "no_payment_required"),
			func(t *testing.T, e *PaymentEvent) { want(t, e.Skip, SkipNothingPaid) }},
		{"SetupCheckout", stripetest.CheckoutCompleted(acct).Set("mode", "setup"),
			func(t *testing.T, e *PaymentEvent) { want(t, e.Skip, SkipCheckoutMode) }},
		{"SubscriptionCheckoutRecordsNoSale", stripetest.SubscriptionCheckoutCompleted(acct), func(t *testing.T, e *PaymentEvent) {
			want(t, e.Action, ActionSubscriptionCheckout)
			want(t, strings.HasPrefix(e.SubscriptionID, "sub_"), true)
			want(t, e.PaymentID, "")
			want(t, e.QualifiesForSettlement(), false)
		}},
		{"InvoiceOfACurrentVersion", stripetest.InvoicePaid("invoice.paid", acct, "in_1", "sub_1", "cus_1").
			Set("status_transitions.paid_at", 1767225603).
			Set("parent.subscription_details.metadata", map[string]any{"svc_click_id": "c1"}), func(t *testing.T, e *PaymentEvent) {
			want(t, e.Action, ActionSale)
			want(t, e.Skip, "")
			want(t, e.TransactionID, "in_1")
			want(t, e.SubscriptionID, "sub_1")
			want(t, e.CustomerID, "cus_1")
			want(t, e.Metadata["svc_click_id"], "c1")
			want(t, e.SaleType, SaleTypeSubscription)
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
			}}), func(t *testing.T, e *PaymentEvent) {
			want(t, e.PaymentID, "pi_paid")
			want(t, e.IsRecurring, true)
		}},
		{"InvoiceOfAnOlderVersion", stripetest.LegacyInvoicePaid(acct, "in_2", "sub_2", "cus_2").
			Set("subscription_details.metadata", map[string]any{"svc_customer_key": "user-2"}), func(t *testing.T, e *PaymentEvent) {
			want(t, e.Skip, "")
			want(t, e.SubscriptionID, "sub_2")
			want(t, e.Metadata["svc_customer_key"], "user-2")
			want(t, e.Currency, "eur")
			want(t, e.AmountCents, int64(5000))
			want(t, e.IsRecurring, true) // subscription_cycle
			want(t, strings.HasPrefix(e.PaymentID, "pi_"), true)
		}},
		{"InvoiceOfAnOlderVersionPaidByACharge", stripetest.LegacyInvoicePaid(acct, "in_3", "sub_3", "cus_3").
			Set("payment_intent", nil), func(t *testing.T, e *PaymentEvent) {
			want(t, strings.HasPrefix(e.PaymentID, "ch_"), true)
		}},
		{"InvoiceOfNoSubscription", stripetest.InvoicePaid("invoice.paid", acct, "in_4", "sub_4", "cus_4").Set("parent", nil),
			func(t *testing.T, e *PaymentEvent) { want(t, e.Skip, SkipNotSubscription) }},
		{"TrialInvoice", stripetest.InvoicePaid("invoice.paid", acct, "in_5", "sub_5", "cus_5").Set("amount_paid", 0),
			func(t *testing.T, e *PaymentEvent) {
				want(t, e.Skip, SkipNothingPaid)
				want(t, e.QualifiesForSettlement(), false)
			}},
		{"InvoicePayment", stripetest.InvoicePaymentPaid(acct, "in_6", "pi_6"), func(t *testing.T, e *PaymentEvent) {
			want(t, e.Action, ActionInvoicePayment)
			want(t, e.Skip, "")
			want(t, e.TransactionID, "in_6")
			want(t, e.PaymentID, "pi_6")
		}},
		{"ChargeRefundedOfACurrentVersion", stripetest.ChargeRefunded(acct, "pi_7", 4900, 1000), func(t *testing.T, e *PaymentEvent) {
			want(t, e.Action, ActionRefund)
			want(t, e.PaymentID, "pi_7")
			want(t, e.AmountRefunded, int64(1000))
			want(t, len(e.Refunds), 0)
		}},
		{"ChargeRefundedListingItsRefunds", stripetest.LegacyChargeRefunded(acct, "pi_8", 1750,
			stripetest.LegacyRefund{ID: "re_old", Amount: 500, Created: time.Unix(1000, 0)},
			stripetest.LegacyRefund{ID: "re_new", Amount: 250, Created: time.Unix(2000, 0)}), func(t *testing.T, e *PaymentEvent) {
			want(t, e.AmountRefunded, int64(750))
			want(t, len(e.Refunds), 2)
			want(t, e.Refunds[0].ID, "re_old") // oldest first
			want(t, e.Refunds[1].Reason, "requested_by_customer")
		}},
		{"UnhandledType", stripetest.NewEvent("customer.created", acct, map[string]any{"id": "cus_1", "object": "customer"}),
			func(t *testing.T, e *PaymentEvent) {
				want(t, e.Action, ActionNone)
				want(t, e.Skip, SkipUnhandledType)
			}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			e, err := DecodeStripeEvent(tc.event.Payload())
			if err != nil {
				t.Fatal(err)
			}
			want(t, e.EventID, tc.event.ID)
			want(t, e.Type, tc.event.Type)
			tc.check(t, e)
		})
	}
}

func TestDecodeStripeEventRefusesUndecodable(t *testing.T) {
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
			_, err := DecodeStripeEvent(tc.payload)
			if ErrorCode(err) != EInvalid {
				t.Fatalf("err = %v, want an %s error", err, EInvalid)
			}
		})
	}
}

func TestPlanProcessorRefunds(t *testing.T) {
	listed := func(ids ...string) []ProcessorRefund {
		var out []ProcessorRefund
		for _, id := range ids {
			out = append(out, ProcessorRefund{ID: id, AmountCents: 300, Reason: "requested_by_customer"})
		}
		return out
	}
	none := func(string) bool { return false }
	for _, tc := range []struct {
		desc    string
		ev      PaymentEvent
		applied int64
		known   func(string) bool
		want    []RefundStep
	}{
		{"CumulativeFirstRefund", PaymentEvent{ChargeID: "ch_1", AmountRefunded: 1000}, 0, none,
			[]RefundStep{{"ch_1:refunded:1000", 1000, ReasonRefund}}},
		{"CumulativeSecondRefundAppliesTheDifference", PaymentEvent{ChargeID: "ch_1", AmountRefunded: 4900}, 1000, none,
			[]RefundStep{{"ch_1:refunded:4900", 3900, ReasonRefund}}},
		{"AnOlderEventAfterANewerOneAppliesNothing", PaymentEvent{ChargeID: "ch_1", AmountRefunded: 1000}, 4900, none, nil},
		{"ARedeliveryAppliesNothing", PaymentEvent{ChargeID: "ch_1", AmountRefunded: 1000}, 1000, none, nil},
		{"ListedRefundsUnderTheirOwnIDs", PaymentEvent{ChargeID: "ch_1", AmountRefunded: 600, Refunds: listed("re_1", "re_2")}, 0, none,
			[]RefundStep{{"re_1", 300, "requested_by_customer"}, {"re_2", 300, "requested_by_customer"}}},
		{"KnownRefundsAreNotAppliedAgain", PaymentEvent{ChargeID: "ch_1", AmountRefunded: 600, Refunds: listed("re_1", "re_2")}, 300,
			func(id string) bool { return id == "re_1" }, []RefundStep{{"re_2", 300, "requested_by_customer"}}},
		{"ListedRefundsCappedAtTheRefundedAmount", PaymentEvent{ChargeID: "ch_1", AmountRefunded: 400, Refunds: listed("re_1", "re_2")}, 0, none,
			[]RefundStep{{"re_1", 300, "requested_by_customer"}, {"re_2", 100, "requested_by_customer"}}},
		{"WhatTheListDoesNotExplain", PaymentEvent{ChargeID: "ch_1", AmountRefunded: 1000, Refunds: listed("re_1")}, 0, none,
			[]RefundStep{{"re_1", 300, "requested_by_customer"}, {"ch_1:refunded:1000", 700, ReasonRefund}}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := PlanProcessorRefunds(&tc.ev, tc.applied, tc.known); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("steps = %+v\nwant    %+v", got, tc.want)
			}
		})
	}
}

func want[T comparable](t *testing.T, got, wanted T) {
	t.Helper()
	if got != wanted {
		t.Fatalf("got %v, want %v", got, wanted)
	}
}
