package ingest

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/notify"
	"github.com/partnertrack/partnertrack/notify/webhooktest"
)

// TestWebhookTestEventIsDeliveredAndLogged: the dashboard's test event
// goes to the outbox, is delivered by the webhook sender as every event is
// (signed with the endpoint's secret), and shows in the endpoint's
// delivery log, one entry per message.
func TestWebhookTestEventIsDeliveredAndLogged(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	ctx := context.Background()
	receiver := webhooktest.NewReceiver(t, 503, 200)
	hooks := postgres.NewWebhookService(b.db.DB, nil) // the receiver listens on loopback
	e, err := hooks.CreateEndpoint(ctx, w.programID, ledger.WebhookInput{URL: ledger.Some(receiver.URL + "/hooks"),
		Events: ledger.Some([]string{ledger.EventSaleCreated})})
	if err != nil {
		t.Fatal(err)
	}
	base := "/api/v1/programs/" + itoa(w.programID) + "/webhooks/" + itoa(e.ID)

	r := do(t, b.app, req{"POST", base + "/test", nil, bearer(w.ownerToken)})
	d := mustOK(t, r, 202)
	if d["event_type"] != "webhook.test" || id(d["endpoint_id"]) != e.ID || r.Header.Get("X-RateLimit-Limit") != strconv.Itoa(limitWebhookTest) {
		t.Fatalf("queued %s", r.Raw)
	}
	outboxID := id(d["outbox_id"])
	var payload []byte
	if err := b.db.QueryRow(`SELECT payload FROM outbox WHERE id = $1 AND task_type = $2`, outboxID, ledger.OutboxTaskWebhook).Scan(&payload); err != nil {
		t.Fatal(err)
	}
	var m ledger.WebhookMessage
	if err := json.Unmarshal(payload, &m); err != nil || m.MessageID != d["message_id"] {
		t.Fatalf("outbox payload %s, %v", payload, err)
	}

	// No attempt yet: nothing in the log.
	if r := do(t, b.app, req{"GET", base + "/deliveries", nil, bearer(w.ownerToken)}); r.Status != 200 || string(r.Raw) != `{"data":[]}` {
		t.Fatalf("log before delivery: %s", r.Raw)
	}

	// The worker's sender: the first attempt meets a 503, the retry a 200.
	sender := notify.NewSender(notify.SenderConfig{Store: hooks, Guard: &notify.Guard{AllowPrivate: true}, Now: b.clock.Now})
	if err := sender.Deliver(ctx, m, 1); err == nil {
		t.Fatal("the 503 attempt succeeded")
	}
	if err := sender.Deliver(ctx, m, 2); err != nil {
		t.Fatal(err)
	}
	got := receiver.Requests()
	if len(got) != 2 || got[1].ID() != m.MessageID {
		t.Fatalf("receiver got %d requests", len(got))
	}
	if err := webhooktest.Verify(e.Secret, got[1].Header, got[1].Body, b.clock.Now()); err != nil {
		t.Fatalf("signature: %v", err)
	}
	var event struct {
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(got[1].Body, &event); err != nil || event.Type != "webhook.test" ||
		id(event.Data["program_id"]) != w.programID || event.Data["program_name"] != "Acme Pro" || event.Data["test"] != true {
		t.Fatalf("event %s, %v", got[1].Body, err)
	}

	r = do(t, b.app, req{"GET", base + "/deliveries?limit=10", nil, bearer(w.ownerToken)})
	list, _ := r.Body["data"].([]any)
	if r.Status != 200 || len(list) != 1 || r.Header.Get("X-RateLimit-Limit") != strconv.Itoa(limitWebhookLog) {
		t.Fatalf("log %d %s", r.Status, r.Raw)
	}
	entry := list[0].(map[string]any)
	if entry["message_id"] != m.MessageID || entry["event_type"] != "webhook.test" || entry["status"] != "succeeded" ||
		entry["attempts"] != 2.0 || entry["status_code"] != 200.0 || entry["error"] != nil || id(entry["endpoint_id"]) != e.ID {
		t.Fatalf("entry %v", entry)
	}
	// The endpoint listing shows the attempts too.
	r = do(t, b.app, req{"GET", "/api/v1/programs/" + itoa(w.programID) + "/webhooks", nil, bearer(w.ownerToken)})
	if ds := r.Body["data"].([]any)[0].(map[string]any)["deliveries"].([]any); len(ds) != 2 {
		t.Fatalf("listing %s", r.Raw)
	}
}

func TestWebhookDeliveryRoutesRefuse(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	other := MustWorld(t, b.app)
	admin := dashboardMemberToken(t, b, w, "admin")
	member := dashboardMemberToken(t, b, w, "member")
	ctx := context.Background()
	hooks := postgres.NewWebhookService(b.db.DB, nil)
	input := ledger.WebhookInput{URL: ledger.Some("https://93.184.215.14/hooks"), Events: ledger.Some([]string{ledger.EventSaleCreated})}
	e, err := hooks.CreateEndpoint(ctx, w.programID, input)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := hooks.CreateEndpoint(ctx, other.programID, input)
	if err != nil {
		t.Fatal(err)
	}
	gone, _ := hooks.CreateEndpoint(ctx, w.programID, input)
	if err := hooks.DeleteEndpoint(ctx, w.programID, gone.ID); err != nil {
		t.Fatal(err)
	}
	mine := "/api/v1/programs/" + itoa(w.programID) + "/webhooks/"
	outbox := func() int { return countRows(t, b, `SELECT count(*) FROM outbox`) }

	// An admin may do both.
	mustOK(t, do(t, b.app, req{"POST", mine + itoa(e.ID) + "/test", nil, bearer(admin)}), 202)
	if r := do(t, b.app, req{"GET", mine + itoa(e.ID) + "/deliveries", nil, bearer(admin)}); r.Status != 200 {
		t.Fatalf("admin's log: %d %s", r.Status, r.Raw)
	}

	for _, suffix := range []string{"/test", "/deliveries"} {
		method := "GET"
		if suffix == "/test" {
			method = "POST"
		}
		for _, tc := range []struct {
			desc    string
			path    string
			token   string
			status  int
			message string
		}{
			{"ErrMember", mine + itoa(e.ID), member, 403, ledger.MsgWebhookManage},
			{"ErrOtherTenantsProgram", "/api/v1/programs/" + itoa(other.programID) + "/webhooks/" + itoa(theirs.ID), w.ownerToken, 403,
				"you are not a member of this program's workspace"},
			{"ErrOtherTenantsEndpointThroughOwnProgram", mine + itoa(theirs.ID), w.ownerToken, 404, ledger.MsgWebhookNotFound},
			{"ErrDeletedEndpoint", mine + itoa(gone.ID), w.ownerToken, 404, ledger.MsgWebhookNotFound},
			{"ErrNoSuchEndpoint", mine + "999999", w.ownerToken, 404, ledger.MsgWebhookNotFound},
			{"ErrEndpointNotANumber", mine + "abc", w.ownerToken, 404, ledger.MsgWebhookNotFound},
			{"ErrNoSuchProgram", "/api/v1/programs/999999/webhooks/" + itoa(e.ID), w.ownerToken, 404, "program not found"},
			{"ErrNoToken", mine + itoa(e.ID), "", 401, "Authentication required"},
			{"ErrProgramKey", mine + itoa(e.ID), w.liveKey, 401, "invalid or expired token"},
		} {
			t.Run(method+tc.desc, func(t *testing.T) {
				before := outbox()
				var h map[string]string
				if tc.token != "" {
					h = bearer(tc.token)
				}
				assertError(t, do(t, b.app, req{method, tc.path + suffix, nil, h}), tc.status, tc.message)
				if after := outbox(); after != before {
					t.Fatalf("a refused request wrote %d outbox rows", after-before)
				}
			})
		}
	}
	t.Run("ErrLimit", func(t *testing.T) {
		for _, q := range []string{"0", "101", "abc", "-1", "1.5"} {
			assertError(t, do(t, b.app, req{"GET", mine + itoa(e.ID) + "/deliveries?limit=" + q, nil, bearer(w.ownerToken)}),
				400, ledger.MsgWebhookDeliveryLimit)
		}
	})
	t.Run("ErrTestEventsRateLimited", func(t *testing.T) {
		tok := dashboardMemberToken(t, b, w, "admin")
		for i := 1; i <= limitWebhookTest; i++ {
			mustOK(t, do(t, b.app, req{"POST", mine + itoa(e.ID) + "/test", nil, bearer(tok)}), 202)
		}
		before := outbox()
		r := do(t, b.app, req{"POST", mine + itoa(e.ID) + "/test", nil, bearer(tok)})
		if r.Status != 429 || outbox() != before {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
	})
}
