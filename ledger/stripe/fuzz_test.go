package stripe

import (
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/partnertrack/partnertrack/ledger"
)

// FuzzDecodeEvent feeds the Stripe event parser: it never panics,
// refuses with ledger.EInvalid only, and what it reads of an event (ids,
// metadata, amounts) is storable text and sane money.
func FuzzDecodeEvent(f *testing.F) {
	// Stripe's own objects of the current and older API versions, wrapped
	// in events of each type the service handles.
	files, _ := filepath.Glob(filepath.Join("..", "stripetest", "testdata", "*.json"))
	for _, file := range files {
		obj, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, typ := range []string{ledger.StripeCheckoutCompleted, ledger.StripeInvoicePaid, ledger.StripeInvoicePaymentPaid, ledger.StripeChargeRefunded, "customer.created"} {
			f.Add([]byte(`{"id":"evt_1","type":"` + typ + `","created":1770000000,"livemode":false,"account":"acct_1","data":{"object":` + string(obj) + `}}`))
		}
	}
	for _, s := range []string{``, `{}`, `{"id":"evt_1","type":"checkout.session.completed","data":{"object":null}}`,
		`{"id":"evt_1","type":"charge.refunded","data":{"object":{"amount_refunded":-5,"refunds":{"data":[{"id":"re_1","amount":1e400}]}}}}`,
		`{"id":"evt_1","type":"invoice.paid","data":{"object":{"amount_paid":9223372036854775807,"currency":"usd","metadata":{"svc_click_id":"\u0000"}}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		e, err := DecodeEvent(payload)
		if err != nil {
			if ledger.ErrorCode(err) != ledger.EInvalid {
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
		for _, s := range ledger.PlanProcessorRefunds(e, 0, func(string) bool { return false }) {
			if s.AmountCents <= 0 || s.RefundID == "" {
				t.Fatalf("payload %q: refund step %+v", payload, s)
			}
		}
	})
}
