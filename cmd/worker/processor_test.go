package main

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/ledger/stripetest"
	"github.com/partnertrack/partnertrack/workers/redistest"
)

// TestWorkerProcessesStripeEvents runs the real worker with the scheduler:
// a stored Stripe event that was never queued (Redis was down when it
// arrived) is queued by the maintenance sweep and processed into a sale
// with its commission.
func TestWorkerProcessesStripeEvents(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	rdb := redistest.Client(t)
	ns := redistest.Namespace(t, rdb)
	ctx := context.Background()
	ws, err := postgres.NewAccountService(db.DB).CreateWorkspace(ctx, "Acme", "owner@acme.example")
	if err != nil {
		t.Fatal(err)
	}
	p, err := postgres.NewProgramService(db.DB).CreateProgram(ctx, ws.ID, ledger.ProgramInput{Name: ledger.Some("Acme"),
		Domain: ledger.Some("acme.example"), CommissionType: ledger.Some("percent"), CommissionRate: ledger.Some(decimal.NewFromInt(10))})
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
	if _, err := partners.ConnectProcessorAccount(ctx, p.ID, "acct_1SZwOrPBUlX7cw67"); err != nil {
		t.Fatal(err)
	}
	click := ledger.NewClickID(time.Now())
	at, _ := ledger.ClickTime(click)
	if _, err := db.Exec(`INSERT INTO clicks (click_id, occurred_at, program_id, partner_id, link_id) VALUES ($1, $2, $3, $4, $5)`,
		click, at, p.ID, partner.ID, link.ID); err != nil {
		t.Fatal(err)
	}
	ev := stripetest.CheckoutCompleted("acct_1SZwOrPBUlX7cw67").Set("metadata.svc_click_id", click)
	if _, err := db.Exec(`INSERT INTO processor_events (event_id, account_id, event_type, payload, received_at)
		VALUES ($1, 'acct_1SZwOrPBUlX7cw67', $2, $3::jsonb, now() - interval '1 minute')`, ev.ID, ev.Type, string(ev.Payload())); err != nil {
		t.Fatal(err)
	}

	env := map[string]string{"DATABASE_URL": db.URL, "REDIS_URL": redistest.URL(), "QUEUE_NAMESPACE": string(ns), "LOG_LEVEL": "error"}
	m := NewMain()
	if err := m.ParseFlags([]string{"--queues", "processor,maintenance", "--concurrency", "2"}, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var commission int64
		db.QueryRow(`SELECT c.original_minor FROM commissions c JOIN sales s ON s.id = c.sale_id
			WHERE s.processor_event_id = $1 AND s.source = 'processor'`, ev.Get("id")).Scan(&commission)
		if commission == 490 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stored event was not swept and processed within 60 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
}
