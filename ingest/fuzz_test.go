package ingest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ratelimit"
)

// Fuzz targets of the edge's JSON decoders: the sale, lead, refund and
// click bodies, read exactly as their handlers read them and validated by
// the ledger. Each checks that the decoding never panics, that a refusal
// is always an expected, typed 4xx error (never an internal one), and
// that whatever is accepted can be stored as sent: valid UTF-8 without NUL,
// within its length, JSON that jsonb takes. `make test` runs them over
// their seed corpus (f.Add and testdata/fuzz); `make fuzz` fuzzes each for
// a while.

// fuzzSeeds are bodies every target starts from.
var fuzzSeeds = []string{
	``, `{}`, `[]`, `null`, `{"a":`, "{\"x\":\"\xff\"}", `{"x":"\u0000"}`, `{"x":"\ud800"}`,
	`{"transaction_id":"t1","amount_cents":5000,"click_id":"01j0000000000000000000000a","currency":"usd","occurred_at":"2026-03-15T12:00:00Z","provider":"stripe","provider_payment_id":"pi_1","livemode":true,"sale_type":"subscription","is_recurring":true,"line_items":[{"sku":"a","qty":2}],"additional_data":{"test_mode":false,"program_id":"7"}}`,
	`{"transaction_id":12,"amount_cents":"5000"}`, `{"transaction_id":"x","amount_cents":1e400}`,
	`{"transaction_id":"x","amount_cents":9223372036854775808}`, `{"transaction_id":"x","amount_cents":-1}`,
	`{"transaction_id":"x'); DROP TABLE sales; --","amount_cents":1,"customer_key":"' OR '1'='1"}`,
	`{"transaction_id":"x","amount_cents":1,"line_items":[1e200000]}`, `{"transaction_id":"x","amount_cents":1,"line_items":{"a\u0000":1}}`,
	`{"click_id":"01j0000000000000000000000a","customer_key":"user-1","email":"A@B.example","session_id":"s","page_url":"https://x/","click_ids":["a","b"],"program_id":"7","additional_data":{"test_mode":true,"program_id":7}}`,
	`{"click_id":"a b","customer_key":"\u0007"}`, `{"customer_key":"k"}`, `{"email":"not an email","click_id":"c"}`,
	`{"transaction_id":"t","refund_amount_cents":100,"refund_id":"r1","reason":"chargeback","refund_reason":"damaged"}`,
	`{"transaction_id":" ","refund_amount_cents":-5,"reason":"other"}`,
	`{"affiliate_url":"https://brand.example/?aff=pat-1","page_url":"https://brand.example/","referrer_url":"https://google.com/","session_id":"s1","user_agent":"Mozilla/5.0","program_id":"7","additional_data":{"test_mode":true,"program_id":7}}`,
	`{"affiliate_url":"https://brand.example/?via=pat-1&aff=","page_title":1}`, `{"affiliate_url":"::","program_id":-1}`,
	`{"affiliate_url":"https://brand.example/?aff=` + strings.Repeat("p", 70) + `"}`,
}

// storableText reports whether s can be stored as sent in a text column.
func storableText(s string) bool { return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 }

// wantTypedRefusal fails unless err is a ledger error with one of codes.
func wantTypedRefusal(t *testing.T, body []byte, err error, codes ...string) {
	t.Helper()
	code := ledger.ErrorCode(err)
	for _, c := range codes {
		if code == c {
			if ledger.ErrorMessage(err) == "" {
				t.Fatalf("body %q: %s without a message", body, code)
			}
			return
		}
	}
	t.Fatalf("body %q: refused with %v (code %s), want one of %v", body, err, code, codes)
}

// parseBody reads body as every JSON route does.
func parseBody(body []byte) (fields, error) {
	c, release := fiberCtx(string(body))
	defer release()
	return parseFields(c)
}

var fuzzNow = time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC)

func FuzzSaleBody(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, body []byte, testKey bool) {
		fs, err := parseBody(body)
		if err != nil {
			wantTypedRefusal(t, body, err, ledger.EInvalid)
			return
		}
		mode := ledger.LiveKey
		if testKey {
			mode = ledger.TestKey
		}
		s, err := saleRequest(fs, &ledger.ProgramKey{ProgramID: 7, Mode: mode}).Validate(fuzzNow)
		if err != nil {
			wantTypedRefusal(t, body, err, ledger.EInvalid, ledger.EUnsupportedCurrency, ledger.EForbidden)
			return
		}
		if strings.TrimSpace(s.TransactionID) == "" || utf8.RuneCountInString(s.TransactionID) > 255 || !storableText(s.TransactionID) {
			t.Fatalf("body %q: transaction id %q accepted", body, s.TransactionID)
		}
		if s.AmountCents < 0 || (s.AmountCents == 0 && !s.IsTest) {
			t.Fatalf("body %q: amount %d accepted", body, s.AmountCents)
		}
		if s.Currency != "" {
			if _, ok := ledger.ParseCurrency(string(s.Currency)); !ok {
				t.Fatalf("body %q: currency %q accepted", body, s.Currency)
			}
		}
		for _, v := range []string{s.CustomerKey, s.ClickID, s.Provider, s.ProviderPaymentID, s.SubscriptionID, s.ProductID} {
			if !storableText(v) {
				t.Fatalf("body %q: %q accepted", body, v)
			}
		}
		if len(s.Metadata) > 0 {
			var m map[string]any
			if json.Unmarshal(s.Metadata, &m) != nil || strings.Contains(string(s.Metadata), `\u0000`) {
				t.Fatalf("body %q: metadata %s is not storable JSON", body, s.Metadata)
			}
		}
	})
}

