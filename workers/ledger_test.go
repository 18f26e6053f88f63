package workers_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/notify"
	"github.com/partnertrack/partnertrack/workers"
	"github.com/partnertrack/partnertrack/workers/redistest"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// mustClickWorld provisions a program (hold holdDays) with an enrolled
// partner, its link and a click in Postgres.
func mustClickWorld(t *testing.T, db *pgtest.DB, holdDays int64) (programID, partnerID int64, click string) {
	t.Helper()
	ctx := context.Background()
	ws, err := postgres.NewAccountService(db.DB).CreateWorkspace(ctx, "Acme", "owner@acme.example")
	if err != nil {
		t.Fatal(err)
	}
	p, err := postgres.NewProgramService(db.DB).CreateProgram(ctx, ws.ID, ledger.ProgramInput{
		Name: ledger.Some("Acme"), Domain: ledger.Some("acme.example"), CommissionType: ledger.Some("percent"),
		CommissionRate: ledger.Some(decimal.NewFromInt(20)), HoldDays: ledger.Some(holdDays),
	})
	if err != nil {
		t.Fatal(err)
	}
	partners := postgres.NewPartnerService(db.DB)
	partner, err := partners.EnrollPartner(ctx, p.ID, "pat@partner.example", "Pat")
	if err != nil {
		t.Fatal(err)
	}
	link, err := partners.CreateLink(ctx, p.ID, partner.ID, "pat", true)
	if err != nil {
		t.Fatal(err)
	}
	click = ledger.NewClickID(time.Now())
	at, _ := ledger.ClickTime(click)
	if _, err := db.Exec(`INSERT INTO clicks (click_id, occurred_at, program_id, partner_id, link_id) VALUES ($1, $2, $3, $4, $5)`,
		click, at, p.ID, partner.ID, link.ID); err != nil {
		t.Fatal(err)
	}
	return p.ID, partner.ID, click
}

// mustCommission provisions a program (hold holdDays) with a partner and a
// click, records a sale on it and returns the partner, the sale's
// transaction id and the program.
func mustCommission(t *testing.T, db *pgtest.DB, holdDays int64) (partnerID int64, txn string, programID int64) {
	t.Helper()
	programID, partnerID, click := mustClickWorld(t, db, holdDays)
	sales := postgres.NewSaleService(db.DB, postgres.SaleOptions{Logger: discard})
	res, err := sales.RecordSale(context.Background(), ledger.SaleRequest{ProgramID: programID, TransactionID: ledger.Some("txn_1"),
		AmountCents: ledger.Some(int64(10000)), ClickID: ledger.Some(click)})
	if err != nil || res.CommissionID == nil {
		t.Fatalf("sale: %+v, %v", res, err)
	}
	return partnerID, "txn_1", programID
}

