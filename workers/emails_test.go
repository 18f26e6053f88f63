package workers_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/hibiken/asynq"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/notify/mail"
	"github.com/partnertrack/partnertrack/notify/mail/mailtest"
	"github.com/partnertrack/partnertrack/workers"
	"github.com/partnertrack/partnertrack/workers/redistest"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

// writeEmail writes an email's outbox message as the invite and
// application code will, in a transaction of its own, backdated so that
// the sweep takes it at once.
func writeEmail(t *testing.T, db *pgtest.DB, to string, data ledger.EmailData) int64 {
	t.Helper()
	m, err := ledger.EmailOutboxMessage(to, data)
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	err = db.QueryRow(`INSERT INTO outbox (task_type, queue, payload, created_at)
		VALUES ($1, $2, $3::jsonb, now() - interval '1 minute') RETURNING id`,
		m.TaskType, m.Queue, string(m.Payload)).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func smtpMailer(t *testing.T, srv *mailtest.Server) mail.Mailer {
	t.Helper()
	cfg, err := mail.ParseSMTPURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	m, err := mail.NewSMTPMailer(cfg, mail.DefaultFrom)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestEmailThroughTheOutbox sends an invite the way the service does: an
// outbox row, relayed by the sweep to the emails queue, sent by the real
// asynq server's email handler to an SMTP server, with the outbox id as
// its Message-ID.
func TestEmailThroughTheOutbox(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	rdb := redistest.Client(t)
	ns := redistest.Namespace(t, rdb)
	srv := mailtest.Start(t, mailtest.Options{Username: "mailer", Password: "pw"})
	startWorker(t, rdb, ns, workers.Handlers{Mailer: smtpMailer(t, srv), Logger: discard}, tasks.QueueEmails)

	invite := ledger.PartnerInviteEmail{ProgramName: "Acme <Shoes>", BrandMessage: "We'd love to work with you",
		AcceptURL: "https://partners.example/invites/abc", ExpiresAt: time.Date(2026, 12, 10, 9, 0, 0, 0, time.UTC)}
	id := writeEmail(t, db, "Ann <ann@example.com>", invite)
	enq := &tasks.Enqueuer{Client: asynq.NewClientFromRedisClient(rdb), Namespace: ns}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if n, err := postgres.NewOutbox(db.DB, enq).Sweep(ctx, time.Second, 10); err != nil || n != 1 {
		t.Fatalf("sweep = %d, %v; want the email sent to the queue", n, err)
	}

	got := srv.Wait(ctx, t, 1)
	if len(got) != 1 || len(got[0].To) != 1 || got[0].To[0] != "ann@example.com" {
		t.Fatalf("received %v, want one message to ann@example.com", got)
	}
	p, err := got[0].Parse()
	if err != nil {
		t.Fatalf("%v\n%s", err, got[0].Data)
	}
	if want := "<" + workers.EmailMessageID(id) + ">"; p.MessageID != want {
		t.Errorf("Message-ID = %q, want %q", p.MessageID, want)
	}
	if p.Subject != "You are invited to the Acme <Shoes> partner program" {
		t.Errorf("subject = %q", p.Subject)
	}
	for _, want := range []string{"Acme <Shoes>", "We'd love to work with you", invite.AcceptURL, "10 December 2026 at 09:00 UTC"} {
		if !strings.Contains(p.Text, want) {
			t.Errorf("text part lacks %q:\n%s", want, p.Text)
		}
	}
	for _, want := range []string{"Acme &lt;Shoes&gt;", "We&#39;d love to work with you", `href="` + invite.AcceptURL + `"`} {
		if !strings.Contains(p.HTML, want) {
			t.Errorf("HTML part lacks %q:\n%s", want, p.HTML)
		}
	}
}

// TestFailedEmailIsRetriedWithItsMessageID has the SMTP server refuse the
// recipient: the task waits for a retry with the server's answer, and once
// run again and accepted the message keeps the outbox id as Message-ID.
func TestFailedEmailIsRetriedWithItsMessageID(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	ns := redistest.Namespace(t, rdb)
	srv := mailtest.Start(t, mailtest.Options{})
	srv.SetRejectRcpt(&smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"})
	startWorker(t, rdb, ns, workers.Handlers{Mailer: smtpMailer(t, srv), Logger: discard}, tasks.QueueEmails)

	m, err := ledger.EmailOutboxMessage("bob@example.com", ledger.ApplicationRejectedEmail{ProgramName: "Acme", PartnerName: "Bob"})
	if err != nil {
		t.Fatal(err)
	}
	m.ID = 7001
	enq := &tasks.Enqueuer{Client: asynq.NewClientFromRedisClient(rdb), Namespace: ns}
	if _, err := enq.Enqueue(context.Background(), []ledger.OutboxMessage{m}); err != nil {
		t.Fatal(err)
	}
	insp := asynq.NewInspectorFromRedisClient(rdb)
	queue := ns.Queue(tasks.QueueEmails)
	var retry *asynq.TaskInfo
	waitFor(t, "the refused email waiting for a retry", func() bool {
		ts, _ := insp.ListRetryTasks(queue)
		if len(ts) == 1 {
			retry = ts[0]
		}
		return retry != nil
	})
	if !strings.Contains(retry.LastErr, "451") || retry.MaxRetry != tasks.EmailMaxRetry {
		t.Fatalf("retry task: last error %q, max retry %d; want the server's 451 and %d", retry.LastErr, retry.MaxRetry, tasks.EmailMaxRetry)
	}
	if n := len(srv.Messages()); n != 0 {
		t.Fatalf("%d messages received while refused", n)
	}

	srv.SetRejectRcpt(nil)
	if err := insp.RunTask(queue, retry.ID); err != nil { // the backoff's wait, skipped
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := srv.Wait(ctx, t, 1)
	p, err := got[0].Parse()
	if err != nil {
		t.Fatal(err)
	}
	if p.MessageID != "<outbox-7001@partnertrack>" || p.Subject != "Your application to Acme" {
		t.Fatalf("retried message: Message-ID %q, subject %q", p.MessageID, p.Subject)
	}
}

// TestEmailHandlerRefusesBadPayloads archives, without sending, a task
// that would fail the same way on every retry.
func TestEmailHandlerRefusesBadPayloads(t *testing.T) {
	t.Parallel()
	srv := mailtest.Start(t, mailtest.Options{})
	h := &workers.EmailHandler{Mailer: smtpMailer(t, srv), Logger: discard}
	good := json.RawMessage(`{"program_name":"A","partner_name":"B"}`)
	for _, payload := range []string{
		`not json`,
		`{"outbox_id": 0, "data": {"to": "a@example.com", "kind": "application_rejected", "data": {"program_name":"A","partner_name":"B"}}}`,
		`{"outbox_id": 1, "data": {"to": "a@example.com", "kind": "password_reset", "data": {}}}`,
		`{"outbox_id": 1, "data": {"to": "a@example.com", "kind": "application_rejected", "data": {"program_name":"A"}}}`,
		`{"outbox_id": 1, "data": {"to": "not an address", "kind": "application_rejected", "data": ` + string(good) + `}}`,
	} {
		err := h.ProcessTask(context.Background(), asynq.NewTask(tasks.TypeEmailSend, []byte(payload)))
		if !errors.Is(err, asynq.SkipRetry) {
			t.Errorf("payload %s: err = %v, want SkipRetry", payload, err)
		}
	}
	if n := len(srv.Messages()); n != 0 {
		t.Fatalf("%d messages sent for bad payloads", n)
	}
	// The same data, well formed, is sent: the cases above fail on their
	// defect, not on the server.
	task, err := tasks.NewEmailSendTask(2, ledger.Email{To: "a@example.com", Kind: ledger.EmailApplicationRejected, Data: good})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.ProcessTask(context.Background(), task); err != nil || len(srv.Messages()) != 1 {
		t.Fatalf("good payload: err %v, %d messages; want one sent", err, len(srv.Messages()))
	}
}

// TestEmailQueueMatchesLedger pins the outbox routing the ledger writes to
// the queue and task the worker serves.
func TestEmailQueueMatchesLedger(t *testing.T) {
	if tasks.QueueEmails != ledger.OutboxQueueEmails || tasks.TypeEmailSend != ledger.OutboxTaskEmail || tasks.AllQueues[tasks.QueueEmails] == 0 {
		t.Fatalf("emails queue %q/%q, task %q/%q, weight %d", tasks.QueueEmails, ledger.OutboxQueueEmails,
			tasks.TypeEmailSend, ledger.OutboxTaskEmail, tasks.AllQueues[tasks.QueueEmails])
	}
}
