package main

import (
	"bytes"
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/notify/mail/mailtest"
	"github.com/partnertrack/partnertrack/workers/redistest"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

// relayEmail writes an email to the outbox and relays it to the
// namespace's emails queue, as the invite code's transaction and relay do.
func relayEmail(t *testing.T, db *pgtest.DB, rdb *redis.Client, ns tasks.Namespace, to string) int64 {
	t.Helper()
	m, err := ledger.EmailOutboxMessage(to, ledger.ApplicationApprovedEmail{
		ProgramName: "Acme", PartnerName: "Ann", DashboardURL: "https://partners.example/"})
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := db.QueryRow(`INSERT INTO outbox (task_type, queue, payload, created_at)
		VALUES ($1, $2, $3::jsonb, now() - interval '1 minute') RETURNING id`, m.TaskType, m.Queue, string(m.Payload)).Scan(&id); err != nil {
		t.Fatal(err)
	}
	enq := &tasks.Enqueuer{Client: asynq.NewClientFromRedisClient(rdb), Namespace: ns}
	if n, err := postgres.NewOutbox(db.DB, enq).Sweep(context.Background(), time.Second, 10); err != nil || n != 1 {
		t.Fatalf("sweep = %d, %v", n, err)
	}
	return id
}

// TestWorkerSendsEmailsAlone runs `worker --queues emails` with SMTP_URL
// pointing at an SMTP server: a relayed email reaches it.
func TestWorkerSendsEmailsAlone(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	rdb := redistest.Client(t)
	ns := redistest.Namespace(t, rdb)
	srv := mailtest.Start(t, mailtest.Options{Username: "u", Password: "p"})
	MustRunWorker(t, testEnv(db, ns, "SMTP_URL", srv.URL(), "SMTP_FROM", "Acme <partners@acme.example>"),
		"--queues", "emails", "--scheduler=false", "--concurrency", "1")
	id := relayEmail(t, db, rdb, ns, "ann@example.com")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := srv.Wait(ctx, t, 1)
	p, err := got[0].Parse()
	if err != nil {
		t.Fatal(err)
	}
	if got[0].From != "partners@acme.example" || p.Subject != "Welcome to the Acme partner program" ||
		p.MessageID != "<outbox-"+itoa(id)+"@partnertrack>" {
		t.Fatalf("received from %s, subject %q, Message-ID %q", got[0].From, p.Subject, p.MessageID)
	}
}

// TestWorkerLogsEmailsWithoutSMTP runs the emails worker without SMTP_URL,
// as `make run` does: the email is logged (recipient, subject, Message-ID,
// no body) and the task succeeds.
func TestWorkerLogsEmailsWithoutSMTP(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	rdb := redistest.Client(t)
	ns := redistest.Namespace(t, rdb)
	env := testEnv(db, ns, "LOG_LEVEL", "info")
	m := NewMain()
	if err := m.ParseFlags([]string{"--queues", "emails", "--scheduler=false", "--concurrency", "1"}, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	m.Logger = slog.New(slog.NewTextHandler(logs, nil))
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	id := relayEmail(t, db, rdb, ns, "ann@example.com")
	want := "message_id=outbox-" + itoa(id) + "@partnertrack"
	waitUntil(t, "the email logged", func() bool { return strings.Contains(logs.String(), want) })
	var line string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, want) {
			line = l
		}
	}
	if !strings.Contains(line, "to=ann@example.com") || !strings.Contains(line, `subject="Welcome to the Acme partner program"`) ||
		strings.Contains(line, "partners.example") {
		t.Fatalf("log line %q: want recipient and subject, no body", line)
	}
	insp := asynq.NewInspectorFromRedisClient(rdb)
	waitUntil(t, "the task done", func() bool {
		q, err := insp.GetQueueInfo(ns.Queue(tasks.QueueEmails))
		return err == nil && q.Processed == 1 && q.Failed == 0 && q.Pending == 0 && q.Active == 0
	})
}

// TestWorkerRefusesBadSMTPURL: a malformed SMTP_URL stops the worker
// before it starts, in one line naming the variable.
func TestWorkerRefusesBadSMTPURL(t *testing.T) {
	t.Parallel()
	env := map[string]string{"SMTP_URL": "mail.example.com:587"}
	err := NewMain().ParseFlags([]string{"--queues", "emails"}, func(k string) string { return env[k] })
	if err == nil || !strings.HasPrefix(err.Error(), "SMTP_URL must be smtp://") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err = %v, want one line naming SMTP_URL", err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// syncBuffer is a log destination the worker's goroutines write while the
// test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
