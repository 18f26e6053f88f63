package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/notify/webhooktest"
	"github.com/partnertrack/partnertrack/workers/redistest"
)

// metric returns the value of the series named exactly line (name and
// labels) in a Prometheus text exposition, or -1.
func metric(text, series string) float64 {
	for _, l := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(l, series+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}

// waitMetrics polls the metrics at url until every series has its wanted
// value (counters the worker and asynq bump after a task's effects are
// stored), and reports those that never got it within 60 s.
func waitMetrics(tb testing.TB, who, url string, want map[string]float64) string {
	tb.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		text := get(tb, url)
		var wrong []string
		for series, v := range want {
			if got := metric(text, series); got != v {
				wrong = append(wrong, fmt.Sprintf("%s %s = %v, want %v", who, series, got, v))
			}
		}
		if len(wrong) == 0 {
			return text
		}
		if time.Now().After(deadline) {
			sort.Strings(wrong)
			tb.Fatalf("not within 60 s:\n%s", strings.Join(wrong, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func get(tb testing.TB, url string) string {
	tb.Helper()
	resp, err := http.Get(url)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		tb.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}

// TestEndToEndWebhooksAndNotifications runs the edge and the real worker
// binary's program (webhooks and notifications queues) against one
// database: a brand registers a webhook, a sale and a refund go through the
// edge, the worker delivers signed events to the brand's receiver and the
// partner's notification to the inbox, and both processes expose the
// metrics of it.
func TestEndToEndWebhooksAndNotifications(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	rdb := redistest.Client(t)
	ns := redistest.Namespace(t, rdb)
	env := func() map[string]string {
		return testEnv(db, ns, "OPERATOR_TOKEN", "op-token", "WEBHOOK_ALLOW_PRIVATE_TARGETS", "true")
	}
	base := startEdge(t, env())
	worker := MustRunWorker(t, env(), "--queues", "webhooks,notifications", "--scheduler=false",
		"--concurrency", "2", "--metrics-addr", "127.0.0.1:0")

	rcv := webhooktest.NewReceiver(t)
	op := "op-token"
	must := func(status int, body map[string]any) map[string]any { return data(t, status, body) }
	ws := must(call(t, "POST", base+"/api/operator/v1/workspaces", op, map[string]any{"name": "Acme", "owner_email": "o@acme.example"}))
	prog := must(call(t, "POST", base+"/api/operator/v1/programs", op, map[string]any{
		"workspace_id": ws["id"], "name": "Acme", "domain": "acme.example", "commission_type": "percent", "commission_rate": 20}))
	pid := num(prog["id"])
	partner := must(call(t, "POST", base+"/api/operator/v1/programs/"+pid+"/partners", op, map[string]any{"email": "p@p.example", "name": "P"}))
	link := must(call(t, "POST", base+"/api/operator/v1/programs/"+pid+"/links", op, map[string]any{"partner_id": partner["id"], "code": "p-1"}))
	owner := must(call(t, "POST", base+"/api/operator/v1/users/"+num(ws["owner_user_id"])+"/sessions", op, nil))["token"].(string)
	key := must(call(t, "POST", base+"/api/v1/programs/"+pid+"/api-key", owner, nil))["api_key"].(string)
	hook := must(call(t, "POST", base+"/api/v1/programs/"+pid+"/webhooks", owner, map[string]any{
		"url": rcv.URL + "/partnertrack", "events": []string{"sale.created", "commission.created", "commission.refunded"}}))
	secret := hook["secret"].(string)

	click := ledger.NewClickID(time.Now())
	at, _ := ledger.ClickTime(click)
	if _, err := db.Exec(`INSERT INTO clicks (click_id, occurred_at, program_id, partner_id, link_id) VALUES ($1, $2, $3, $4, $5)`,
		click, at, pid, num(partner["id"]), num(link["id"])); err != nil {
		t.Fatal(err)
	}
	status, sale := call(t, "POST", base+"/api/v1/track/sale", key, map[string]any{"transaction_id": "txn_e2e", "amount_cents": 12000, "click_id": click})
	if status != 200 {
		t.Fatalf("sale: %d %v", status, sale)
	}
	waitUntil(t, "sale.created and commission.created delivered", func() bool { return len(rcv.Requests()) == 2 })
	status, refund := call(t, "POST", base+"/api/v1/track/refund", key, map[string]any{"transaction_id": "txn_e2e", "refund_amount_cents": 6000, "refund_reason": "returned one item"})
	if status != 200 || refund["status"] != "refunded" {
		t.Fatalf("refund: %d %v", status, refund)
	}
	waitUntil(t, "commission.refunded delivered", func() bool { return len(rcv.Requests()) == 3 })

	events := map[string]map[string]any{}
	for _, r := range rcv.Requests() {
		if err := webhooktest.Verify(secret, r.Header, r.Body, time.Now()); err != nil {
			t.Fatalf("%s does not verify with the endpoint's secret: %v", r.Body, err)
		}
		var e struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		if err := json.Unmarshal(r.Body, &e); err != nil {
			t.Fatal(err)
		}
		events[e.Type] = e.Data
	}
	if events["sale.created"]["transaction_id"] != "txn_e2e" || events["commission.created"]["amount"] != 24.0 ||
		events["commission.refunded"]["refund"].(map[string]any)["reason"] != "returned one item" {
		t.Fatalf("events %v", events)
	}
	waitUntil(t, "the partner's notification stored", func() bool {
		_, body := call(t, "GET", base+"/api/operator/v1/partners/"+num(partner["id"])+"/notifications", op, nil)
		list, _ := body["data"].([]any)
		return len(list) == 1 && list[0].(map[string]any)["kind"] == ledger.NoticeCommissionRefunded
	})
	// The receiver answers before the worker writes the delivery log, so
	// the log is waited for, not read as soon as the third request came.
	var listed map[string]any
	var ds []any
	waitUntil(t, "three entries in the delivery log", func() bool {
		_, listed = call(t, "GET", base+"/api/v1/programs/"+pid+"/webhooks", owner, nil)
		endpoints, _ := listed["data"].([]any)
		if len(endpoints) != 1 {
			return false
		}
		ds, _ = endpoints[0].(map[string]any)["deliveries"].([]any)
		return len(ds) >= 3
	})
	if len(ds) != 3 || ds[0].(map[string]any)["status_code"] != 200.0 || ds[0].(map[string]any)["attempt"] != 1.0 {
		t.Fatalf("delivery log %v", listed)
	}

	// The worker's metrics: outcomes, and the breaker of the receiver.
	// The task counters move once the handler returned, after its
	// effects: they are waited for too.
	dest := "http://" + strings.TrimPrefix(rcv.URL, "http://")
	wm := waitMetrics(t, "worker", "http://"+worker.MetricsAddr()+"/metrics", map[string]float64{
		`partnertrack_webhook_deliveries_total{outcome="delivered"}`:                     3,
		`partnertrack_tasks_processed_total{outcome="succeeded",type="webhook:deliver"}`: 3,
		`partnertrack_breaker_state{breaker="` + dest + `"}`:                             0,
		`partnertrack_breaker_state{breaker="outbox-enqueue"}`:                           0,
	})
	notified := regexp.MustCompile(`partnertrack_tasks_processed_total\{outcome="succeeded",type="notification:deliver"\} [1-9]`)
	waitUntil(t, "the worker's metrics count the notification task", func() bool {
		wm = get(t, "http://"+worker.MetricsAddr()+"/metrics")
		return notified.MatchString(wm)
	})

	// The edge's metrics: requests by route, queues read from asynq, the
	// outbox lag (a row left unsent ten minutes ago), the Redis breaker.
	if _, err := db.Exec(`INSERT INTO outbox (task_type, queue, payload, created_at) VALUES ('noop', 'maintenance', '{}', now() - interval '10 minutes')`); err != nil {
		t.Fatal(err)
	}
	// asynq counts a task processed once the worker acknowledged it, and
	// the relay marks outbox rows sent after it enqueued them: waited for.
	em := waitMetrics(t, "edge", base+"/metrics", map[string]float64{
		`partnertrack_http_requests_total{method="POST",route="/api/v1/track/sale",status="200"}`:            1,
		`partnertrack_http_requests_total{method="POST",route="/api/v1/programs/:id/webhooks",status="201"}`: 1,
		`partnertrack_queue_processed_total{queue="` + string(ns) + `webhooks"}`:                             3,
		`partnertrack_queue_tasks{queue="` + string(ns) + `webhooks",state="pending"}`:                       0,
		`partnertrack_queue_failed_total{queue="` + string(ns) + `webhooks"}`:                                0,
		`partnertrack_outbox_unsent_messages`:                                                                1,
		`partnertrack_breaker_state{breaker="outbox-enqueue"}`:                                               0,
		`partnertrack_breaker_state{breaker="traffic-queue"}`:                                                0,
	})
	if lag := metric(em, "partnertrack_outbox_oldest_unsent_age_seconds"); lag < 590 {
		t.Errorf("outbox lag %v, want about 600 s", lag)
	}
	for _, name := range []string{"partnertrack_http_request_duration_seconds_bucket", "partnertrack_queue_latency_seconds", "partnertrack_queue_paused"} {
		if !strings.Contains(em, name) {
			t.Errorf("edge metrics lack %s", name)
		}
	}
}
