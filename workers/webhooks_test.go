package workers_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/notify"
	"github.com/partnertrack/partnertrack/notify/webhooktest"
	"github.com/partnertrack/partnertrack/workers"
	"github.com/partnertrack/partnertrack/workers/redistest"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

// hookBundle is a program with a click, its webhook service, and a
// namespaced webhooks queue.
type hookBundle struct {
	db        *pgtest.DB
	rdb       *redis.Client
	ns        tasks.Namespace
	programID int64
	click     string
	hooks     *postgres.WebhookService
	enqueuer  *tasks.Enqueuer
	insp      *asynq.Inspector
}

func setupHooks(t *testing.T) *hookBundle {
	t.Helper()
	t.Parallel()
	db := pgtest.New(t)
	rdb := redistest.Client(t)
	programID, _, click := mustClickWorld(t, db, 30)
	ns := redistest.Namespace(t, rdb)
	return &hookBundle{db: db, rdb: rdb, ns: ns, programID: programID, click: click,
		hooks:    postgres.NewWebhookService(db.DB, nil),
		enqueuer: &tasks.Enqueuer{Client: asynq.NewClientFromRedisClient(rdb), Namespace: ns},
		insp:     asynq.NewInspectorFromRedisClient(rdb)}
}

func (b *hookBundle) MustEndpoint(tb testing.TB, url string, events ...string) int64 {
	tb.Helper()
	e, err := b.hooks.CreateEndpoint(context.Background(), b.programID, ledger.WebhookInput{URL: ledger.Some(url), Events: ledger.Some(events)})
	if err != nil {
		tb.Fatal(err)
	}
	return e.ID
}

// start runs a real asynq server on the bundle's webhooks queue with a
// retry schedule of milliseconds (configuration, not sleeps).
func (b *hookBundle) start(t *testing.T, concurrency int, sender *notify.Sender) {
	t.Helper()
	srv := workers.NewServer(b.rdb, workers.ServerConfig{
		Queues: map[string]int{b.ns.Queue(tasks.QueueWebhooks): 1}, Concurrency: concurrency, Logger: discard,
		Retry:                    workers.RetryPolicy{Webhooks: notify.Backoff{First: 10 * time.Millisecond, Factor: 1}},
		DelayedTaskCheckInterval: 50 * time.Millisecond, TaskCheckInterval: 50 * time.Millisecond,
	})
	if err := srv.Start(workers.NewMux(workers.Handlers{Webhooks: sender, Logger: discard})); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
}

func (b *hookBundle) sender(cfg notify.SenderConfig) *notify.Sender {
	cfg.Store, cfg.Logger = b.hooks, discard
	cfg.Guard = &notify.Guard{AllowPrivate: true}
	return notify.NewSender(cfg)
}

// log returns an endpoint's delivery log, oldest first.
func (b *hookBundle) log(tb testing.TB, endpointID int64) []ledger.WebhookAttempt {
	tb.Helper()
	list, err := b.hooks.Endpoints(context.Background(), b.programID, 100)
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range list {
		if e.ID == endpointID {
			out := make([]ledger.WebhookAttempt, len(e.Deliveries))
			for i, d := range e.Deliveries {
				out[len(out)-1-i] = d
			}
			return out
		}
	}
	return nil
}

// TestWebhookRetriesThenArchived records a real sale for two endpoints:
// one that fails twice and then accepts, one that always fails. The first
// is delivered on its third attempt with the same webhook-id each time;
// the second is attempted once plus WebhookMaxRetry times and archived.
func TestWebhookRetriesThenArchived(t *testing.T) {
	b := setupHooks(t)
	flaky, dead := webhooktest.NewReceiver(t, 500, 500, 200), webhooktest.NewReceiver(t, 503)
	eFlaky := b.MustEndpoint(t, flaky.URL, ledger.EventSaleCreated)
	eDead := b.MustEndpoint(t, dead.URL, ledger.EventSaleCreated)
	sales := postgres.NewSaleService(b.db.DB, postgres.SaleOptions{Logger: discard, Relay: postgres.NewOutbox(b.db.DB, b.enqueuer)})
	if _, err := sales.RecordSale(context.Background(), ledger.SaleRequest{ProgramID: b.programID,
		TransactionID: ledger.Some("txn_hooks"), AmountCents: ledger.Some(int64(5000)), ClickID: ledger.Some(b.click)}); err != nil {
		t.Fatal(err)
	}
	sales.WaitRelays()
	var deadOutbox int64
	b.db.QueryRow(`SELECT id FROM outbox WHERE payload->>'endpoint_id' = $1::text`, eDead).Scan(&deadOutbox)
	b.start(t, 2, b.sender(notify.SenderConfig{BreakerFailures: 1000}))

	queue := b.ns.Queue(tasks.QueueWebhooks)
	waitFor(t, "the dead endpoint's message archived", func() bool {
		archived, _ := b.insp.ListArchivedTasks(queue)
		return len(archived) == 1
	})
	waitFor(t, "the flaky endpoint's message delivered", func() bool { return len(b.log(t, eFlaky)) == 3 })

	archived, _ := b.insp.ListArchivedTasks(queue)
	if a := archived[0]; a.ID != tasks.OutboxTaskID(deadOutbox) || a.Retried != tasks.WebhookMaxRetry || a.MaxRetry != tasks.WebhookMaxRetry ||
		!strings.Contains(a.LastErr, "503") {
		t.Fatalf("archived task %+v", a)
	}
	if ids := dead.IDs(); len(ids) != 1+tasks.WebhookMaxRetry {
		t.Fatalf("the dead receiver got %d requests, want %d", len(ids), 1+tasks.WebhookMaxRetry)
	}
	deadLog := b.log(t, eDead)
	for i, a := range deadLog {
		if a.Attempt != i+1 || a.StatusCode == nil || *a.StatusCode != 503 || a.MessageID != deadLog[0].MessageID {
			t.Fatalf("dead attempt %d: %+v", i+1, a)
		}
	}
	if len(deadLog) != 1+tasks.WebhookMaxRetry {
		t.Fatalf("%d attempts logged for the dead endpoint", len(deadLog))
	}
	ids := flaky.IDs()
	if len(ids) != 3 || ids[0] != ids[1] || ids[1] != ids[2] || !strings.HasPrefix(ids[0], "msg_") {
		t.Fatalf("the flaky receiver saw webhook-ids %v, want one id three times", ids)
	}
	flakyLog := b.log(t, eFlaky)
	if *flakyLog[0].StatusCode != 500 || *flakyLog[1].StatusCode != 500 || *flakyLog[2].StatusCode != 200 || flakyLog[2].Attempt != 3 {
		t.Fatalf("flaky log %+v", flakyLog)
	}
	if ids[0] == deadLog[0].MessageID {
		t.Fatal("two endpoints got the same webhook-id")
	}
}

