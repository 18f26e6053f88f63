package workers_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/ledger/stripetest"
	"github.com/partnertrack/partnertrack/notify"
	"github.com/partnertrack/partnertrack/workers"
	"github.com/partnertrack/partnertrack/workers/redistest"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

// processorWorld is a program connected to a Stripe account, with an
// enrolled partner and a click on the partner's link.
type processorWorld struct {
	programID, partnerID int64
	account, click       string
}

func mustProcessorWorld(t *testing.T, db *pgtest.DB) processorWorld {
	t.Helper()
	ctx := context.Background()
	ws, err := postgres.NewAccountService(db.DB).CreateWorkspace(ctx, "Acme", "owner@acme.example")
	if err != nil {
		t.Fatal(err)
	}
	p, err := postgres.NewProgramService(db.DB).CreateProgram(ctx, ws.ID, ledger.ProgramInput{
		Name: ledger.Some("Acme"), Domain: ledger.Some("acme.example"), CommissionType: ledger.Some("percent"),
		CommissionRate: ledger.Some(decimal.NewFromInt(30)),
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
	w := processorWorld{programID: p.ID, partnerID: partner.ID, account: stripetest.NewID("acct_")}
	if _, err := partners.ConnectProcessorAccount(ctx, p.ID, w.account); err != nil {
		t.Fatal(err)
	}
	w.click = ledger.NewClickID(time.Now())
	at, _ := ledger.ClickTime(w.click)
	if _, err := db.Exec(`INSERT INTO clicks (click_id, occurred_at, program_id, partner_id, link_id) VALUES ($1, $2, $3, $4, $5)`,
		w.click, at, p.ID, partner.ID, link.ID); err != nil {
		t.Fatal(err)
	}
	return w
}

// receive stores an event as the edge does and reports whether it was
// queued.
func receive(t *testing.T, inbox ledger.ProcessorInbox, ev *stripetest.Event) bool {
	t.Helper()
	res, err := inbox.Receive(context.Background(), ledger.ReceivedEvent{EventID: ev.ID, AccountID: ev.Account,
		Type: ev.Type, Payload: ev.Payload()})
	if err != nil {
		t.Fatalf("Receive(%s): %v", ev.ID, err)
	}
	return res.Enqueued
}

func eventStatus(t *testing.T, db *pgtest.DB, id string) (status, errText string) {
	t.Helper()
	db.QueryRow(`SELECT status, COALESCE(error, '') FROM processor_events WHERE event_id = $1`, id).Scan(&status, &errText)
	return status, errText
}

func startWorker(t *testing.T, rdb *redis.Client, ns tasks.Namespace, h workers.Handlers, queues ...string) {
	t.Helper()
	q := map[string]int{}
	for _, name := range queues {
		q[ns.Queue(name)] = 1
	}
	srv := workers.NewServer(rdb, workers.ServerConfig{Queues: q, Concurrency: 4, Logger: discard})
	if err := srv.Start(workers.NewMux(h)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
}

// TestProcessorEventsThroughTheQueue runs the real asynq server on the
// processor queue: an event stored by the edge is queued under its own id
// and processed once however often it is queued; a poison event is
// archived and failed without holding up the events behind it; a refund's
// notification reaches the partner through the outbox.
func TestProcessorEventsThroughTheQueue(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	rdb := redistest.Client(t)
	ns := redistest.Namespace(t, rdb)
	ctx := context.Background()
	w := mustProcessorWorld(t, db)

	enq := &tasks.Enqueuer{Client: asynq.NewClientFromRedisClient(rdb), Namespace: ns}
	outbox := postgres.NewOutbox(db.DB, enq)
	proc := postgres.NewProcessorService(db.DB, postgres.ProcessorOptions{Enqueuer: enq, Relay: outbox,
		Leads: postgres.NewLeadService(db.DB, nil), Logger: discard})
	t.Cleanup(proc.WaitRelays)
	startWorker(t, rdb, ns, workers.Handlers{Processor: proc, ProcessorInbox: proc, Outbox: outbox,
		Inbox: &notify.Inbox{Store: postgres.NewNotificationStore(db.DB)}, Logger: discard},
		tasks.QueueProcessor, tasks.QueueNotifications)
	insp := asynq.NewInspectorFromRedisClient(rdb)
	queue := ns.Queue(tasks.QueueProcessor)

	poison := stripetest.CheckoutCompleted(w.account).Set("amount_total", "forty-nine dollars")
	if !receive(t, proc, poison) {
		t.Fatal("poison event not queued")
	}
	checkout := stripetest.CheckoutCompleted(w.account).Set("metadata.svc_click_id", w.click)
	if !receive(t, proc, checkout) {
		t.Fatal("event not queued")
	}
	waitFor(t, "checkout processed", func() bool { s, _ := eventStatus(t, db, checkout.ID); return s == ledger.EventProcessed })
	waitFor(t, "poison event archived", func() bool {
		info, err := insp.GetTaskInfo(queue, poison.ID)
		return err == nil && info.State == asynq.TaskStateArchived
	})
	if status, errText := eventStatus(t, db, poison.ID); status != ledger.EventFailed || !strings.Contains(errText, "undecodable") {
		t.Fatalf("poison event: %s %q; want failed with the reason", status, errText)
	}

	info, err := insp.GetTaskInfo(queue, checkout.ID)
	if err != nil || info.Type != tasks.TypeProcessorEvent || info.Retention < 24*time.Hour {
		t.Fatalf("task of the event: %+v, %v; want its id to be the event id, retained for days", info, err)
	}
	// Stripe redelivers; the sweep queues again: the same task, nothing
	// processed twice.
	if !receive(t, proc, checkout) {
		t.Fatal("a redelivered event that is queued already reports not queued")
	}
	if sent, err := enq.EnqueueProcessorEvents(ctx, []string{checkout.ID}); err != nil || len(sent) != 1 {
		t.Fatalf("enqueue again: %v, %v; want a harmless task id conflict", sent, err)
	}
	var sales int
	db.QueryRow(`SELECT count(*) FROM sales`).Scan(&sales)
	if sales != 1 {
		t.Fatalf("%d sales, want 1", sales)
	}

	refund := stripetest.ChargeRefunded(w.account, checkout.Get("payment_intent").(string), 4900, 4900)
	receive(t, proc, refund)
	waitFor(t, "refund processed", func() bool { s, _ := eventStatus(t, db, refund.ID); return s == ledger.EventProcessed })
	var status string
	db.QueryRow(`SELECT c.status FROM commissions c JOIN sales s ON s.id = c.sale_id`).Scan(&status)
	if status != ledger.CommissionReversed {
		t.Fatalf("commission %s, want reversed", status)
	}
	waitFor(t, "partner notified", func() bool {
		var n int
		db.QueryRow(`SELECT count(*) FROM notifications WHERE partner_id = $1 AND kind = $2`,
			w.partnerID, ledger.NoticeCommissionReversed).Scan(&n)
		return n == 1
	})
}

// settableClock lets a test move the service clock between steps (never
// while a worker runs).
type settableClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *settableClock) Now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *settableClock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// TestProcessorSweepAfterRedisOutage: Redis is unreachable when the event
// arrives; the event is stored all the same (the edge answers 200), and the
// maintenance sweep queues it once Redis is back.
func TestProcessorSweepAfterRedisOutage(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	clock := &settableClock{t: time.Now().UTC()}
	db.Now = clock.Now
	rdb := redistest.Client(t)
	ns := redistest.Namespace(t, rdb)
	w := mustProcessorWorld(t, db)

	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 50 * time.Millisecond})
	defer dead.Close()
	edge := postgres.NewProcessorService(db.DB, postgres.ProcessorOptions{
		Enqueuer: &tasks.Enqueuer{Client: asynq.NewClientFromRedisClient(dead), Namespace: ns}, Logger: discard})
	ev := stripetest.CheckoutCompleted(w.account).Set("metadata.svc_click_id", w.click)
	if receive(t, edge, ev) {
		t.Fatal("queued while Redis is unreachable")
	}
	var unqueued int
	db.QueryRow(`SELECT count(*) FROM processor_events WHERE enqueued_at IS NULL`).Scan(&unqueued)
	if unqueued != 1 {
		t.Fatalf("%d stored unqueued events, want 1", unqueued)
	}

	enq := &tasks.Enqueuer{Client: asynq.NewClientFromRedisClient(rdb), Namespace: ns}
	proc := postgres.NewProcessorService(db.DB, postgres.ProcessorOptions{Enqueuer: enq, Logger: discard})
	sweep := &workers.ProcessorSweepHandler{Inbox: proc, Logger: discard}
	// Within the grace the sweep leaves it: the edge's own enqueue may
	// still be on its way.
	if err := sweep.ProcessTask(context.Background(), tasks.NewProcessorSweepTask()); err != nil {
		t.Fatal(err)
	}
	db.QueryRow(`SELECT count(*) FROM processor_events WHERE enqueued_at IS NULL`).Scan(&unqueued)
	if unqueued != 1 {
		t.Fatal("swept within the grace")
	}
	clock.Advance(workers.ProcessorSweepGrace + time.Second)
	if err := sweep.ProcessTask(context.Background(), tasks.NewProcessorSweepTask()); err != nil {
		t.Fatal(err)
	}
	db.QueryRow(`SELECT count(*) FROM processor_events WHERE enqueued_at IS NULL`).Scan(&unqueued)
	if unqueued != 0 {
		t.Fatal("the sweep did not queue the stored event")
	}
	startWorker(t, rdb, ns, workers.Handlers{Processor: proc, Logger: discard}, tasks.QueueProcessor)
	waitFor(t, "swept event processed", func() bool { s, _ := eventStatus(t, db, ev.ID); return s == ledger.EventProcessed })
	var sales int
	db.QueryRow(`SELECT count(*) FROM sales WHERE processor_event_id = $1`, ev.Get("id")).Scan(&sales)
	if sales != 1 {
		t.Fatalf("%d sales, want 1", sales)
	}
}

