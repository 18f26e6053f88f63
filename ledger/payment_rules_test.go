package ledger

import (
	"strings"
	"testing"
)

func TestPaymentPayable(t *testing.T) {
	keys := NewMetadataKeys("svc")
	for _, tc := range []struct {
		desc string
		ev   PaymentEvent
		cur  Currency
		why  string
	}{
		{"a sale in a supported currency", PaymentEvent{Action: ActionSale, Currency: "usd", TransactionID: "pi_1"}, USD, ""},
		{"currency codes are trimmed and upper-cased", PaymentEvent{Action: ActionSale, Currency: " vnd ", TransactionID: "pi_1"}, VND, ""},
		{"an unsupported currency", PaymentEvent{Action: ActionSale, Currency: "gbp", TransactionID: "pi_1"}, "", MsgUnsupportedCurrency("GBP")},
		{"no transaction id", PaymentEvent{Action: ActionSale, Currency: "usd"}, "", MsgPaymentTransactionID},
		{"a transaction id over 255 characters", PaymentEvent{Action: ActionSale, Currency: "usd", TransactionID: strings.Repeat("x", 256)}, "", MsgPaymentTransactionID},
		{"metadata naming another program", PaymentEvent{Action: ActionSale, Currency: "usd", TransactionID: "pi_1",
			Metadata: map[string]string{"program_id": "2"}}, "", MsgPaymentOtherProgram("2")},
		{"metadata naming this program", PaymentEvent{Action: ActionSale, Currency: "usd", TransactionID: "pi_1",
			Metadata: map[string]string{"program_id": "1"}}, USD, ""},
		{"a refund needs no currency check here", PaymentEvent{Action: ActionRefund, Currency: "gbp"}, "", ""},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			cur, why := PaymentPayable(&tc.ev, keys, 1)
			if cur != tc.cur || why != tc.why {
				t.Fatalf("PaymentPayable = %q, %q; want %q, %q", cur, why, tc.cur, tc.why)
			}
		})
	}
}

func TestCommissionPayable(t *testing.T) {
	for _, tc := range []struct {
		status   string
		credited bool
		want     string
	}{
		{CommissionPending, false, ""},
		{CommissionApproved, true, ""},
		{CommissionPaid, true, ""},
		{CommissionRefunded, true, ""},
		{CommissionRefunded, false, MsgCommissionCancelled},
		{CommissionReversed, true, MsgCommissionReversed},
		{CommissionReversed, false, MsgCommissionReversed},
	} {
		err := CommissionPayable(&Commission{Status: tc.status, Credited: tc.credited})
		if ErrorMessage(err) != tc.want || (err != nil && ErrorCode(err) != EConflict) {
			t.Errorf("%s credited %v: %v, want %q", tc.status, tc.credited, err, tc.want)
		}
	}
}
