package notify_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/sony/gobreaker/v2"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/notify"
	"github.com/partnertrack/partnertrack/notify/webhooktest"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

type bundle struct {
	db       *pgtest.DB
	webhooks *postgres.WebhookService
	program  *ledger.Program
}

func setup(t *testing.T) *bundle {
	t.Helper()
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	ws, err := postgres.NewAccountService(db.DB).CreateWorkspace(ctx, "Acme", "owner@acme.example")
	if err != nil {
		t.Fatal(err)
	}
	p, err := postgres.NewProgramService(db.DB).CreateProgram(ctx, ws.ID, ledger.ProgramInput{
		Name: ledger.Some("Acme"), Domain: ledger.Some("acme.example"), CommissionType: ledger.Some("percent"),
		CommissionRate: ledger.Some(decimal.NewFromInt(20)),
	})
	if err != nil {
		t.Fatal(err)
	}
	// Registration checks nothing here: these tests deliver to 127.0.0.1.
	return &bundle{db: db, webhooks: postgres.NewWebhookService(db.DB, nil), program: p}
}

// MustEndpoint registers an endpoint for url.
func (b *bundle) MustEndpoint(tb testing.TB, url string) *ledger.WebhookEndpoint {
	tb.Helper()
	e, err := b.webhooks.CreateEndpoint(context.Background(), b.program.ID, ledger.WebhookInput{
		URL: ledger.Some(url), Events: ledger.Some([]string{ledger.EventSaleCreated})})
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

func message(endpointID int64) ledger.WebhookMessage {
	now := time.Now()
	body, _ := ledger.WebhookBody(ledger.EventSaleCreated, now, map[string]any{"sale_id": 7, "amount_cents": 1000})
	return ledger.WebhookMessage{EndpointID: endpointID, MessageID: ledger.NewWebhookMessageID(now),
		EventType: ledger.EventSaleCreated, Body: body, CreatedAt: now}
}

// attempts returns the endpoint's delivery log, oldest first.
func (b *bundle) attempts(tb testing.TB, endpointID int64) []ledger.WebhookAttempt {
	tb.Helper()
	list, err := b.webhooks.Endpoints(context.Background(), b.program.ID, 100)
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range list {
		if e.ID == endpointID {
			out := make([]ledger.WebhookAttempt, 0, len(e.Deliveries))
			for i := len(e.Deliveries) - 1; i >= 0; i-- {
				out = append(out, e.Deliveries[i])
			}
			return out
		}
	}
	tb.Fatalf("endpoint %d not listed", endpointID)
	return nil
}

func (b *bundle) sender(cfg notify.SenderConfig) *notify.Sender {
	cfg.Store = b.webhooks
	if cfg.Guard == nil {
		cfg.Guard = &notify.Guard{AllowPrivate: true}
	}
	cfg.Logger = discard
	return notify.NewSender(cfg)
}

// TestSenderSignsVerifiably delivers a message and checks it the way a
// receiver does: the signature verifies with the endpoint's secret by the
// published algorithm, the body is the event, the attempt is logged.
func TestSenderSignsVerifiably(t *testing.T) {
	b := setup(t)
	rcv := webhooktest.NewReceiver(t, 204)
	e := b.MustEndpoint(t, rcv.URL+"/hooks?source=partnertrack")
	s := b.sender(notify.SenderConfig{})
	m := message(e.ID)
	if err := s.Deliver(context.Background(), m, 1); err != nil {
		t.Fatal(err)
	}
	got := rcv.Requests()
	if len(got) != 1 {
		t.Fatalf("%d requests, want 1", len(got))
	}
	r := got[0]
	if err := webhooktest.Verify(e.Secret, r.Header, r.Body, time.Now()); err != nil {
		t.Fatalf("signature does not verify: %v (headers %v)", err, r.Header)
	}
	if err := webhooktest.Verify("whsec_"+base64.StdEncoding.EncodeToString([]byte("another secret of 32 bytes......")), r.Header, r.Body, time.Now()); err == nil {
		t.Fatal("the signature verifies with another secret")
	}
	if r.Header.Get("webhook-id") != m.MessageID || r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("headers %v", r.Header)
	}
	var event struct {
		Type      string         `json:"type"`
		Timestamp string         `json:"timestamp"`
		Data      map[string]any `json:"data"`
	}
	if err := json.Unmarshal(r.Body, &event); err != nil || event.Type != ledger.EventSaleCreated ||
		event.Data["sale_id"] != 7.0 || event.Timestamp == "" {
		t.Fatalf("body %s: %+v, %v", r.Body, event, err)
	}
	log := b.attempts(t, e.ID)
	if len(log) != 1 || *log[0].StatusCode != 204 || log[0].Attempt != 1 || log[0].MessageID != m.MessageID || !log[0].Succeeded() {
		t.Fatalf("delivery log %+v", log)
	}
}

