package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/stripetest"
)

// stripeDelivery is a POST of payload as Stripe sends it, with header as
// its Stripe-Signature ("" sends none).
func stripeDelivery(path string, payload []byte, header string) req {
	r := req{method: "POST", path: path, body: payload}
	if header != "" {
		r.header = map[string]string{"Stripe-Signature": header}
	}
	return r
}

// wantRefused checks a refused delivery: the platform envelope, no code.
func wantRefused(t *testing.T, r response, status int, msg string) {
	t.Helper()
	assertPlatformError(t, r, status, statusNames[status], msg, "")
}

func (b *testBundle) storedEvents(t *testing.T) int {
	t.Helper()
	var n int
	if err := b.db.QueryRow(`SELECT count(*) FROM processor_events`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestStripeWebhookRefusesBadSignatures(t *testing.T) {
	b := setup(t)
	ev := stripetest.CheckoutCompleted("acct_1SZwOrPBUlX7cw67")
	payload := ev.Payload()
	now := time.Now()
	for _, tc := range []struct {
		desc    string
		payload []byte
		header  string
		msg     string
	}{
		{"Missing", payload, "", msgStripeNotSigned},
		{"OtherSecret", payload, stripetest.Sign(payload, "whsec_someone_else", now), msgStripeBadSignature},
		{"TamperedBody", bytes.Replace(payload, []byte(`"amount_total":4900`), []byte(`"amount_total":490000`), 1),
			stripetest.Sign(payload, testStripeSecret, now), msgStripeBadSignature},
		{"NoV1Signature", payload, "t=" + itoa(now.Unix()), msgStripeBadSignature},
		{"MalformedHeader", payload, "garbage", msgStripeBadSignature},
		{"OlderThanFiveMinutes", payload, stripetest.Sign(payload, testStripeSecret, now.Add(-6*time.Minute)), msgStripeTooOld},
		{"SignedButNotAnEvent", []byte(`{"object": "checkout.session", "id": "cs_1"}`),
			stripetest.Sign([]byte(`{"object": "checkout.session", "id": "cs_1"}`), testStripeSecret, now), msgStripeNotEvent},
		{"SignedButNotJSON", []byte(`hello`), stripetest.Sign([]byte(`hello`), testStripeSecret, now), msgStripeNotEvent},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			r := do(t, b.app, stripeDelivery("/api/v1/webhooks/stripe", tc.payload, tc.header))
			wantRefused(t, r, 400, tc.msg)
			if n := b.storedEvents(t); n != 0 {
				t.Fatalf("%d events stored after a refused delivery", n)
			}
		})
	}
}

