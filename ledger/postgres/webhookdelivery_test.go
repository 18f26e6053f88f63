package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/workers/redistest"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

// mustEndpoint registers an endpoint of the program.
func mustEndpoint(tb testing.TB, b *testBundle, programID int64) *ledger.WebhookEndpoint {
	tb.Helper()
	e, err := postgres.NewWebhookService(b.db.DB, nil).CreateEndpoint(context.Background(), programID, ledger.WebhookInput{
		URL: ledger.Some("https://93.184.215.14/hooks"), Events: ledger.Some([]string{ledger.EventSaleCreated})})
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

func TestWebhookDeliveries(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	p := MustProgram(t, b)
	e, other := mustEndpoint(t, b, p.ID), mustEndpoint(t, b, p.ID)
	hooks := postgres.NewWebhookService(b.db.DB, nil)
	svc := postgres.NewWebhookDeliveryService(b.db.DB, nil, discard)
	start := time.Now().UTC().Truncate(time.Millisecond)
	at := start
	attempt := func(endpoint int64, msg string, n, status int) {
		t.Helper()
		at = at.Add(time.Second)
		a := ledger.WebhookAttempt{EndpointID: endpoint, MessageID: msg, EventType: ledger.EventSaleCreated, Attempt: n,
			LatencyMS: 10 * n, CreatedAt: at}
		if status > 0 {
			a.StatusCode = &status
		} else {
			a.Error = "connection refused"
		}
		if status >= 300 {
			a.Error = fmt.Sprintf("receiver answered HTTP %d", status)
		}
		if err := hooks.LogWebhookAttempt(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	// msg_a fails twice and then succeeds; msg_b fails once with no
	// answer; msg_c succeeds at once; msg_a's last attempt comes after
	// msg_b's first, so it is listed first. Another endpoint's message
	// is never listed.
	attempt(e.ID, "msg_a", 1, 502)
	attempt(e.ID, "msg_c", 1, 200)
	attempt(e.ID, "msg_a", 2, 503)
	attempt(e.ID, "msg_b", 1, 0)
	attempt(other.ID, "msg_x", 1, 200)
	attempt(e.ID, "msg_a", 3, 204)

	t.Run("OKOneEntryPerMessageLastAttemptedFirst", func(t *testing.T) {
		list, err := svc.Deliveries(ctx, p.ID, e.ID, 50)
		if err != nil || len(list) != 3 {
			t.Fatalf("deliveries %+v, %v", list, err)
		}
		a, bb, c := list[0], list[1], list[2]
		if a.MessageID != "msg_a" || a.Attempts != 3 || !a.Succeeded || a.Status() != ledger.DeliverySucceeded ||
			*a.StatusCode != 204 || a.Error != "" || a.LatencyMS != 30 ||
			!a.FirstAttempt.Equal(start.Add(time.Second)) || !a.LastAttemptAt.Equal(start.Add(6*time.Second)) {
			t.Errorf("msg_a %+v", a)
		}
		if bb.MessageID != "msg_b" || bb.Attempts != 1 || bb.Succeeded || bb.StatusCode != nil || bb.Error != "connection refused" {
			t.Errorf("msg_b %+v", bb)
		}
		if c.MessageID != "msg_c" || c.Attempts != 1 || !c.Succeeded || *c.StatusCode != 200 || c.EndpointID != e.ID {
			t.Errorf("msg_c %+v", c)
		}
	})
	t.Run("OKLimit", func(t *testing.T) {
		list, err := svc.Deliveries(ctx, p.ID, e.ID, 1)
		if err != nil || len(list) != 1 || list[0].MessageID != "msg_a" || list[0].Attempts != 3 {
			t.Fatalf("deliveries %+v, %v", list, err)
		}
	})
	t.Run("OKManyRetriesOfOneMessageHideNoOther", func(t *testing.T) {
		// More failed attempts of one message after msg_a than one read
		// of the log takes: the listing of two still finds msg_a behind
		// them, and counts them all.
		if _, err := b.db.Exec(`
			INSERT INTO webhook_deliveries (endpoint_id, message_id, event_type, attempt, status_code, latency_ms, created_at)
			SELECT $1, 'msg_d', 'sale.created', n, 500, 5, $2::timestamptz + n * interval '1 millisecond'
			FROM generate_series(1, 1200) AS n`, e.ID, at); err != nil {
			t.Fatal(err)
		}
		list, err := svc.Deliveries(ctx, p.ID, e.ID, 2)
		if err != nil || len(list) != 2 || list[0].MessageID != "msg_d" || list[0].Attempts != 1200 || list[1].MessageID != "msg_a" {
			t.Fatalf("deliveries %+v, %v", list, err)
		}
	})
	t.Run("OKNoDeliveriesYet", func(t *testing.T) {
		fresh := mustEndpoint(t, b, p.ID)
		if list, err := svc.Deliveries(ctx, p.ID, fresh.ID, 50); err != nil || list == nil || len(list) != 0 {
			t.Fatalf("deliveries %+v, %v", list, err)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		q := MustProgramIn(t, b, "Other Inc", "other@other.example")
		_, err := svc.Deliveries(ctx, q.ID, e.ID, 50)
		assertCode(t, err, ledger.ENotFound, ledger.MsgWebhookNotFound)
		_, err = svc.Deliveries(ctx, p.ID, 999999, 50)
		assertCode(t, err, ledger.ENotFound, ledger.MsgWebhookNotFound)
		gone := mustEndpoint(t, b, p.ID)
		if err := hooks.DeleteEndpoint(ctx, p.ID, gone.ID); err != nil {
			t.Fatal(err)
		}
		_, err = svc.Deliveries(ctx, p.ID, gone.ID, 50)
		assertCode(t, err, ledger.ENotFound, ledger.MsgWebhookNotFound)
	})
}

// MustProgramIn creates a program in a new workspace of its own.
func MustProgramIn(tb testing.TB, b *testBundle, workspace, owner string) *ledger.Program {
	tb.Helper()
	ctx := context.Background()
	ws, err := b.accounts.CreateWorkspace(ctx, workspace, owner)
	if err != nil {
		tb.Fatal(err)
	}
	p, err := b.programs.CreateProgram(ctx, ws.ID, percentProgram())
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// TestSendWebhookTestEvent: the test event is one outbox row for the one
// endpoint, whatever it subscribes to, relayed to the webhooks queue
// after commit with the outbox id as its task id.
func TestSendWebhookTestEvent(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	rdb := redistest.Client(t)
	ns := redistest.Namespace(t, rdb)
	outbox := postgres.NewOutbox(b.db.DB, &tasks.Enqueuer{Client: asynq.NewClientFromRedisClient(rdb), Namespace: ns})
	svc := postgres.NewWebhookDeliveryService(b.db.DB, outbox, discard)
	p := MustProgram(t, b)
	e, other := mustEndpoint(t, b, p.ID), mustEndpoint(t, b, p.ID)

	sent, err := svc.SendTestEvent(ctx, p.ID, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	svc.WaitRelays()
	var payload []byte
	var taskType, queue string
	var unsent bool
	if err := b.db.QueryRow(`SELECT task_type, queue, payload, sent_at IS NULL FROM outbox WHERE id = $1`, sent.OutboxID).
		Scan(&taskType, &queue, &payload, &unsent); err != nil {
		t.Fatal(err)
	}
	if taskType != ledger.OutboxTaskWebhook || queue != ledger.OutboxQueueWebhooks || unsent {
		t.Fatalf("outbox row %s %s unsent=%v", taskType, queue, unsent)
	}
	var m ledger.WebhookMessage
	if err := json.Unmarshal(payload, &m); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Type string                 `json:"type"`
		Data ledger.WebhookTestData `json:"data"`
	}
	if err := json.Unmarshal([]byte(m.Body), &body); err != nil {
		t.Fatal(err)
	}
	if m.EndpointID != e.ID || m.MessageID != sent.MessageID || m.EventType != ledger.EventWebhookTest ||
		body.Type != ledger.EventWebhookTest || body.Data.ProgramID != p.ID || body.Data.ProgramName != p.Name ||
		body.Data.EndpointID != e.ID || !body.Data.Test {
		t.Fatalf("message %+v, body %s", m, m.Body)
	}
	var n int
	b.db.QueryRow(`SELECT count(*) FROM outbox WHERE payload->>'endpoint_id' = $1`, fmt.Sprint(other.ID)).Scan(&n)
	if n != 0 {
		t.Fatalf("the other endpoint got %d messages", n)
	}
	info, err := asynq.NewInspectorFromRedisClient(rdb).GetTaskInfo(ns.Queue(tasks.QueueWebhooks), tasks.OutboxTaskID(sent.OutboxID))
	if err != nil || info.Type != tasks.TypeWebhookDeliver {
		t.Fatalf("task %+v, %v", info, err)
	}

	t.Run("ErrOtherProgramsEndpoint", func(t *testing.T) {
		q := MustProgramIn(t, b, "Other Inc", "other@other.example")
		before := countOutbox(t, b)
		_, err := svc.SendTestEvent(ctx, q.ID, e.ID)
		assertCode(t, err, ledger.ENotFound, ledger.MsgWebhookNotFound)
		if err := postgres.NewWebhookService(b.db.DB, nil).DeleteEndpoint(ctx, p.ID, other.ID); err != nil {
			t.Fatal(err)
		}
		_, err = svc.SendTestEvent(ctx, p.ID, other.ID)
		assertCode(t, err, ledger.ENotFound, ledger.MsgWebhookNotFound)
		if after := countOutbox(t, b); after != before {
			t.Fatalf("refused test events wrote %d outbox rows", after-before)
		}
	})
}

func countOutbox(tb testing.TB, b *testBundle) int {
	tb.Helper()
	var n int
	if err := b.db.QueryRow(`SELECT count(*) FROM outbox`).Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}
