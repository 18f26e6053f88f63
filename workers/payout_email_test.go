package workers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/notify/mail/mailtest"
	"github.com/partnertrack/partnertrack/workers"
	"github.com/partnertrack/partnertrack/workers/redistest"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

// TestPayoutPaidEmailReachesThePartner: a payout marked paid writes the
// payout_paid email to the outbox in its transaction; the sweep hands it
// to the emails queue and the worker sends it over SMTP to the partner,
// with the amount and the reference.
func TestPayoutPaidEmailReachesThePartner(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	rdb := redistest.Client(t)
	ns := redistest.Namespace(t, rdb)
	srv := mailtest.Start(t, mailtest.Options{})
	startWorker(t, rdb, ns, workers.Handlers{Mailer: smtpMailer(t, srv), Logger: discard}, tasks.QueueEmails)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	ws, err := postgres.NewAccountService(db.DB).CreateWorkspace(ctx, "Acme", "owner@acme.example")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := postgres.NewProgramService(db.DB).CreateProgram(ctx, ws.ID, ledger.ProgramInput{
		Name: ledger.Some("Acme Shoes"), Domain: ledger.Some("acme.example"),
		CommissionType: ledger.Some("percent"), CommissionRate: ledger.Some(decimal.NewFromInt(10))})
	if err != nil {
		t.Fatal(err)
	}
	partner, err := postgres.NewPartnerService(db.DB).EnrollPartner(ctx, prog.ID, "ann@partner.example", "Ann")
	if err != nil {
		t.Fatal(err)
	}
	// 75.10 of approved money in the program (an entry as an approval writes it).
	for _, q := range []string{
		`INSERT INTO balance_accounts (partner_id, currency) VALUES ($1, 'USD')`,
		`INSERT INTO balance_entries (partner_id, currency, kind, amount_minor, program_id) VALUES ($1, 'USD', 'credit', 7510, $2)`,
	} {
		args := []any{partner.ID}
		if strings.Contains(q, "$2") {
			args = append(args, prog.ID)
		}
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	svc := postgres.NewPayoutService(db.DB, nil, discard)
	run, err := svc.CreatePayouts(ctx, prog.ID, nil, ws.OwnerUserID)
	if err != nil || len(run.Created) != 1 {
		t.Fatalf("run %+v, %v", run, err)
	}
	if _, err := svc.MarkPayout(ctx, prog.ID, run.Created[0].ID, ledger.PayoutPaid, "WIRE-0042", ws.OwnerUserID); err != nil {
		t.Fatal(err)
	}
	// Backdated so that the sweep takes the rows at once.
	if _, err := db.Exec(`UPDATE outbox SET created_at = now() - interval '1 minute'`); err != nil {
		t.Fatal(err)
	}
	enq := &tasks.Enqueuer{Client: asynq.NewClientFromRedisClient(rdb), Namespace: ns}
	if _, err := postgres.NewOutbox(db.DB, enq).Sweep(ctx, time.Second, 10); err != nil {
		t.Fatal(err)
	}
	got := srv.Wait(ctx, t, 1)
	if len(got) != 1 || got[0].To[0] != "ann@partner.example" {
		t.Fatalf("received %v", got)
	}
	p, err := got[0].Parse()
	if err != nil {
		t.Fatal(err)
	}
	if p.Subject != "Your Acme Shoes payout of 75.10 USD was paid" {
		t.Errorf("subject %q", p.Subject)
	}
	for _, want := range []string{"Hello Ann", "75.10 USD", "WIRE-0042"} {
		if !strings.Contains(p.Text, want) || !strings.Contains(p.HTML, want) {
			t.Errorf("message lacks %q:\n%s\n%s", want, p.Text, p.HTML)
		}
	}
}
