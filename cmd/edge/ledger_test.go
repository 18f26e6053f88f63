package main

import (
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/workers/redistest"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

// TestEdgeSaleAndRefund runs a sale and a refund through the real edge:
// the platform fee comes from PLATFORM_FEE_PERCENT, and the refund's
// notification is relayed to the namespaced notifications queue after
// commit.
func TestEdgeSaleAndRefund(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	rdb := redistest.Client(t)
	ns := redistest.Namespace(t, rdb)
	m := MustRunMain(t, map[string]string{
		"DATABASE_URL": db.URL, "REDIS_URL": redistest.URL(), "LISTEN_ADDR": "127.0.0.1:0",
		"OPERATOR_TOKEN": "op-token", "LOG_LEVEL": "error", "QUEUE_NAMESPACE": string(ns),
		"PLATFORM_FEE_PERCENT": "3.5",
	})
	base := "http://" + m.Addr()
	data := func(status int, body map[string]any) map[string]any {
		t.Helper()
		d, _ := body["data"].(map[string]any)
		if status >= 300 || d == nil {
			t.Fatalf("%d %v", status, body)
		}
		return d
	}
	ws := data(post(t, base+"/api/operator/v1/workspaces", "op-token", map[string]any{"name": "Acme", "owner_email": "o@acme.example"}))
	prog := data(post(t, base+"/api/operator/v1/programs", "op-token", map[string]any{
		"workspace_id": ws["id"], "name": "Acme", "domain": "acme.example", "commission_type": "percent", "commission_rate": 20}))
	pid := jsonNum(prog["id"].(float64))
	partner := data(post(t, base+"/api/operator/v1/programs/"+pid+"/partners", "op-token", map[string]any{"email": "p@p.example", "name": "P"}))
	link := data(post(t, base+"/api/operator/v1/programs/"+pid+"/links", "op-token", map[string]any{"partner_id": partner["id"], "code": "p-1"}))
	sess := data(post(t, base+"/api/operator/v1/users/"+jsonNum(ws["owner_user_id"].(float64))+"/sessions", "op-token", map[string]any{}))
	key := data(post(t, base+"/api/v1/programs/"+pid+"/api-key", sess["token"].(string), map[string]any{}))["api_key"].(string)

	click := ledger.NewClickID(time.Now())
	at, _ := ledger.ClickTime(click)
	if _, err := db.Exec(`INSERT INTO clicks (click_id, occurred_at, program_id, partner_id, link_id) VALUES ($1, $2, $3, $4, $5)`,
		click, at, int64(prog["id"].(float64)), int64(partner["id"].(float64)), int64(link["id"].(float64))); err != nil {
		t.Fatal(err)
	}
	status, body := post(t, base+"/api/v1/track/sale", key, map[string]any{"transaction_id": "txn_edge", "amount_cents": 10001, "click_id": click})
	if status != 200 || body["commission_id"] == nil {
		t.Fatalf("sale: %d %v", status, body)
	}
	var fee int64
	db.QueryRow(`SELECT amount_minor FROM platform_fees`).Scan(&fee)
	if fee != 350 { // 3.5% of 100.01 is 3.50035
		t.Fatalf("platform fee %d, want 350", fee)
	}
	status, body = post(t, base+"/api/v1/track/refund", key, map[string]any{"transaction_id": "txn_edge", "reason": "refund"})
	if status != 200 || body["status"] != "reversed" || body["deductionAmount"] != 20.0 {
		t.Fatalf("refund: %d %v", status, body)
	}
	var outboxID int64
	db.QueryRow(`SELECT id FROM outbox`).Scan(&outboxID)
	insp := asynq.NewInspectorFromRedisClient(rdb)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if info, err := insp.GetTaskInfo(ns.Queue(tasks.QueueNotifications), tasks.OutboxTaskID(outboxID)); err == nil {
			if info.Type != tasks.TypeNotificationDeliver {
				t.Fatalf("task type %s", info.Type)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the refund's notification was not relayed to Redis within 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
