package ingest

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/ledger/stripetest"
	"github.com/partnertrack/partnertrack/ratelimit"
)

// Regression tests for hostile input the reliability suite found
// (cmd/internal/reliability TestHostileInput).

// A body that is not valid UTF-8 is not JSON (RFC 8259 §8.1): it is
// refused whole. Before, encoding/json turned each invalid byte into
// U+FFFD, so that two transaction ids differing only in invalid bytes
// were stored as one id and the second sale answered 409, and texts were
// stored other than sent.
func TestBodiesMustBeUTF8(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	for i, id := range []string{"txn-\xff", "txn-\xfe"} {
		click := mustClick(t, b, w.programID, w.linkID, w.partnerID)
		r := do(t, b.app, req{"POST", salePath, `{"transaction_id": "` + id + `", "amount_cents": 100, "click_id": "` + click + `"}`, bearer(w.liveKey)})
		if r.Status != 400 || r.Body["error"].(map[string]any)["message"] != msgNotUTF8 {
			t.Fatalf("sale %d with invalid UTF-8: %d %s", i, r.Status, r.Raw)
		}
	}
	for _, tc := range []struct {
		desc, path, body string
		header           map[string]string
	}{
		{"refund", refundPath, "{\"transaction_id\": \"a\xffb\"}", bearer(w.liveKey)},
		{"lead", "/api/v1/track/lead", "{\"click_id\": \"x\", \"customer_key\": \"\xc3\"}", nil},
		{"click", "/api/v1/track/click", "{\"affiliate_url\": \"https://a.example/?aff=pat\", \"page_url\": \"\xff\"}", nil},
		{"visit", "/api/v1/track/visit", "{\"program_id\": 1, \"page_url\": \"\xed\xa0\x80\"}", nil},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			r := do(t, b.app, req{"POST", tc.path, tc.body, tc.header})
			if r.Status != 400 || r.Body["error"].(map[string]any)["message"] != msgNotUTF8 {
				t.Fatalf("%d %s", r.Status, r.Raw)
			}
		})
	}
	var n int
	b.db.QueryRow(`SELECT (SELECT count(*) FROM sales) + (SELECT count(*) FROM leads) + (SELECT count(*) FROM refunds)`).Scan(&n)
	if n != 0 {
		t.Fatalf("%d rows stored from bodies that are not UTF-8", n)
	}
}

// keyRecorder is a rate-limit store that remembers the keys it counts.
type keyRecorder struct {
	mu   sync.Mutex
	keys []string
}

func (k *keyRecorder) Incr(_ context.Context, key string, _ time.Time) (int64, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.keys = append(k.keys, key)
	return 1, nil
}

// Rate limits counted per token keep no token: the Redis store would
// otherwise write every caller's API key, or login token, in clear into
// Redis key names (keys and tokens are stored hashed everywhere else), and
// the memory store would hold a flood's 8 KiB made-up tokens whole.
func TestRateLimitKeysHoldNoToken(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	clock := &fakeClock{t: time.Now().UTC()}
	rec := &keyRecorder{}
	srv := newTestServer(db, clock, func(_ *Services, o *Options) { o.Limiter = ratelimit.New(rec, clock.Now) })
	app := srv.App()
	w := MustWorld(t, app)
	long := "aff_" + strings.Repeat("x", 7000)
	for _, tok := range []string{w.liveKey, long, w.ownerToken} {
		for _, path := range []string{salePath, refundPath, "/api/v1/cli/status", "/api/v1/programs/me/readiness"} {
			do(t, app, req{"POST", path, `{}`, bearer(tok)})
			do(t, app, req{"GET", path, nil, bearer(tok)})
		}
		do(t, app, req{"GET", "/api/v1/programs/" + itoa(w.programID) + "/settings", nil, bearer(tok)})
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.keys) == 0 {
		t.Fatal("nothing was counted")
	}
	for _, k := range rec.keys {
		for _, tok := range []string{w.liveKey, w.ownerToken, long[:64]} {
			if strings.Contains(k, tok) {
				t.Fatalf("rate-limit key %.80q… holds a token", k)
			}
		}
		if len(k) > 100 {
			t.Fatalf("rate-limit key of %d bytes", len(k))
		}
	}
}

