package workers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/notify/mail/mailtest"
	"github.com/partnertrack/partnertrack/workers"
	"github.com/partnertrack/partnertrack/workers/redistest"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

// mustDigestSale records a sale of amount cents on a new click (a new
// customer) of the partner's link, with a customer key, and dates its
// commission at `at`.
func mustDigestSale(t *testing.T, db *pgtest.DB, programID, partnerID int64, txn string, amount int64, at time.Time) {
	t.Helper()
	click := ledger.NewClickID(time.Now())
	ct, _ := ledger.ClickTime(click)
	if _, err := db.Exec(`INSERT INTO clicks (click_id, occurred_at, program_id, partner_id, link_id)
		SELECT $1, $2, $3, $4, id FROM links WHERE partner_id = $4 AND program_id = $3`, click, ct, programID, partnerID); err != nil {
		t.Fatal(err)
	}
	res, err := postgres.NewSaleService(db.DB, postgres.SaleOptions{Logger: discard}).RecordSale(context.Background(), ledger.SaleRequest{
		ProgramID: programID, TransactionID: ledger.Some(txn), AmountCents: ledger.Some(amount), ClickID: ledger.Some(click),
		CustomerKey: ledger.Some("cust-secret-" + txn)})
	if err != nil || res.CommissionID == nil {
		t.Fatalf("sale %s: %+v, %v", txn, res, err)
	}
	if _, err := db.Exec(`UPDATE commissions SET created_at = $2 WHERE id = $1`, *res.CommissionID, at); err != nil {
		t.Fatal(err)
	}
}

