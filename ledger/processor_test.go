package ledger

import (
	"reflect"
	"testing"
	"time"
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