// TestWebhookBreakerDefersWithoutSpendingRetries kills one destination:
// its breaker opens after three failures, its other messages wait behind
// it without a request and without spending a retry, and another
// destination's messages are all delivered meanwhile by the same worker.
func TestWebhookBreakerDefersWithoutSpendingRetries(t *testing.T) {
	b := setupHooks(t)
	dead, live := webhooktest.NewReceiver(t, 503), webhooktest.NewReceiver(t, 200)
	eDead := b.MustEndpoint(t, dead.URL, ledger.EventSaleCreated)
	eLive := b.MustEndpoint(t, live.URL, ledger.EventSaleCreated)
	var msgs []ledger.OutboxMessage
	now := time.Now()
	for i := int64(1); i <= 12; i++ {
		endpoint := eDead
		if i%2 == 0 {
			endpoint = eLive
		}
		body, _ := ledger.WebhookBody(ledger.EventSaleCreated, now, map[string]any{"n": i})
		payload, _ := json.Marshal(ledger.WebhookMessage{EndpointID: endpoint, MessageID: ledger.NewWebhookMessageID(now),
			EventType: ledger.EventSaleCreated, Body: body, CreatedAt: now})
		msgs = append(msgs, ledger.OutboxMessage{ID: i, TaskType: tasks.TypeWebhookDeliver, Queue: tasks.QueueWebhooks, Payload: payload})
	}
	if sent, err := b.enqueuer.Enqueue(context.Background(), msgs); err != nil || len(sent) != 12 {
		t.Fatalf("enqueued %v, %v", sent, err)
	}
	sender := b.sender(notify.SenderConfig{BreakerFailures: 3, BreakerTimeout: time.Hour})
	b.start(t, 1, sender)

	queue := b.ns.Queue(tasks.QueueWebhooks)
	var parked []*asynq.TaskInfo
	waitFor(t, "live messages delivered and dead ones parked behind the breaker", func() bool {
		retry, _ := b.insp.ListRetryTasks(queue)
		parked = parked[:0]
		for _, r := range retry {
			if r.NextProcessAt.After(time.Now().Add(50 * time.Minute)) {
				parked = append(parked, r)
			}
		}
		return len(live.IDs()) == 6 && len(parked) == 6
	})
	if n := len(dead.IDs()); n != 3 {
		t.Fatalf("the dead receiver got %d requests, want 3 (then the breaker opened)", n)
	}
	spent := 0
	for _, p := range parked {
		spent += p.Retried
	}
	if spent != 3 {
		t.Fatalf("the parked messages spent %d retries, want 3: one per real failure, none per deferral", spent)
	}
	if st := sender.BreakerStates(); st[notify.Destination(dead.URL)] != gobreaker.StateOpen || st[notify.Destination(live.URL)] != gobreaker.StateClosed {
		t.Fatalf("breakers %v", st)
	}
	if n := len(b.log(t, eDead)); n != 3 {
		t.Fatalf("%d attempts logged for the dead endpoint, want 3", n)
	}
}

func TestWebhookHandlerRefusesBadPayloads(t *testing.T) {
	t.Parallel()
	h := &workers.WebhookHandler{Sender: notify.NewSender(notify.SenderConfig{})}
	for _, payload := range []string{`not json`, `{"outbox_id": 1, "data": "x"}`, `{"outbox_id": 1, "data": {"endpoint_id": 3}}`} {
		err := h.ProcessTask(context.Background(), asynq.NewTask(tasks.TypeWebhookDeliver, []byte(payload)))
		if err == nil || !strings.Contains(err.Error(), asynq.SkipRetry.Error()) {
			t.Fatalf("payload %s: err = %v, want a SkipRetry", payload, err)
		}
	}
}

func TestWebhookQueueMatchesLedger(t *testing.T) {
	t.Parallel()
	if ledger.OutboxQueueWebhooks != tasks.QueueWebhooks || ledger.OutboxTaskWebhook != tasks.TypeWebhookDeliver {
		t.Fatalf("the ledger writes webhooks for queue %q, the workers serve %q", ledger.OutboxQueueWebhooks, tasks.QueueWebhooks)
	}
}