// A signed event is Stripe's own, whatever text the brand's customers put
// in it: one whose metadata holds a NUL character or a lone surrogate is
// stored (jsonb holds neither, so they become U+FFFD) and answered 200.
// Before, the insert failed and the edge answered 500, so Stripe retried
// the event for three days and it was never recorded.
func TestSignedStripeEventWithTextJSONBRefuses(t *testing.T) {
	b := setup(t)
	for _, v := range []string{`"a\u0000b"`, `"a\ud800b"`, `"\u0000"`} {
		ev := stripetest.CheckoutCompleted("acct_1SZwOrPBUlX7cw67").Set("metadata.note", "NOTE")
		payload := bytes.Replace(ev.Payload(), []byte(`"NOTE"`), []byte(v), 1)
		r := do(t, b.app, stripeDelivery("/api/v1/webhooks/stripe", payload, stripetest.Sign(payload, testStripeSecret, time.Now())))
		if r.Status != 200 {
			t.Fatalf("note %s: %d %s", v, r.Status, r.Raw)
		}
		var note string
		if err := b.db.QueryRow(`SELECT payload->'data'->'object'->'metadata'->>'note' FROM processor_events WHERE event_id = $1`, ev.ID).Scan(&note); err != nil {
			t.Fatal(err)
		}
		if strings.ContainsRune(note, 0) || !strings.ContainsRune(note, '\uFFFD') {
			t.Fatalf("note %s stored as %q", v, note)
		}
	}
}

// TestRateLimitHoldsUnderAFloodOfIPs: a burst of clicks from far more
// client addresses than the limiter holds leaves the limiter within its
// bound, and a client over its limit stays refused throughout.
func TestRateLimitHoldsUnderAFloodOfIPs(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	clock := &fakeClock{t: time.Date(2026, 11, 21, 10, 0, 5, 0, time.UTC)}
	mem := ratelimit.NewMemory(640)
	srv := newTestServer(db, clock, func(_ *Services, o *Options) { o.Limiter = ratelimit.New(mem, clock.Now) })
	app := srv.App()
	click := func(ip string) int {
		return do(t, app, req{"POST", "/api/v1/track/click", map[string]any{"affiliate_url": "https://a.example/?aff=nobody"},
			map[string]string{"X-Forwarded-For": ip}}).Status
	}
	const heavy = "198.51.100.7"
	for i := 0; i < limitClick; i++ {
		if s := click(heavy); s == 429 {
			t.Fatalf("refused at click %d", i+1)
		}
	}
	for i := 0; i < 5000; i++ {
		if s := click(fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)); s == 429 {
			t.Fatalf("a new client refused at once (flood client %d)", i)
		}
		if i%250 == 0 {
			if s := click(heavy); s != 429 {
				t.Fatalf("the client over its limit was let through (%d) after %d flooding clients", s, i)
			}
		}
		if n := mem.Len(); n > 640 {
			t.Fatalf("the limiter holds %d keys, bound 640", n)
		}
	}
}

// A lone surrogate escape is refused in every string. encoding/json reads
// "\ud800", "\udfff" and "\ufffd" all as U+FFFD, so before, three sales
// whose transaction_id differed only there were one id: the second
// answered 409 with the first one's sale_id, and a refund of one refunded
// the other. U+FFFD itself, escaped or not, is a character like any other.
func TestLoneSurrogateIDsNeverMerge(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	sale := func(idJSON string) response {
		click := mustClick(t, b, w.programID, w.linkID, w.partnerID)
		return do(t, b.app, req{"POST", salePath, `{"transaction_id": "txn-` + idJSON + `", "amount_cents": 1000, "click_id": "` + click + `"}`, bearer(w.liveKey)})
	}
	if r := sale(`\ufffd`); r.Status != 200 {
		t.Fatalf("sale with an escaped U+FFFD: %d %s", r.Status, r.Raw)
	}
	for _, lone := range []string{`\ud800`, `\udfff`, `\udfff\ud800`} {
		r := sale(lone)
		if r.Status != 400 || r.Body["error"].(map[string]any)["message"] != ledger.MsgSaleTransactionID {
			t.Fatalf("sale with %s: %d %s", lone, r.Status, r.Raw)
		}
		r = do(t, b.app, req{"POST", refundPath, `{"transaction_id": "txn-` + lone + `", "refund_amount_cents": 100}`, bearer(w.liveKey)})
		if r.Status != 400 || r.Body["error"].(map[string]any)["message"] != ledger.MsgRefundTransactionID {
			t.Fatalf("refund of %s: %d %s", lone, r.Status, r.Raw)
		}
	}
	var sales, refunds int
	b.db.QueryRow(`SELECT (SELECT count(*) FROM sales), (SELECT count(*) FROM refunds)`).Scan(&sales, &refunds)
	if sales != 1 || refunds != 0 {
		t.Fatalf("%d sales and %d refunds stored, want the one sale", sales, refunds)
	}
	// The U+FFFD sale is reached by its own id, sent raw or escaped.
	r := do(t, b.app, req{"POST", refundPath, `{"transaction_id": "txn-` + "\uFFFD" + `", "refund_amount_cents": 100}`, bearer(w.liveKey)})
	if r.Status != 200 {
		t.Fatalf("refund of the U+FFFD sale: %d %s", r.Status, r.Raw)
	}
}