func FuzzLeadBody(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, withKey bool) {
		fs, err := parseBody(body)
		if err != nil {
			wantTypedRefusal(t, body, err, ledger.EInvalid)
			return
		}
		var key *ledger.ProgramKey
		if withKey {
			key = &ledger.ProgramKey{ProgramID: 7, Mode: ledger.LiveKey}
		}
		r, err := leadInput(fs).Validate(key)
		if err != nil {
			wantTypedRefusal(t, body, err, ledger.EInvalid, ledger.EForbidden)
			return
		}
		if r.ClickID != "" && !ledger.ValidClickIDShape(r.ClickID) {
			t.Fatalf("body %q: click id %q accepted", body, r.ClickID)
		}
		if r.CustomerKey != "" && !ledger.ValidCustomerKey(r.CustomerKey) {
			t.Fatalf("body %q: customer key %q accepted", body, r.CustomerKey)
		}
		if r.ClickID == "" && r.CustomerKey == "" && !r.Test {
			t.Fatalf("body %q: a lead without click_id or customer_key accepted", body)
		}
		for _, v := range []string{r.Email, r.SessionID, r.PageURL, r.EventName, r.ProgramHint} {
			if !storableText(v) {
				t.Fatalf("body %q: %q accepted", body, v)
			}
		}
	})
}

func FuzzRefundBody(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fs, err := parseBody(body)
		if err != nil {
			wantTypedRefusal(t, body, err, ledger.EInvalid)
			return
		}
		in, err := ledger.RefundRequest{
			ProgramID:         7,
			TransactionID:     fs.String("transaction_id"),
			RefundAmountCents: fs.Int("refund_amount_cents"),
			RefundID:          fs.String("refund_id"),
			Reason:            fs.String("reason"),
			RefundReason:      fs.String("refund_reason"),
		}.Validate()
		if err != nil {
			wantTypedRefusal(t, body, err, ledger.EInvalid)
			return
		}
		if strings.TrimSpace(in.TransactionID) == "" || !storableText(in.TransactionID) || in.AmountCents < 0 ||
			utf8.RuneCountInString(in.RefundID) > 255 || !storableText(in.RefundID) || !storableText(in.Reason) ||
			utf8.RuneCountInString(in.Reason) > 1000 || (in.AmountCents == 0 && in.RefundID != "") {
			t.Fatalf("body %q: refund %+v accepted", body, in)
		}
	})
}

// fuzzDirectory resolves any code to one link of program 7.
type fuzzDirectory struct{}

func (fuzzDirectory) ReferralLink(_ context.Context, code string) (*ledger.ReferralLink, error) {
	partner := int64(3)
	return &ledger.ReferralLink{LinkID: 5, Code: code, PartnerID: &partner, Active: true,
		Program: &ledger.TrackerSettings{ProgramID: 7, CookieDuration: 30, LeadAuth: ledger.LeadServerRequired}}, nil
}

func (fuzzDirectory) TrackerSettings(_ context.Context, programID int64) (*ledger.TrackerSettings, error) {
	if programID != 7 {
		return nil, ledger.NewError(ledger.ENotFound, "no program")
	}
	return &ledger.TrackerSettings{ProgramID: 7, CookieDuration: 30, LeadAuth: ledger.LeadServerRequired}, nil
}

// fuzzTraffic keeps the last click recorded.
type fuzzTraffic struct {
	mu   sync.Mutex
	last *ledger.Click
}

func (f *fuzzTraffic) RecordClick(_ context.Context, c *ledger.Click) error {
	f.mu.Lock()
	f.last = c
	f.mu.Unlock()
	return nil
}

func (f *fuzzTraffic) RecordVisit(context.Context, *ledger.Visit) error { return nil }

// allowAll is a rate-limit store that never limits.
type allowAll struct{}

func (allowAll) Incr(context.Context, string, time.Time) (int64, error) { return 1, nil }

// FuzzClickBody sends bodies to the real click handler (the lean decoder,
// affiliate_url parsing, enrichment) over stub storage: the answer is
// never a 5xx, and a recorded click holds only storable text within the
// clip limits.
func FuzzClickBody(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	traffic := &fuzzTraffic{}
	srv := New(Config{BrandPrefix: "svc"}, Services{Tracking: fuzzDirectory{}, Traffic: traffic},
		Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Limiter: ratelimit.New(allowAll{}, nil)})
	app := srv.App()
	f.Fuzz(func(t *testing.T, body []byte) {
		traffic.mu.Lock()
		traffic.last = nil
		traffic.mu.Unlock()
		req := httptest.NewRequest("POST", "/api/v1/track/click", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		resp, err := app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 500 {
			t.Fatalf("body %q: %d %s", body, resp.StatusCode, raw)
		}
		traffic.mu.Lock()
		c := traffic.last
		traffic.mu.Unlock()
		if resp.StatusCode != 200 {
			if c != nil {
				t.Fatalf("body %q: answered %d but recorded a click", body, resp.StatusCode)
			}
			return
		}
		if c == nil {
			t.Fatalf("body %q: answered 200 without recording", body)
		}
		for _, v := range []struct {
			s   string
			max int
		}{{c.PageURL, ledger.ClipURL}, {c.ReferrerURL, ledger.ClipURL}, {c.SessionID, ledger.ClipID}, {c.UserAgent, ledger.ClipShort}} {
			if !storableText(v.s) || len(v.s) > v.max {
				t.Fatalf("body %q: stored text %q (%d bytes, limit %d)", body, v.s, len(v.s), v.max)
			}
		}
	})
}