// TestCommissionDigestEmail runs the digest task on the real worker: a
// partner with two commissions of yesterday gets one email with both
// (count and total, never the customer) through the outbox and the
// in-process SMTP server; a commission of another day, a rejected one and
// a test sale's are left out; running the task again, or the service
// again, sends nothing more.
func TestCommissionDigestEmail(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	rdb := redistest.Client(t)
	ns := redistest.Namespace(t, rdb)
	srv := mailtest.Start(t, mailtest.Options{})
	enq := &tasks.Enqueuer{Client: asynq.NewClientFromRedisClient(rdb), Namespace: ns}
	digests := postgres.NewDigestService(db.DB, postgres.DigestOptions{PublicBaseURL: "https://track.example",
		Relay: postgres.NewOutbox(db.DB, enq), Logger: discard})
	t.Cleanup(digests.WaitRelays)
	startWorker(t, rdb, ns, workers.Handlers{Mailer: smtpMailer(t, srv), Digests: digests, Logger: discard},
		tasks.QueueEmails, tasks.QueueMaintenance)

	day := ledger.DigestDay(time.Now())
	programID, partnerID, _ := mustClickWorld(t, db, 30)
	mustDigestSale(t, db, programID, partnerID, "txn_a", 10000, day.Add(time.Hour))
	mustDigestSale(t, db, programID, partnerID, "txn_b", 5050, day.Add(23*time.Hour))
	mustDigestSale(t, db, programID, partnerID, "txn_older", 90000, day.Add(-time.Hour))
	mustDigestSale(t, db, programID, partnerID, "txn_rejected", 70000, day.Add(2*time.Hour))
	mustDigestSale(t, db, programID, partnerID, "txn_test", 80000, day.Add(3*time.Hour))
	if _, err := db.Exec(`UPDATE commissions SET status = 'rejected' FROM sales s
		WHERE s.id = commissions.sale_id AND s.processor_event_id = 'txn_rejected'`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE sales SET is_test = true WHERE processor_event_id = 'txn_test'`); err != nil {
		t.Fatal(err)
	}

	client := asynq.NewClientFromRedisClient(rdb)
	if _, err := client.Enqueue(tasks.NewCommissionDigestTask(), asynq.Queue(ns.Queue(tasks.QueueMaintenance))); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// One email for the day, and one for the day before, whose digest no
	// run had sent yet (the worker was not running then).
	got := srv.Wait(ctx, t, 2)
	var p mailtest.Parsed
	var m mailtest.Message
	found := false
	subjects := map[string]bool{}
	for _, msg := range got {
		parsed, err := msg.Parse()
		if err != nil {
			t.Fatal(err)
		}
		if msg.To[0] != "pat@partner.example" {
			t.Fatalf("a digest to %v", msg.To)
		}
		subjects[parsed.Subject] = true
		if parsed.Subject == "Your commissions of "+day.Format(time.DateOnly) {
			p, m, found = parsed, msg, true
		}
	}
	if !found || !subjects["Your commissions of "+day.AddDate(0, 0, -1).Format(time.DateOnly)] {
		t.Fatalf("subjects %v, want the day and the day before", subjects)
	}
	got = []mailtest.Message{m}
	// 20% of $100.00 and of $50.50.
	if !strings.Contains(p.Text, "Acme: 2 commissions, $30.10") || !strings.Contains(p.HTML, "$30.10") ||
		!strings.Contains(p.Text, "https://track.example/partner/") {
		t.Errorf("digest text:\n%s", p.Text)
	}
	if strings.Contains(string(got[0].Data), "cust-secret") || strings.Contains(string(got[0].Data), "txn_") {
		t.Errorf("the digest names a customer or a sale:\n%s", got[0].Data)
	}

	// Again: the task, twice, and the service itself queue nothing more.
	for range 2 {
		if _, err := client.Enqueue(tasks.NewCommissionDigestTask(), asynq.Queue(ns.Queue(tasks.QueueMaintenance))); err != nil {
			t.Fatal(err)
		}
	}
	insp := asynq.NewInspectorFromRedisClient(rdb)
	waitFor(t, "three digest tasks done", func() bool {
		info, err := insp.GetQueueInfo(ns.Queue(tasks.QueueMaintenance))
		return err == nil && info.Processed >= 3 && info.Size == 0
	})
	if n, err := digests.SendCommissionDigests(ctx, day); err != nil || n != 0 {
		t.Fatalf("a rerun queued %d emails (%v)", n, err)
	}
	var digestRows, emails int
	if err := db.QueryRow(`SELECT count(*) FROM commission_digests WHERE partner_id = $1 AND day = $2`, partnerID, day).Scan(&digestRows); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM outbox WHERE task_type = $1`, ledger.OutboxTaskEmail).Scan(&emails); err != nil {
		t.Fatal(err)
	}
	if digestRows != 1 || emails != 2 || len(srv.Messages()) != 2 {
		t.Fatalf("%d digest rows of the day, %d outbox emails, %d received; want 1, 2, 2", digestRows, emails, len(srv.Messages()))
	}
}

// TestCommissionDigestConcurrentRuns: runs of the same day racing (a
// redelivered task beside the scheduled one) queue one email per partner
// between them.
func TestCommissionDigestConcurrentRuns(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	digests := postgres.NewDigestService(db.DB, postgres.DigestOptions{PublicBaseURL: "https://track.example", Logger: discard})
	day := ledger.DigestDay(time.Now())
	programID, partnerID, _ := mustClickWorld(t, db, 30)
	mustDigestSale(t, db, programID, partnerID, "txn_a", 10000, day.Add(time.Hour))
	results := make(chan int, 4)
	for range 4 {
		go func() {
			n, err := digests.SendCommissionDigests(context.Background(), day)
			if err != nil {
				t.Error(err)
			}
			results <- n
		}()
	}
	total := 0
	for range 4 {
		total += <-results
	}
	var emails int
	if err := db.QueryRow(`SELECT count(*) FROM outbox WHERE task_type = $1`, ledger.OutboxTaskEmail).Scan(&emails); err != nil {
		t.Fatal(err)
	}
	if total != 1 || emails != 1 {
		t.Fatalf("runs queued %d, outbox holds %d emails; want 1", total, emails)
	}
}