// Every decoder refuses a string holding a lone surrogate escape as a
// value of the wrong shape (the field's own message), the lean one of the
// click path as well; a valid pair is read as its character.
func TestDecodersRefuseLoneSurrogates(t *testing.T) {
	body := `{"s": "a\ud800", "pair": "\ud83d\ude00", "list": ["x", "\udfff"], "obj": {"s": "\udc00"}, "bs": "\\ud800"}`
	c, release := fiberCtx(body)
	defer release()
	f, err := parseFields(c)
	if err != nil {
		t.Fatal(err)
	}
	lf, err := parseLean(c)
	if err != nil {
		t.Fatal(err)
	}
	if !f.String("s").Bad || !f.Text("s").Bad || !f.Strings("list").Bad || !f.Object("obj").Value.String("s").Bad {
		t.Fatal("fields took a lone surrogate")
	}
	if !lf.String("s").Bad || !lf.Object("obj").Value.String("s").Bad {
		t.Fatal("leanFields took a lone surrogate")
	}
	for _, s := range []ledger.Input[string]{f.String("pair"), lf.String("pair")} {
		if !s.OK() || s.Value != "\U0001F600" {
			t.Fatalf("a surrogate pair: %+v", s)
		}
	}
	for _, s := range []ledger.Input[string]{f.String("bs"), lf.String("bs")} {
		if !s.OK() || s.Value != `\ud800` {
			t.Fatalf("an escaped backslash: %+v", s)
		}
	}

	// Through the routes: each field answers its own message, nothing stored.
	b := setup(t)
	w := MustWorld(t, b.app)
	click := mustClick(t, b, w.programID, w.linkID, w.partnerID)
	for _, tc := range []struct {
		desc, path, body, want string
		header                 map[string]string
	}{
		{"sale transaction_id", salePath, `{"transaction_id": "\udc00", "amount_cents": 100, "click_id": "` + click + `"}`, ledger.MsgSaleTransactionID, bearer(w.liveKey)},
		{"sale line_items", salePath, `{"transaction_id": "t1", "amount_cents": 100, "click_id": "` + click + `", "line_items": [{"sku": "\ud800"}]}`, ledger.MsgLineItems, bearer(w.liveKey)},
		{"refund transaction_id", refundPath, `{"transaction_id": "\ud800", "refund_amount_cents": 1}`, ledger.MsgRefundTransactionID, bearer(w.liveKey)},
		{"lead customer_key", "/api/v1/track/lead", `{"click_id": "` + click + `", "customer_key": "u\ud800"}`, "", nil},
		{"operator program name", "/api/operator/v1/programs", `{"workspace_id": ` + itoa(w.workspaceID) + `, "name": "\udfff", "domain": "a.example", "commission_type": "fixed", "commission_rate": 5}`, "", operator()},
		{"operator partner email", "/api/operator/v1/programs/" + itoa(w.programID) + "/partners", `{"email": "x\ud800@p.example", "name": "X"}`, "", operator()},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			r := do(t, b.app, req{"POST", tc.path, tc.body, tc.header})
			msg, _ := r.Body["error"].(map[string]any)["message"].(string)
			if r.Status != 400 || msg == "" || (tc.want != "" && msg != tc.want) {
				t.Fatalf("%d %s", r.Status, r.Raw)
			}
			// The same message as a value of the wrong type in that field.
			if tc.want == "" {
				wrong := strings.Replace(tc.body, `"u\ud800"`, `5`, 1)
				wrong = strings.Replace(wrong, `"\udfff"`, `5`, 1)
				wrong = strings.Replace(wrong, `"x\ud800@p.example"`, `5`, 1)
				if r2 := do(t, b.app, req{"POST", tc.path, wrong, tc.header}); r2.Body["error"].(map[string]any)["message"] != msg {
					t.Fatalf("message %q, for a number %s", msg, r2.Raw)
				}
			}
		})
	}
	var n int
	b.db.QueryRow(`SELECT (SELECT count(*) FROM sales) + (SELECT count(*) FROM leads) + (SELECT count(*) FROM programs) - 1 + (SELECT count(*) FROM enrollments) - 1`).Scan(&n)
	if n != 0 {
		t.Fatalf("%d rows stored from strings with lone surrogates", n)
	}
}