// fakeEvents is a function-field fake of ledger.PaymentEventService for
// the handler's error paths.
type fakeEvents struct {
	process  func(id string) (*ledger.ProcessResult, error)
	failures []string
}

func (f *fakeEvents) ProcessEvent(_ context.Context, id string) (*ledger.ProcessResult, error) {
	return f.process(id)
}

func (f *fakeEvents) RecordFailure(_ context.Context, id, reason string, final bool) error {
	f.failures = append(f.failures, id+" "+reason+map[bool]string{true: " final", false: ""}[final])
	return nil
}

func TestProcessorHandlerFailures(t *testing.T) {
	t.Parallel()
	task, err := tasks.NewProcessorEventTask("evt_1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		desc      string
		task      *asynq.Task
		err       error
		skipRetry bool
		failures  []string
	}{
		{"OK", task, nil, false, nil},
		{"TransientRetries", task, errors.New("connection refused"), false, []string{"evt_1 connection refused"}},
		{"InternalLedgerErrorRetries", task, ledger.NewError(ledger.EInternal, "pending clicks unavailable"), false,
			[]string{"evt_1 ledger error: code=internal_error message=pending clicks unavailable"}},
		{"PermanentIsArchived", task, ledger.NewError(ledger.EInvalid, "undecodable"), true,
			[]string{"evt_1 ledger error: code=invalid_request message=undecodable final"}},
		{"UndecodablePayloadIsArchived", asynq.NewTask(tasks.TypeProcessorEvent, []byte("{")), nil, true, nil},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			f := &fakeEvents{process: func(id string) (*ledger.ProcessResult, error) {
				if tc.err != nil {
					return nil, tc.err
				}
				return &ledger.ProcessResult{EventID: id, Status: ledger.EventProcessed}, nil
			}}
			err := (&workers.ProcessorHandler{Events: f, Logger: discard}).ProcessTask(context.Background(), tc.task)
			if (err != nil) != (tc.err != nil || tc.skipRetry) || errors.Is(err, asynq.SkipRetry) != tc.skipRetry {
				t.Fatalf("err = %v; want skip retry %v", err, tc.skipRetry)
			}
			if strings.Join(f.failures, "|") != strings.Join(tc.failures, "|") {
				t.Fatalf("failures noted %q, want %q", f.failures, tc.failures)
			}
		})
	}
}