func TestStripeWebhookStoresOnce(t *testing.T) {
	b := setup(t)
	ev := stripetest.CheckoutCompleted("acct_1SZwOrPBUlX7cw67")
	ev.APIVersion = "2023-10-16" // an account on an older API version: accepted
	payload := ev.Payload()
	delivery := stripeDelivery("/api/v1/webhooks/stripe", payload, stripetest.Sign(payload, testStripeSecret, time.Now()))

	d := mustOK(t, do(t, b.app, delivery), 200)
	if d["received"] != true || d["event_id"] != ev.ID || d["duplicate"] != false {
		t.Fatalf("data = %v", d)
	}
	var row struct {
		Account  string  `db:"account_id"`
		Type     string  `db:"event_type"`
		Status   string  `db:"status"`
		Program  *int64  `db:"program_id"`
		Payload  string  `db:"payload"`
		Enqueued *string `db:"enqueued_at"`
	}
	if err := b.db.Get(&row, `SELECT account_id, event_type, status, program_id, payload::text AS payload,
		enqueued_at::text AS enqueued_at FROM processor_events WHERE event_id = $1`, ev.ID); err != nil {
		t.Fatal(err)
	}
	if row.Account != ev.Account || row.Type != "checkout.session.completed" || row.Status != ledger.EventReceived ||
		row.Program != nil || row.Enqueued != nil {
		t.Fatalf("stored event = %+v", row)
	}
	var sent, stored any
	json.Unmarshal(payload, &sent)
	json.Unmarshal([]byte(row.Payload), &stored)
	if a, _ := json.Marshal(sent); !bytes.Equal(a, mustJSON(t, stored)) {
		t.Fatalf("stored payload differs from the one sent")
	}

	// Stripe redelivers the same event: 200, nothing more stored.
	d = mustOK(t, do(t, b.app, delivery), 200)
	if d["duplicate"] != true {
		t.Fatalf("redelivery: data = %v", d)
	}
	if n := b.storedEvents(t); n != 1 {
		t.Fatalf("%d events stored, want 1", n)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestStripeWebhookBodyLimit: the processor webhooks take bodies over the
// 64 KiB of the JSON routes (up to the server's 1 MiB).
func TestStripeWebhookBodyLimit(t *testing.T) {
	b := setup(t)
	big := stripetest.CheckoutCompleted("acct_1").Set("metadata.note", strings.Repeat("x", 200<<10))
	payload := big.Payload()
	mustOK(t, do(t, b.app, stripeDelivery("/api/v1/webhooks/stripe", payload, stripetest.Sign(payload, testStripeSecret, time.Now()))), 200)

	if n := b.storedEvents(t); n != 1 {
		t.Fatalf("%d events stored, want 1", n)
	}
}

// TestStripeWebhookDisabled: without STRIPE_WEBHOOK_SECRET the endpoint
// does not exist.
func TestStripeWebhookDisabled(t *testing.T) {
	t.Parallel()
	srv := New(Config{}, Services{}, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	payload := stripetest.CheckoutCompleted("acct_1").Payload()
	r := do(t, srv.App(), stripeDelivery("/api/v1/webhooks/stripe", payload, stripetest.Sign(payload, "", time.Now())))
	wantRefused(t, r, 404, "Not found")
}

// TestBrandStripeWebhook: a webhook the brand added on its own account
// (POST /webhooks/stripe/:programId) is verified with the program's own
// signing secret, and its events belong to that program.
func TestBrandStripeWebhook(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	path := "/webhooks/stripe/" + itoa(w.programID)
	ev := stripetest.CheckoutCompleted("")
	payload := ev.Payload()

	r := do(t, b.app, stripeDelivery(path, payload, stripetest.Sign(payload, "whsec_brand_own", time.Now())))
	wantRefused(t, r, 400, msgStripeNoSecret)

	if _, err := postgres.NewProgramService(b.db.DB).UpdateSettings(context.Background(), w.programID,
		ledger.SettingsInput{StripeWebhookSecret: ledger.Some("whsec_brand_own")}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		desc   string
		path   string
		secret string
		status int
		msg    string
	}{
		{"ConnectSecretIsNotTheBrands", path, testStripeSecret, 400, msgStripeBadSignature},
		{"UnknownProgram", "/webhooks/stripe/999999", "whsec_brand_own", 404, "program not found"},
		{"NotAProgramID", "/webhooks/stripe/acme", "whsec_brand_own", 404, "program not found"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			r := do(t, b.app, stripeDelivery(tc.path, payload, stripetest.Sign(payload, tc.secret, time.Now())))
			wantRefused(t, r, tc.status, tc.msg)
		})
	}
	if n := b.storedEvents(t); n != 0 {
		t.Fatalf("%d events stored after refused deliveries", n)
	}

	mustOK(t, do(t, b.app, stripeDelivery(path, payload, stripetest.Sign(payload, "whsec_brand_own", time.Now()))), 200)
	var programID int64
	if err := b.db.QueryRow(`SELECT program_id FROM processor_events WHERE event_id = $1`, ev.ID).Scan(&programID); err != nil ||
		programID != w.programID {
		t.Fatalf("stored for program %d (%v), want %d", programID, err, w.programID)
	}
}

// TestStripeWebhookToSale follows an event from the edge to the sale: the
// Connect account is connected through the operator API, the edge stores
// the signed event, and the worker's processing records the sale.
func TestStripeWebhookToSale(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	acct := "acct_1SZwOrPBUlX7cw67"
	mustOK(t, do(t, b.app, req{"POST", "/api/operator/v1/programs/" + itoa(w.programID) + "/processor-account",
		map[string]any{"account_id": acct}, operator()}), 200)
	click := ledger.NewClickID(b.clock.Now())
	at, _ := ledger.ClickTime(click)
	if _, err := b.db.Exec(`INSERT INTO clicks (click_id, occurred_at, program_id, partner_id, link_id) VALUES ($1, $2, $3, $4, $5)`,
		click, at, w.programID, w.partnerID, w.linkID); err != nil {
		t.Fatal(err)
	}
	ev := stripetest.CheckoutCompleted(acct).Set("metadata.svc_click_id", click)
	payload := ev.Payload()
	mustOK(t, do(t, b.app, stripeDelivery("/api/v1/webhooks/stripe", payload, stripetest.Sign(payload, testStripeSecret, time.Now()))), 200)

	proc := postgres.NewProcessorService(b.db.DB, postgres.ProcessorOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	res, err := proc.ProcessEvent(context.Background(), ev.ID)
	if err != nil || res.Status != ledger.EventProcessed || res.SaleID == 0 {
		t.Fatalf("processing: %+v, %v", res, err)
	}
	var commissionID int64
	if err := b.db.QueryRow(`SELECT id FROM commissions WHERE sale_id = $1`, res.SaleID).Scan(&commissionID); err != nil {
		t.Fatal(err)
	}
	d := mustOK(t, do(t, b.app, req{"GET", "/api/operator/v1/commissions/" + itoa(commissionID), nil, operator()}), 200)
	if d["transaction_id"] != ev.Get("id") || d["amount"] != 14.7 || d["status"] != "pending" {
		t.Fatalf("commission = %v; want 30%% of 49.00 for the checkout session", d)
	}
}