// waitFor polls cond until it holds; the deadline only bounds a broken
// run, nothing here measures speed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30 s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestNotificationAfterRedisOutage refunds a sale while Redis is
// unreachable: the response is unaffected and the notification waits in
// the outbox; once Redis is back the sweep sends it and the real worker
// stores it, exactly once however often it is sent or delivered.
func TestNotificationAfterRedisOutage(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	rdb := redistest.Client(t)
	ns := redistest.Namespace(t, rdb)
	ctx := context.Background()
	partnerID, txn, programID := mustCommission(t, db, 30)

	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 50 * time.Millisecond})
	defer dead.Close()
	down := postgres.NewOutbox(db.DB, &tasks.Enqueuer{Client: asynq.NewClientFromRedisClient(dead), Namespace: ns})
	refunds := postgres.NewRefundService(db.DB, down, discard)
	res, err := refunds.ApplyRefund(ctx, ledger.RefundInput{ProgramID: programID, TransactionID: txn, AmountCents: 5000, Reason: "refund"})
	if err != nil || res.Status != ledger.RefundRefunded || res.DeductionMinor != 1000 {
		t.Fatalf("refund with Redis down: %+v, %v", res, err)
	}
	refunds.WaitRelays()
	var unsent int
	db.QueryRow(`SELECT count(*) FROM outbox WHERE sent_at IS NULL`).Scan(&unsent)
	if unsent != 1 {
		t.Fatalf("%d unsent outbox rows after the failed relay, want 1", unsent)
	}

	up := postgres.NewOutbox(db.DB, &tasks.Enqueuer{Client: asynq.NewClientFromRedisClient(rdb), Namespace: ns})
	if n, err := up.Sweep(ctx, 0, 100); err != nil || n != 1 {
		t.Fatalf("sweep with Redis back: %d, %v", n, err)
	}
	inbox := &notify.Inbox{Store: postgres.NewNotificationStore(db.DB)}
	srv := workers.NewServer(rdb, workers.ServerConfig{
		Queues: map[string]int{ns.Queue(tasks.QueueNotifications): 1}, Concurrency: 2, Logger: discard})
	if err := srv.Start(workers.NewMux(workers.Handlers{Inbox: inbox, Logger: discard})); err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()

	count := func() int {
		var n int
		db.QueryRow(`SELECT count(*) FROM notifications WHERE partner_id = $1`, partnerID).Scan(&n)
		return n
	}
	waitFor(t, "notification stored", func() bool { return count() == 1 })

	// The message sent again (a late relay) is the same task; the task
	// delivered again stores nothing.
	var msg ledger.OutboxMessage
	var payload []byte
	db.QueryRow(`SELECT id, task_type, queue, payload FROM outbox`).Scan(&msg.ID, &msg.TaskType, &msg.Queue, &payload)
	msg.Payload = payload
	if err := up.Relay(ctx, []ledger.OutboxMessage{msg}); err != nil {
		t.Fatal(err)
	}
	insp := asynq.NewInspectorFromRedisClient(rdb)
	waitFor(t, "queue drained", func() bool {
		q, err := insp.GetQueueInfo(ns.Queue(tasks.QueueNotifications))
		return err == nil && q.Pending == 0 && q.Active == 0
	})
	task, err := insp.GetTaskInfo(ns.Queue(tasks.QueueNotifications), tasks.OutboxTaskID(msg.ID))
	if err != nil {
		t.Fatal(err)
	}
	h := &workers.NotificationHandler{Inbox: inbox}
	if err := h.ProcessTask(ctx, asynq.NewTask(task.Type, task.Payload)); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 {
		t.Fatalf("%d notifications, want exactly 1", n)
	}
	list, err := postgres.NewNotificationStore(db.DB).PartnerNotifications(ctx, partnerID, 10)
	if err != nil || len(list) != 1 || list[0].Kind != ledger.NoticeCommissionRefunded || list[0].OutboxID != msg.ID ||
		!strings.Contains(list[0].Body, "refund") {
		t.Fatalf("notifications = %+v, %v", list, err)
	}
}

func TestNotificationHandlerRefusesBadPayloads(t *testing.T) {
	t.Parallel()
	h := &workers.NotificationHandler{Inbox: &notify.Inbox{}}
	for _, payload := range []string{`not json`, `{"outbox_id": 1, "data": {"kind": "x", "title": "t", "body": "b"}}`} {
		err := h.ProcessTask(context.Background(), asynq.NewTask(tasks.TypeNotificationDeliver, []byte(payload)))
		if err == nil || !strings.Contains(err.Error(), asynq.SkipRetry.Error()) {
			t.Fatalf("payload %s: err = %v, want a SkipRetry", payload, err)
		}
	}
}

func TestCommissionApprovalHandler(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	partnerID, _, _ := mustCommission(t, db, 0)
	balances := postgres.NewBalanceService(db.DB)
	h := &workers.CommissionApprovalHandler{Commissions: balances, Logger: discard}
	for i := 0; i < 2; i++ {
		if err := h.ProcessTask(context.Background(), tasks.NewCommissionsApproveTask()); err != nil {
			t.Fatal(err)
		}
	}
	got, err := balances.Balances(context.Background(), partnerID)
	if err != nil || len(got) != 1 || got[0].AmountMinor != 2000 {
		t.Fatalf("balances = %+v, %v; want 2000 credited once", got, err)
	}
}

func TestNotificationQueueMatchesLedger(t *testing.T) {
	t.Parallel()
	if ledger.OutboxQueueNotifications != tasks.QueueNotifications {
		t.Fatalf("the ledger writes notifications for queue %q, the workers serve %q",
			ledger.OutboxQueueNotifications, tasks.QueueNotifications)
	}
}
