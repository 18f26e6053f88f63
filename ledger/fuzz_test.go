package ledger

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzDecodeStripeEvent feeds the Stripe event parser: it never panics,
// refuses with EInvalid only, and what it reads of an event (ids,
// metadata, amounts) is storable text and sane money.
func FuzzDecodeStripeEvent(f *testing.F) {
	// Stripe's own objects of the current and older API versions, wrapped
	// in events of each type the service handles.
	files, _ := filepath.Glob(filepath.Join("stripetest", "testdata", "*.json"))
	for _, file := range files {
		obj, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, typ := range []string{StripeCheckoutCompleted, StripeInvoicePaid, StripeInvoicePaymentPaid, StripeChargeRefunded, "customer.created"} {
			f.Add([]byte(`{"id":"evt_1","type":"` + typ + `","created":1770000000,"livemode":false,"account":"acct_1","data":{"object":` + string(obj) + `}}`))
		}
	}
	for _, s := range []string{``, `{}`, `{"id":"evt_1","type":"checkout.session.completed","data":{"object":null}}`,
		`{"id":"evt_1","type":"charge.refunded","data":{"object":{"amount_refunded":-5,"refunds":{"data":[{"id":"re_1","amount":1e400}]}}}}`,
		`{"id":"evt_1","type":"invoice.paid","data":{"object":{"amount_paid":9223372036854775807,"currency":"usd","metadata":{"svc_click_id":"\u0000"}}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		e, err := DecodeStripeEvent(payload)
		if err != nil {
			if ErrorCode(err) != EInvalid {
				t.Fatalf("payload %q: refused with %v", payload, err)
			}
			return
		}
		if e.EventID == "" || e.Type == "" {
			t.Fatalf("payload %q: event without id or type", payload)
		}
		for _, v := range []string{e.TransactionID, e.PaymentID, e.CustomerID, e.Email, e.ClientReferenceID, e.ChargeID, e.SubscriptionID} {
			if !utf8.ValidString(v) {
				t.Fatalf("payload %q: text %q", payload, v)
			}
		}
		// A refund event never plans a refund of nothing, or of a negative
		// amount, whatever the charge says.
		for _, s := range PlanProcessorRefunds(e, 0, func(string) bool { return false }) {
			if s.AmountCents <= 0 || s.RefundID == "" {
				t.Fatalf("payload %q: refund step %+v", payload, s)
			}
		}
	})
}

// FuzzStorableJSON: what StorableJSON keeps is one valid JSON value with
// no NUL escape and no number jsonb refuses, and keeping it again changes
// nothing.
func FuzzStorableJSON(f *testing.F) {
	for _, s := range []string{`[]`, `{"a":[1,2.5,"x"]}`, `"a\u0000b"`, `"\ud800"`, `1e400`, `12345678901234567890`, `{"a":1}{}`,
		`[` + strings.Repeat(`[`, 200) + strings.Repeat(`]`, 200) + `]`, "\"\xff\"", `{"\u0000":null}`} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, raw []byte, replaceNUL bool) {
		out, ok := StorableJSON(raw, replaceNUL)
		if !ok {
			return
		}
		if !json.Valid(out) || strings.Contains(string(out), `\u0000`) {
			t.Fatalf("%q → %q", raw, out)
		}
		again, ok := StorableJSON(out, replaceNUL)
		if !ok || string(again) != string(out) {
			t.Fatalf("%q → %q → %q, %v", raw, out, again, ok)
		}
	})
}