// TestSenderRetryKeepsID fails the first attempt: the retry carries the
// same webhook-id and body, a signature that verifies, and is logged as
// attempt 2; once delivered, the message is never sent again.
func TestSenderRetryKeepsID(t *testing.T) {
	b := setup(t)
	rcv := webhooktest.NewReceiver(t, 500, 200)
	e := b.MustEndpoint(t, rcv.URL)
	s := b.sender(notify.SenderConfig{})
	m := message(e.ID)
	ctx := context.Background()
	err := s.Deliver(ctx, m, 1)
	var se *notify.StatusError
	if !errors.As(err, &se) || se.Code != 500 || notify.IsBreakerOpen(err) || errors.Is(err, notify.ErrFinal) {
		t.Fatalf("first attempt: %v, want a retryable HTTP 500", err)
	}
	if err := s.Deliver(ctx, m, 2); err != nil {
		t.Fatalf("second attempt: %v", err)
	}
	if err := s.Deliver(ctx, m, 3); err != nil {
		t.Fatalf("a redelivery of a delivered message: %v", err)
	}
	got := rcv.Requests()
	if len(got) != 2 {
		t.Fatalf("%d requests, want 2 (the delivered message is not sent again)", len(got))
	}
	for i, r := range got {
		if r.Header.Get("webhook-id") != m.MessageID || string(r.Body) != m.Body {
			t.Fatalf("request %d: id %s, body %s", i, r.Header.Get("webhook-id"), r.Body)
		}
		if err := webhooktest.Verify(e.Secret, r.Header, r.Body, time.Now()); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	log := b.attempts(t, e.ID)
	if len(log) != 2 || *log[0].StatusCode != 500 || log[0].Attempt != 1 || log[0].Succeeded() ||
		*log[1].StatusCode != 200 || log[1].Attempt != 2 || log[0].MessageID != log[1].MessageID {
		t.Fatalf("delivery log %+v", log)
	}
}

// TestSenderBreaker kills one destination: after BreakerFailures failures
// its breaker opens and deliveries to it return a BreakerOpenError without
// a request, while another destination is still delivered. A receiver
// answering 4xx is alive and does not trip its breaker.
func TestSenderBreaker(t *testing.T) {
	b := setup(t)
	dead, live, picky := webhooktest.NewReceiver(t, 503), webhooktest.NewReceiver(t, 200), webhooktest.NewReceiver(t, 400)
	eDead, eLive, ePicky := b.MustEndpoint(t, dead.URL), b.MustEndpoint(t, live.URL), b.MustEndpoint(t, picky.URL)
	var mu sync.Mutex
	var changes []string
	s := b.sender(notify.SenderConfig{BreakerFailures: 3, BreakerTimeout: time.Hour,
		OnBreakerChange: func(dest string, from, to gobreaker.State) {
			mu.Lock()
			changes = append(changes, dest+" "+to.String())
			mu.Unlock()
		}})
	ctx := context.Background()
	for i := 0; i < 6; i++ {
		err := s.Deliver(ctx, message(eDead.ID), 1)
		var open *notify.BreakerOpenError
		switch {
		case i < 3 && notify.IsBreakerOpen(err):
			t.Fatalf("delivery %d: breaker open before 3 failures", i)
		case i >= 3 && !errors.As(err, &open):
			t.Fatalf("delivery %d: %v, want the breaker open", i, err)
		case i >= 3 && (open.RetryAfter < time.Hour || open.Destination != notify.Destination(dead.URL)):
			t.Fatalf("delivery %d: %+v", i, open)
		}
		if err := s.Deliver(ctx, message(eLive.ID), 1); err != nil {
			t.Fatalf("live delivery %d: %v", i, err)
		}
		if err := s.Deliver(ctx, message(ePicky.ID), 1); err == nil || notify.IsBreakerOpen(err) {
			t.Fatalf("picky delivery %d: %v, want a failure with the breaker closed", i, err)
		}
	}
	if n := len(dead.Requests()); n != 3 {
		t.Fatalf("the dead receiver got %d requests, want 3", n)
	}
	if n := len(live.Requests()); n != 6 {
		t.Fatalf("the live receiver got %d requests, want 6", n)
	}
	if n := len(picky.Requests()); n != 6 {
		t.Fatalf("the 4xx receiver got %d requests, want 6", n)
	}
	states := s.BreakerStates()
	if states[notify.Destination(dead.URL)] != gobreaker.StateOpen || states[notify.Destination(live.URL)] != gobreaker.StateClosed ||
		states[notify.Destination(picky.URL)] != gobreaker.StateClosed {
		t.Fatalf("breaker states %v", states)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(changes) != 1 || changes[0] != notify.Destination(dead.URL)+" open" {
		t.Fatalf("state changes %v", changes)
	}
	if n := len(b.attempts(t, eDead.ID)); n != 3 {
		t.Fatalf("%d attempts logged for the dead endpoint, want 3 (deferred ones are not attempts)", n)
	}
}

// TestSenderRefusesPrivateTargets registers endpoints on 127.0.0.1 (as if
// their DNS changed after registration) and delivers with private targets
// refused: the dialer's hook refuses the address after resolution, no
// request arrives, the refusal is logged and final.
func TestSenderRefusesPrivateTargets(t *testing.T) {
	b := setup(t)
	rcv := webhooktest.NewReceiver(t, 200)
	port := strconv.Itoa(rcv.Listener.Addr().(*net.TCPAddr).Port)
	s := b.sender(notify.SenderConfig{Guard: &notify.Guard{}})
	for _, url := range []string{rcv.URL, "http://localhost:" + port + "/by-name"} {
		e := b.MustEndpoint(t, url)
		err := s.Deliver(context.Background(), message(e.ID), 1)
		if !errors.Is(err, notify.ErrFinal) || !strings.Contains(err.Error(), "refused") {
			t.Fatalf("%s: %v, want a final refusal", url, err)
		}
		log := b.attempts(t, e.ID)
		if len(log) != 1 || log[0].StatusCode != nil || log[0].Error != notify.ReasonBlocked {
			t.Fatalf("%s: delivery log %+v", url, log)
		}
	}
	if n := len(rcv.Requests()); n != 0 {
		t.Fatalf("the private receiver got %d requests", n)
	}
	if st := s.BreakerStates()[notify.Destination(rcv.URL)]; st != gobreaker.StateClosed {
		t.Fatalf("refusals moved the breaker to %s", st)
	}
}

// TestSenderFollowsNoRedirect: a redirect is the receiver's answer (a
// failed delivery), never a new destination.
func TestSenderFollowsNoRedirect(t *testing.T) {
	b := setup(t)
	target := webhooktest.NewReceiver(t, 200)
	redirect := httptest.NewServer(http.RedirectHandler(target.URL+"/internal", http.StatusFound))
	t.Cleanup(redirect.Close)
	e := b.MustEndpoint(t, redirect.URL)
	err := b.sender(notify.SenderConfig{}).Deliver(context.Background(), message(e.ID), 1)
	var se *notify.StatusError
	if !errors.As(err, &se) || se.Code != http.StatusFound {
		t.Fatalf("err = %v, want the 302 as a failure", err)
	}
	if n := len(target.Requests()); n != 0 {
		t.Fatalf("the redirect target got %d requests", n)
	}
}

// TestSenderDropsDeletedEndpoint: a message still queued for a deleted
// endpoint is dropped without a request.
func TestSenderDropsDeletedEndpoint(t *testing.T) {
	b := setup(t)
	rcv := webhooktest.NewReceiver(t, 200)
	e := b.MustEndpoint(t, rcv.URL)
	if err := b.webhooks.DeleteEndpoint(context.Background(), b.program.ID, e.ID); err != nil {
		t.Fatal(err)
	}
	var outcomes []string
	s := b.sender(notify.SenderConfig{OnAttempt: func(o string, _ time.Duration) { outcomes = append(outcomes, o) }})
	if err := s.Deliver(context.Background(), message(e.ID), 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Deliver(context.Background(), message(999999), 1); err != nil {
		t.Fatal(err)
	}
	if n := len(rcv.Requests()); n != 0 || len(outcomes) != 2 || outcomes[0] != notify.OutcomeDropped || outcomes[1] != notify.OutcomeDropped {
		t.Fatalf("%d requests, outcomes %v", n, outcomes)
	}
}
