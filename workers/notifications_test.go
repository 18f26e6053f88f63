package workers_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/notify"
	"github.com/partnertrack/partnertrack/workers"
	"github.com/partnertrack/partnertrack/workers/redistest"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

// TestNotificationsOncePerReversal reverses a commission already paid out.
// First the refund's transaction fails at commit (a deferred trigger the
// test installs): nothing is in the outbox, nothing reached Redis, nobody
// is notified. Then the same refund commits: the real worker stores the
// partner's notification and the advertiser's manual-review warning, once
// each, however often the messages are relayed, swept or delivered.
func TestNotificationsOncePerReversal(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	rdb := redistest.Client(t)
	ns := redistest.Namespace(t, rdb)
	ctx := context.Background()
	partnerID, txn, programID := mustCommission(t, db, 30)
	var commissionID int64
	db.QueryRow(`SELECT id FROM commissions`).Scan(&commissionID)
	balances := postgres.NewBalanceService(db.DB)
	if _, err := balances.MarkCommissionPaid(ctx, commissionID); err != nil {
		t.Fatal(err)
	}
	relay := postgres.NewOutbox(db.DB, &tasks.Enqueuer{Client: asynq.NewClientFromRedisClient(rdb), Namespace: ns})
	refunds := postgres.NewRefundService(db.DB, relay, discard)
	insp := asynq.NewInspectorFromRedisClient(rdb)
	queue := ns.Queue(tasks.QueueNotifications)
	count := func(query string, args ...any) int {
		t.Helper()
		var n int
		if err := db.QueryRow(query, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// Rolled back at commit, after the refund wrote its outbox rows.
	if _, err := db.Exec(`
		CREATE FUNCTION refuse_refund() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'refund refused by the test'; END $$;
		CREATE CONSTRAINT TRIGGER refuse_refund AFTER INSERT ON refunds
			DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refuse_refund();`); err != nil {
		t.Fatal(err)
	}
	in := ledger.RefundInput{ProgramID: programID, TransactionID: txn, Reason: "chargeback"}
	if _, err := refunds.ApplyRefund(ctx, in); err == nil || !strings.Contains(err.Error(), "refund refused by the test") {
		t.Fatalf("refund with the failing commit: %v", err)
	}
	refunds.WaitRelays()
	if n := count(`SELECT count(*) FROM outbox`); n != 0 {
		t.Fatalf("%d outbox rows after a rolled-back refund", n)
	}
	if info, err := insp.GetQueueInfo(queue); err == nil && info.Size != 0 {
		t.Fatalf("a rolled-back refund reached Redis: %+v", info)
	}
	if n := count(`SELECT count(*) FROM commissions WHERE status = 'paid'`); n != 1 {
		t.Fatal("the rolled-back refund changed the commission")
	}

	// Committed: relayed after commit, delivered by the real worker.
	if _, err := db.Exec(`DROP TRIGGER refuse_refund ON refunds`); err != nil {
		t.Fatal(err)
	}
	res, err := refunds.ApplyRefund(ctx, in)
	if err != nil || res.Status != ledger.RefundReversed {
		t.Fatalf("refund: %+v, %v", res, err)
	}
	refunds.WaitRelays()
	inbox := &notify.Inbox{Store: postgres.NewNotificationStore(db.DB)}
	srv := workers.NewServer(rdb, workers.ServerConfig{Queues: map[string]int{queue: 1}, Concurrency: 2, Logger: discard})
	if err := srv.Start(workers.NewMux(workers.Handlers{Inbox: inbox, Logger: discard})); err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	stored := func() int { return count(`SELECT count(*) FROM notifications`) }
	waitFor(t, "both notifications stored", func() bool { return stored() == 2 })

	// Everything again: a late relay, a sweep, the tasks run by hand.
	var msgs []ledger.OutboxMessage
	rows, err := db.Query(`SELECT id, task_type, queue, payload FROM outbox WHERE task_type = $1 ORDER BY id`, tasks.TypeNotificationDeliver)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var m ledger.OutboxMessage
		var payload []byte
		rows.Scan(&m.ID, &m.TaskType, &m.Queue, &payload)
		m.Payload = payload
		msgs = append(msgs, m)
	}
	rows.Close()
	if len(msgs) != 2 {
		t.Fatalf("%d notification rows, want 2", len(msgs))
	}
	if err := relay.Relay(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	if n, err := relay.Sweep(ctx, 0, 100); err != nil || n != 0 {
		t.Fatalf("sweep sent %d, %v; every row was sent", n, err)
	}
	h := &workers.NotificationHandler{Inbox: inbox}
	for _, m := range msgs {
		info, err := insp.GetTaskInfo(queue, tasks.OutboxTaskID(m.ID))
		if err != nil {
			t.Fatal(err)
		}
		if err := h.ProcessTask(ctx, asynq.NewTask(info.Type, info.Payload)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "queue drained", func() bool {
		q, err := insp.GetQueueInfo(queue)
		return err == nil && q.Pending == 0 && q.Active == 0
	})
	if n := stored(); n != 2 {
		t.Fatalf("%d notifications, want exactly 2", n)
	}
	store := postgres.NewNotificationStore(db.DB)
	partner, err := store.PartnerNotifications(ctx, partnerID, 10)
	if err != nil || len(partner) != 1 || partner[0].Kind != ledger.NoticeCommissionReversed || partner[0].Data["reason"] != "chargeback" ||
		!strings.Contains(partner[0].Body, "chargeback") {
		t.Fatalf("partner notifications %+v, %v", partner, err)
	}
	advertiser, err := store.ProgramNotifications(ctx, programID, 10)
	if err != nil || len(advertiser) != 1 || advertiser[0].Kind != ledger.NoticeManualReview {
		t.Fatalf("advertiser notifications %+v, %v", advertiser, err)
	}

	// A retry of the refund is skipped and notifies nobody.
	if res, err := refunds.ApplyRefund(ctx, in); err != nil || res.Status != ledger.RefundSkipped {
		t.Fatalf("second refund: %+v, %v", res, err)
	}
	if n := count(`SELECT count(*) FROM outbox`); n != 2 {
		t.Fatalf("%d outbox rows after a skipped refund, want still 2", n)
	}
}
