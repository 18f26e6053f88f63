package main

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/ledger/stripetest"
	"github.com/partnertrack/partnertrack/workers/redistest"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

// TestEdgeReceivesStripeEvents runs the real edge with
// STRIPE_WEBHOOK_SECRET: a signed event is stored and queued on the
// namespaced processor queue under its own id; an unsigned one is refused.
func TestEdgeReceivesStripeEvents(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	rdb := redistest.Client(t)
	ns := redistest.Namespace(t, rdb)
	m := MustRunMain(t, map[string]string{
		"DATABASE_URL": db.URL, "REDIS_URL": redistest.URL(), "LISTEN_ADDR": "127.0.0.1:0",
		"LOG_LEVEL": "error", "QUEUE_NAMESPACE": string(ns), "STRIPE_WEBHOOK_SECRET": "whsec_edge_test",
	})
	url := "http://" + m.Addr() + "/api/v1/webhooks/stripe"
	ev := stripetest.CheckoutCompleted("acct_1SZwOrPBUlX7cw67")
	payload := ev.Payload()
	deliver := func(header string) int {
		req, _ := http.NewRequest("POST", url, bytes.NewReader(payload))
		req.Header.Set("Content-Type", "application/json")
		if header != "" {
			req.Header.Set("Stripe-Signature", header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if status := deliver(""); status != 400 {
		t.Fatalf("unsigned: %d, want 400", status)
	}
	if status := deliver(stripetest.Sign(payload, "whsec_edge_test", time.Now())); status != 200 {
		t.Fatalf("signed: %d, want 200", status)
	}
	info, err := asynq.NewInspectorFromRedisClient(rdb).GetTaskInfo(ns.Queue(tasks.QueueProcessor), ev.ID)
	if err != nil || info.Type != tasks.TypeProcessorEvent {
		t.Fatalf("queued task: %+v, %v", info, err)
	}
	var queued bool
	if err := db.QueryRow(`SELECT enqueued_at IS NOT NULL FROM processor_events WHERE event_id = $1`, ev.ID).Scan(&queued); err != nil || !queued {
		t.Fatalf("stored event queued: %v, %v", queued, err)
	}
}
