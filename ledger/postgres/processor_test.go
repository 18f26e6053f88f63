package postgres_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/stripetest"
)

// processorBundle is the ledger with the processor service over it, no
// enqueuer (the tests process stored events themselves) and no relay
// (notifications stay in the outbox, where the tests read them).
type processorBundle struct {
	*ledgerBundle
	leads *postgres.LeadService
	proc  *postgres.ProcessorService
}

func setupProcessor(t *testing.T) *processorBundle {
	t.Helper()
	b := setupLedger(t, "0")
	leads := postgres.NewLeadService(b.db.DB, nil)
	return &processorBundle{ledgerBundle: b, leads: leads,
		proc: postgres.NewProcessorService(b.db.DB, postgres.ProcessorOptions{Leads: leads, Logger: discard})}
}

// connect connects a new Stripe account to the world's program.
func (b *processorBundle) connect(t *testing.T, w saleWorld) string {
	t.Helper()
	acct := stripetest.NewID("acct_")
	if _, err := b.partners.ConnectProcessorAccount(context.Background(), w.program.ID, acct); err != nil {
		t.Fatal(err)
	}
	return acct
}

// deliver stores an event as the edge does and processes it as the worker
// does.
func (b *processorBundle) deliver(t *testing.T, ev *stripetest.Event) *ledger.ProcessResult {
	t.Helper()
	return b.deliverTo(t, ev, 0)
}

// deliverTo delivers an event to a program's brand-added webhook (0: the
// Connect webhook).
func (b *processorBundle) deliverTo(t *testing.T, ev *stripetest.Event, programID int64) *ledger.ProcessResult {
	t.Helper()
	ctx := context.Background()
	if _, err := b.proc.Receive(ctx, ledger.ReceivedEvent{EventID: ev.ID, AccountID: ev.Account, ProgramID: programID,
		Type: ev.Type, Livemode: ev.Livemode, Payload: ev.Payload()}); err != nil {
		t.Fatalf("Receive(%s): %v", ev.ID, err)
	}
	res, err := b.proc.ProcessEvent(ctx, ev.ID)
	if err != nil {
		t.Fatalf("ProcessEvent(%s %s): %v", ev.Type, ev.ID, err)
	}
	return res
}

// storedSale is a sale row as the processor records it.
type storedSale struct {
	ID                int64  `db:"id"`
	CustomerID        int64  `db:"customer_id"`
	AmountCents       int64  `db:"amount_cents"`
	Currency          string `db:"currency"`
	Source            string `db:"source"`
	Provider          string `db:"provider"`
	ProviderPaymentID string `db:"provider_payment_id"`
	SaleType          string `db:"sale_type"`
	IsRecurring       bool   `db:"is_recurring"`
	SubscriptionID    string `db:"subscription_id"`
	ClickID           string `db:"click_id"`
	Livemode          bool   `db:"livemode"`
	CommissionID      *int64 `db:"commission_id"`
}

func (b *processorBundle) sale(t *testing.T, txn string) storedSale {
	t.Helper()
	var s storedSale
	if err := b.db.Get(&s, `
		SELECT s.id, s.customer_id, s.amount_cents, s.currency, s.source, COALESCE(s.provider, '') AS provider,
			COALESCE(s.provider_payment_id, '') AS provider_payment_id, s.sale_type, s.is_recurring,
			COALESCE(s.subscription_id, '') AS subscription_id, COALESCE(s.click_id, '') AS click_id,
			COALESCE(s.livemode, false) AS livemode, c.id AS commission_id
		FROM sales s LEFT JOIN commissions c ON c.sale_id = s.id WHERE s.processor_event_id = $1`, txn); err != nil {
		t.Fatalf("sale %s: %v", txn, err)
	}
	return s
}

// eventRow is a stored processor event's outcome.
type eventRow struct {
	Status     string `db:"status"`
	Outcome    string `db:"outcome"`
	Error      string `db:"error"`
	ProgramID  *int64 `db:"program_id"`
	CustomerID *int64 `db:"customer_id"`
	SaleID     *int64 `db:"sale_id"`
}

func (b *processorBundle) event(t *testing.T, id string) eventRow {
	t.Helper()
	var r eventRow
	if err := b.db.Get(&r, `SELECT status, COALESCE(outcome, '') AS outcome, COALESCE(error, '') AS error,
		program_id, customer_id, sale_id FROM processor_events WHERE event_id = $1`, id); err != nil {
		t.Fatal(err)
	}
	return r
}

func wantResult(t *testing.T, res *ledger.ProcessResult, status, outcomeHas string) {
	t.Helper()
	if res.Status != status || !strings.Contains(res.Outcome, outcomeHas) {
		t.Fatalf("result %s %q, want %s with %q", res.Status, res.Outcome, status, outcomeHas)
	}
}

func TestProcessorOneTimeCheckout(t *testing.T) {
	b := setupProcessor(t)
	w := b.MustWorld(t, percentProgram())
	acct := b.connect(t, w)
	click := b.MustClick(t, w, w.partnerID)

	ev := stripetest.CheckoutCompleted(acct).Set("metadata.svc_click_id", click)
	res := b.deliver(t, ev)
	wantResult(t, res, ledger.EventProcessed, "recorded")
	if res.AttributedBy != ledger.StepClickID || res.ProgramID != w.program.ID || res.SaleID == 0 {
		t.Fatalf("result = %+v", res)
	}
	txn := ev.Get("id").(string)
	s := b.sale(t, txn)
	if s.AmountCents != 4900 || s.Currency != "USD" || s.Source != ledger.SourceProcessor || s.Provider != "stripe" ||
		s.ProviderPaymentID != ev.Get("payment_intent") || s.SaleType != ledger.SaleTypePayment || s.IsRecurring ||
		s.ClickID != click || s.Livemode || s.CommissionID == nil || s.ID != res.SaleID {
		t.Fatalf("sale = %+v", s)
	}
	c := b.MustCommission(t, *s.CommissionID)
	if c.OriginalMinor != 1470 || c.Currency != "USD" || c.Status != ledger.CommissionPending || c.PartnerID != w.partnerID {
		t.Fatalf("commission = %+v; want 30%% of 4900 pending", c)
	}
	var cust struct {
		Status string `db:"status"`
		PCID   string `db:"processor_customer_id"`
	}
	b.db.Get(&cust, `SELECT status, processor_customer_id FROM customers WHERE id = $1`, s.CustomerID)
	if cust.Status != ledger.FunnelConversion || cust.PCID != ev.Get("customer") {
		t.Fatalf("customer = %+v; want conversion with the processor customer id saved", cust)
	}
	if n := b.count(t, `SELECT count(*) FROM platform_fees WHERE sale_id = $1`, s.ID); n != 1 {
		t.Fatalf("%d platform fee rows, want 1", n)
	}
	if n := b.count(t, `SELECT count(*) FROM tracking_logs WHERE event_type = 'sale' AND source = 'processor' AND reference = $1`, txn); n != 1 {
		t.Fatalf("%d tracking log rows, want 1", n)
	}
	row := b.event(t, ev.ID)
	if row.Status != ledger.EventProcessed || row.SaleID == nil || *row.SaleID != s.ID || row.CustomerID == nil ||
		*row.CustomerID != s.CustomerID || row.ProgramID == nil || *row.ProgramID != w.program.ID {
		t.Fatalf("stored event = %+v", row)
	}

	// The same delivery again (Stripe retries, or the task runs twice):
	// stored once, processed once.
	again, err := b.proc.Receive(context.Background(), ledger.ReceivedEvent{EventID: ev.ID, AccountID: acct,
		Type: ev.Type, Payload: ev.Payload()})
	if err != nil || !again.Duplicate {
		t.Fatalf("redelivery: %+v, %v; want a duplicate", again, err)
	}
	res2, err := b.proc.ProcessEvent(context.Background(), ev.ID)
	if err != nil || res2.Status != ledger.EventProcessed || res2.SaleID != s.ID {
		t.Fatalf("processed again: %+v, %v", res2, err)
	}
	if n := b.count(t, `SELECT count(*) FROM sales`); n != 1 {
		t.Fatalf("%d sales, want 1", n)
	}
	if n := b.count(t, `SELECT count(*) FROM processor_events`); n != 1 {
		t.Fatalf("%d stored events, want 1", n)
	}

	// The same payment under another event id (a replay from Stripe's
	// dashboard) records nothing more.
	replay := *ev
	replay.ID = stripetest.NewID("evt_")
	wantResult(t, b.deliver(t, &replay), ledger.EventSkipped, "already recorded as sale")
	if n := b.count(t, `SELECT count(*) FROM sales`); n != 1 {
		t.Fatalf("%d sales after a replay, want 1", n)
	}
}

// TestProcessorSubscription follows a subscription whose brand set the
// click on the checkout session only: the checkout records no sale but
// saves the processor customer id, the first invoice and a renewal are
// found by it, and the twin invoice events record the invoice once.
func TestProcessorSubscription(t *testing.T) {
	b := setupProcessor(t)
	w := b.MustWorld(t, programInput("recurring_percent", "20", "USD", 12, 30))
	acct := b.connect(t, w)
	click := b.MustClick(t, w, w.partnerID)

	checkout := stripetest.SubscriptionCheckoutCompleted(acct).Set("metadata.svc_click_id", click)
	res := b.deliver(t, checkout)
	wantResult(t, res, ledger.EventProcessed, "no sale")
	if res.SaleID != 0 || res.CustomerID == 0 || res.AttributedBy != ledger.StepClickID {
		t.Fatalf("subscription checkout = %+v", res)
	}
	if n := b.count(t, `SELECT count(*) FROM sales`); n != 0 {
		t.Fatalf("%d sales after a subscription checkout, want 0", n)
	}
	sub, cus := checkout.Get("subscription").(string), checkout.Get("customer").(string)

	first := stripetest.InvoicePaid("invoice.paid", acct, checkout.Get("invoice").(string), sub, cus)
	res = b.deliver(t, first)
	wantResult(t, res, ledger.EventProcessed, "commission")
	if res.AttributedBy != ledger.StepProcessorCustomer || res.CustomerID != b.event(t, checkout.ID).customerID() {
		t.Fatalf("first invoice = %+v", res)
	}
	s := b.sale(t, first.Get("id").(string))
	if s.AmountCents != 2900 || s.SaleType != ledger.SaleTypeSubscription || s.IsRecurring || s.SubscriptionID != sub ||
		s.ClickID != click || s.CommissionID == nil {
		t.Fatalf("first invoice's sale = %+v", s)
	}
	if c := b.MustCommission(t, *s.CommissionID); c.OriginalMinor != 580 {
		t.Fatalf("commission %d, want 20%% of 2900", c.OriginalMinor)
	}

	// invoice.payment_succeeded for the same invoice: one handler, one sale.
	twin := stripetest.InvoicePaid("invoice.payment_succeeded", acct, first.Get("id").(string), sub, cus)
	wantResult(t, b.deliver(t, twin), ledger.EventSkipped, "already recorded as sale")

	renewal := stripetest.InvoicePaid("invoice.paid", acct, stripetest.NewID("in_"), sub, cus).
		Set("billing_reason", "subscription_cycle")
	res = b.deliver(t, renewal)
	wantResult(t, res, ledger.EventProcessed, "commission")
	if res.AttributedBy != ledger.StepProcessorCustomer {
		t.Fatalf("renewal attributed by %q, want the processor customer id", res.AttributedBy)
	}
	r := b.sale(t, renewal.Get("id").(string))
	if !r.IsRecurring || r.CustomerID != s.CustomerID || r.CommissionID == nil {
		t.Fatalf("renewal's sale = %+v", r)
	}
	if n := b.count(t, `SELECT count(*) FROM sales`); n != 2 {
		t.Fatalf("%d sales, want 2 (first invoice and renewal)", n)
	}
}

func (r eventRow) customerID() int64 {
	if r.CustomerID == nil {
		return 0
	}
	return *r.CustomerID
}

// TestProcessorLegacyInvoice reads an invoice of an older API version:
// the subscription's metadata at subscription_details, the payment at the
// top level.
func TestProcessorLegacyInvoice(t *testing.T) {
	b := setupProcessor(t)
	w := b.MustWorld(t, programInput("recurring_percent", "10", "USD", 0, 30))
	acct := b.connect(t, w)
	click := b.MustClick(t, w, w.partnerID)
	ev := stripetest.LegacyInvoicePaid(acct, stripetest.NewID("in_"), stripetest.NewID("sub_"), stripetest.NewID("cus_")).
		Set("subscription_details.metadata", map[string]any{"svc_click_id": click, "program_id": "ignored-placeholder"})
	res := b.deliver(t, ev)
	wantResult(t, res, ledger.EventProcessed, "commission")
	if res.AttributedBy != ledger.StepClickID {
		t.Fatalf("attributed by %q, want the click of the subscription's metadata", res.AttributedBy)
	}
	s := b.sale(t, ev.Get("id").(string))
	if s.Currency != "EUR" || s.AmountCents != 5000 || s.ProviderPaymentID != ev.Get("payment_intent") || !s.IsRecurring {
		t.Fatalf("sale = %+v", s)
	}
	if c := b.MustCommission(t, *s.CommissionID); c.OriginalMinor != 500 || c.Currency != "EUR" {
		t.Fatalf("commission = %+v; want 10%% in the sale's currency", c)
	}
}

// TestProcessorInvoiceBeforeItsCheckout: Stripe does not order events, so
// a subscription's first invoice may be processed before its checkout,
// whose client_reference_id carries the click. The invoice is skipped,
// then revisited once the checkout attributed the customer.
func TestProcessorInvoiceBeforeItsCheckout(t *testing.T) {
	b := setupProcessor(t)
	w := b.MustWorld(t, programInput("recurring_fixed", "5", "USD", 0, 30))
	acct := b.connect(t, w)
	click := b.MustClick(t, w, w.partnerID)
	checkout := stripetest.SubscriptionCheckoutCompleted(acct).Set("client_reference_id", click)
	invoice := stripetest.InvoicePaid("invoice.paid", acct, checkout.Get("invoice").(string),
		checkout.Get("subscription").(string), checkout.Get("customer").(string))

	wantResult(t, b.deliver(t, invoice), ledger.EventSkipped, ledger.SkipNoAttribution)
	res := b.deliver(t, checkout)
	wantResult(t, res, ledger.EventProcessed, "no sale")
	if res.AttributedBy != ledger.StepClientReference {
		t.Fatalf("checkout attributed by %q, want client_reference_id", res.AttributedBy)
	}
	row := b.event(t, invoice.ID)
	if row.Status != ledger.EventProcessed || row.SaleID == nil {
		t.Fatalf("invoice after its checkout: %+v; want processed with a sale", row)
	}
	if c := b.MustCommission(t, *b.sale(t, invoice.Get("id").(string)).CommissionID); c.OriginalMinor != 500 {
		t.Fatalf("commission %d, want the fixed 5.00", c.OriginalMinor)
	}
}

// TestProcessorAttributionOrder sends payments carrying several hints and
// checks that the spec's order picks the customer: (1) click id, (2) email
// of a lead, (3) processor customer id, (4) client_reference_id only when
// the metadata names no click, (5) customer key alone.
func TestProcessorAttributionOrder(t *testing.T) {
	b := setupProcessor(t)
	ctx := context.Background()
	w := b.MustWorld(t, percentProgram())
	other := b.MustWorld(t, percentProgram())
	acct := b.connect(t, w)

	customerOf := func(click string) int64 {
		var id int64
		if err := b.db.QueryRow(`SELECT id FROM customers WHERE click_id = $1`, click).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	clickA := b.MustClick(t, w, w.partnerID) // (1)
	// (2) a provisional lead: its email is on the lead only.
	clickB := b.MustClick(t, w, w.partnerID)
	if _, err := b.leads.TrackLead(ctx, ledger.LeadRequest{Mode: ledger.LeadModeBrowser, ClickID: clickB,
		Email: "bea@example.com"}); err != nil {
		t.Fatal(err)
	}
	// (2) a settled lead: its email is on the customer.
	clickB2 := b.MustClick(t, w, w.partnerID)
	if _, err := b.leads.TrackLead(ctx, ledger.LeadRequest{Mode: ledger.LeadModeServer, ProgramID: w.program.ID,
		ClickID: clickB2, Email: "ben@example.com"}); err != nil {
		t.Fatal(err)
	}
	// (3) a customer of an earlier attributed payment.
	clickC := b.MustClick(t, w, w.partnerID)
	b.MustCustomerKey(t, w, "unused-key") // another customer, never matched
	if _, err := b.db.Exec(`INSERT INTO customers (program_id, partner_id, link_id, click_id, click_occurred_at, processor_customer_id)
		SELECT program_id, partner_id, link_id, click_id, occurred_at, 'cus_earlier' FROM clicks WHERE click_id = $1`, clickC); err != nil {
		t.Fatal(err)
	}
	clickD := b.MustClick(t, w, w.partnerID)   // (4)
	keyE := "user-e"                           // (5)
	customerE := b.MustCustomerKey(t, w, keyE) //
	clickOther := b.MustClick(t, other, other.partnerID)

	for _, tc := range []struct {
		desc     string
		set      map[string]any
		step     string
		customer func() int64
	}{
		{"ClickWinsOverEverything", map[string]any{"metadata.svc_click_id": clickA, "customer_details.email": "bea@example.com",
			"client_reference_id": clickD, "metadata.svc_customer_key": keyE},
			ledger.StepClickID, func() int64 { return customerOf(clickA) }},
		{"ProcessorCustomerWinsOverClientReference", map[string]any{"customer": "cus_earlier",
			"client_reference_id": clickD, "metadata.svc_customer_key": keyE},
			ledger.StepProcessorCustomer, func() int64 { return customerOf(clickC) }},
		{"EmailOfAProvisionalLeadWinsOverTheLaterSteps", map[string]any{"customer_details.email": "Bea@Example.com",
			"customer": "cus_earlier", "client_reference_id": clickD, "metadata.svc_customer_key": keyE},
			ledger.StepEmail, func() int64 { return customerOf(clickB) }},
		{"EmailOfASettledLead", map[string]any{"customer_details.email": "ben@example.com"},
			ledger.StepEmail, func() int64 { return customerOf(clickB2) }},
		{"ClientReferenceWinsOverTheKey", map[string]any{"client_reference_id": clickD, "metadata.svc_customer_key": keyE},
			ledger.StepClientReference, func() int64 { return customerOf(clickD) }},
		{"KeyAlone", map[string]any{"metadata.svc_customer_key": keyE},
			ledger.StepCustomerKey, func() int64 { return customerE }},
		{"LegacyKeyAlone", map[string]any{"metadata.customer_key": keyE},
			ledger.StepCustomerKey, func() int64 { return customerE }},
		{"ClientReferenceUnusedWhenTheMetadataNamesAClick", map[string]any{"metadata.svc_click_id": "01jzzzzzzzzzzzzzzzzzzzzzzz",
			"client_reference_id": clickD, "metadata.svc_customer_key": keyE},
			ledger.StepCustomerKey, func() int64 { return customerE }},
		{"ABrandUserIDInClientReferenceBreaksNothing", map[string]any{"client_reference_id": "user_42",
			"metadata.svc_customer_key": keyE}, ledger.StepCustomerKey, func() int64 { return customerE }},
		{"AClickOfAnotherProgramIsPassedOver", map[string]any{"metadata.svc_click_id": clickOther,
			"customer_details.email": "ben@example.com"}, ledger.StepEmail, func() int64 { return customerOf(clickB2) }},
		{"NothingMatches", map[string]any{"customer_details.email": "nobody@example.com", "client_reference_id": "user_43",
			"metadata.svc_customer_key": "nobody"}, "", func() int64 { return 0 }},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			ev := stripetest.CheckoutCompleted(acct).Set("customer_details.email", "stranger@example.com")
			for path, v := range tc.set {
				ev.Set(path, v)
			}
			res := b.deliver(t, ev)
			if res.AttributedBy != tc.step || res.CustomerID != tc.customer() {
				t.Fatalf("attributed by %q to customer %d, want %q and %d (%s)",
					res.AttributedBy, res.CustomerID, tc.step, tc.customer(), res.Outcome)
			}
			sales := b.count(t, `SELECT count(*) FROM sales WHERE processor_event_id = $1`, ev.Get("id"))
			if tc.step == "" {
				wantResult(t, res, ledger.EventSkipped, ledger.SkipNoAttribution)
				if sales != 0 {
					t.Fatal("an unattributed payment recorded a sale")
				}
			} else if sales != 1 {
				t.Fatalf("%d sales, want 1", sales)
			}
		})
	}
	// The provisional lead found by its email settled with the payment.
	if v, err := b.leads.FindCustomer(ctx, ledger.CustomerQuery{ProgramID: w.program.ID, ClickID: clickB}); err != nil ||
		v.Provisional || v.Email != "bea@example.com" {
		t.Fatalf("customer of the provisional lead: %+v, %v; want settled with its email", v, err)
	}
}

// TestProcessorSettlesProvisionalLead: a browser lead on a program that
// requires server-verified leads waits provisional; the customer's paid
// checkout settles it and saves the key the payment's metadata names.
func TestProcessorSettlesProvisionalLead(t *testing.T) {
	b := setupProcessor(t)
	ctx := context.Background()
	w := b.MustWorld(t, percentProgram())
	acct := b.connect(t, w)
	click := b.MustClick(t, w, w.partnerID)
	lead, err := b.leads.TrackLead(ctx, ledger.LeadRequest{Mode: ledger.LeadModeBrowser, ClickID: click, Email: "lee@example.com"})
	if err != nil || !lead.Provisional {
		t.Fatalf("browser lead: %+v, %v", lead, err)
	}

	// A subscription checkout is not a qualifying payment.
	sub := stripetest.SubscriptionCheckoutCompleted(acct).Set("metadata.svc_click_id", click)
	if res := b.deliver(t, sub); res.Settled {
		t.Fatal("a subscription checkout settled the lead")
	}
	ev := stripetest.CheckoutCompleted(acct).Set("metadata.svc_click_id", click).Set("metadata.svc_customer_key", "user-lee")
	res := b.deliver(t, ev)
	wantResult(t, res, ledger.EventProcessed, "provisional lead")
	if !res.Settled {
		t.Fatalf("result = %+v; want the lead settled", res)
	}
	var settledBy string
	b.db.QueryRow(`SELECT settled_by FROM leads WHERE id = $1`, lead.LeadID).Scan(&settledBy)
	if settledBy != ledger.SettledByProcessorPayment {
		t.Fatalf("settled_by = %q", settledBy)
	}
	v, err := b.leads.FindCustomer(ctx, ledger.CustomerQuery{ProgramID: w.program.ID, CustomerKey: "user-lee"})
	if err != nil || v.Provisional || v.Status != ledger.FunnelConversion || v.ClickID != click {
		t.Fatalf("customer: %+v, %v; want settled, key saved, converted", v, err)
	}
	if row := b.event(t, ev.ID); !strings.Contains(row.Outcome, "provisional lead") {
		t.Fatalf("stored outcome %q does not note the settlement", row.Outcome)
	}
	// Processing the event again settles nothing more.
	if again, err := b.proc.ProcessEvent(ctx, ev.ID); err != nil || again.Settled {
		t.Fatalf("processed again: %+v, %v", again, err)
	}
}

// TestProcessorRefunds runs charge.refunded events through the refund
// endpoint's own reversal: a partial refund then the rest (current API
// versions give only the cumulative amount), a stale redelivery, refunds
// listed under their own ids (older versions), and an invoice's refund
// found through invoice_payment.paid.
func TestProcessorRefunds(t *testing.T) {
	b := setupProcessor(t)
	ctx := context.Background()
	w := b.MustWorld(t, percentProgram())
	acct := b.connect(t, w)

	t.Run("PartialThenFull", func(t *testing.T) {
		click := b.MustClick(t, w, w.partnerID)
		ev := stripetest.CheckoutCompleted(acct).Set("metadata.svc_click_id", click)
		b.deliver(t, ev)
		s := b.sale(t, ev.Get("id").(string))
		if _, err := b.balances.ApproveCommission(ctx, *s.CommissionID); err != nil {
			t.Fatal(err)
		}
		pi := ev.Get("payment_intent").(string)
		outbox := b.count(t, `SELECT count(*) FROM outbox`)

		partial := stripetest.ChargeRefunded(acct, pi, 4900, 1000)
		res := b.deliver(t, partial)
		wantResult(t, res, ledger.EventProcessed, "refunded")
		if res.SaleID != s.ID {
			t.Fatalf("refund of sale %d, want %d", res.SaleID, s.ID)
		}
		c := b.MustCommission(t, *s.CommissionID)
		// 1000 of 4900 refunded: the approved 14.70 loses 3.00.
		if c.Status != ledger.CommissionRefunded || c.AmountMinor != 1170 || b.balance(t, w.partnerID, "USD") != 1170 {
			t.Fatalf("after the partial refund: %+v, balance %d", c, b.balance(t, w.partnerID, "USD"))
		}
		if n := b.count(t, `SELECT count(*) FROM refunds WHERE sale_id = $1 AND source = 'processor' AND refund_id = $2 AND amount_cents = 1000`,
			s.ID, ledger.CumulativeRefundID(partial.Get("id").(string), 1000)); n != 1 {
			t.Fatalf("%d refund rows for the partial refund, want 1", n)
		}

		full := stripetest.ChargeRefunded(acct, pi, 4900, 4900).Set("id", partial.Get("id"))
		wantResult(t, b.deliver(t, full), ledger.EventProcessed, "reversed")
		c = b.MustCommission(t, *s.CommissionID)
		if c.Status != ledger.CommissionReversed || c.AmountMinor != 0 || b.balance(t, w.partnerID, "USD") != 0 {
			t.Fatalf("after the full refund: %+v, balance %d", c, b.balance(t, w.partnerID, "USD"))
		}
		// The partial refund's event delivered late changes nothing.
		stale := *partial
		stale.ID = stripetest.NewID("evt_")
		wantResult(t, b.deliver(t, &stale), ledger.EventSkipped, "already applied")
		if n := b.count(t, `SELECT COALESCE(sum(amount_cents), 0) FROM refunds WHERE sale_id = $1`, s.ID); n != 4900 {
			t.Fatalf("refunded %d, want 4900", n)
		}
		// Each refund wrote the partner's notification to the outbox.
		if n := b.count(t, `SELECT count(*) FROM outbox WHERE task_type = $1`, ledger.OutboxTaskNotification) - outbox; n != 2 {
			t.Fatalf("%d notifications in the outbox, want 2", n)
		}
	})

	t.Run("ListedRefundsUnderTheirOwnIDs", func(t *testing.T) {
		click := b.MustClick(t, w, w.partnerID)
		ev := stripetest.CheckoutCompleted(acct).Set("metadata.svc_click_id", click).Set("amount_total", 1750)
		b.deliver(t, ev)
		s := b.sale(t, ev.Get("id").(string))
		pi := ev.Get("payment_intent").(string)
		at := time.Now()
		first := stripetest.LegacyChargeRefunded(acct, pi, 1750, stripetest.LegacyRefund{ID: "re_first", Amount: 500, Created: at})
		wantResult(t, b.deliver(t, first), ledger.EventProcessed, "re_first")
		both := stripetest.LegacyChargeRefunded(acct, pi, 1750,
			stripetest.LegacyRefund{ID: "re_first", Amount: 500, Created: at},
			stripetest.LegacyRefund{ID: "re_second", Amount: 250, Created: at.Add(time.Minute)})
		res := b.deliver(t, both)
		wantResult(t, res, ledger.EventProcessed, "re_second")
		if strings.Contains(res.Outcome, "re_first") {
			t.Fatalf("re_first applied twice: %s", res.Outcome)
		}
		var ids []string
		b.db.Select(&ids, `SELECT refund_id FROM refunds WHERE sale_id = $1 ORDER BY id`, s.ID)
		if strings.Join(ids, ",") != "re_first,re_second" {
			t.Fatalf("refund ids %v", ids)
		}
		if c := b.MustCommission(t, *s.CommissionID); c.Status != ledger.CommissionRefunded || c.Reason != "requested_by_customer" {
			t.Fatalf("commission = %+v", c)
		}
	})

	t.Run("InvoiceRefundFoundThroughItsInvoicePayment", func(t *testing.T) {
		click := b.MustClick(t, w, w.partnerID)
		inv := stripetest.InvoicePaid("invoice.paid", acct, stripetest.NewID("in_"), stripetest.NewID("sub_"), stripetest.NewID("cus_")).
			Set("parent.subscription_details.metadata", map[string]any{"svc_click_id": click})
		b.deliver(t, inv)
		s := b.sale(t, inv.Get("id").(string))
		if s.ProviderPaymentID != "" {
			t.Fatalf("a current invoice names no payment, got %q", s.ProviderPaymentID)
		}
		pi := stripetest.NewID("pi_")
		wantResult(t, b.deliver(t, stripetest.InvoicePaymentPaid(acct, inv.Get("id").(string), pi)), ledger.EventProcessed, "linked")
		wantResult(t, b.deliver(t, stripetest.ChargeRefunded(acct, pi, 2900, 2900)), ledger.EventProcessed, "reversed")
		if c := b.MustCommission(t, *s.CommissionID); c.Status != ledger.CommissionReversed {
			t.Fatalf("commission %s, want reversed", c.Status)
		}
	})

	t.Run("ASaleReportedFirstIsNotLinked", func(t *testing.T) {
		click := b.MustClick(t, w, w.partnerID)
		pi := stripetest.NewID("pi_")
		res, err := b.sales.RecordSale(ctx, ledger.SaleRequest{ProgramID: w.program.ID, TransactionID: ledger.Some("order-77"),
			AmountCents: ledger.Some(int64(4900)), ClickID: ledger.Some(click), ProviderPaymentID: ledger.Some(pi)})
		if err != nil {
			t.Fatal(err)
		}
		wantResult(t, b.deliver(t, stripetest.ChargeRefunded(acct, pi, 4900, 4900)), ledger.EventSkipped, "not linked")
		if c := b.MustCommission(t, *res.CommissionID); c.Status != ledger.CommissionPending {
			t.Fatalf("commission %s: a processor refund reversed a sale reported through the sale endpoint", c.Status)
		}
	})
}

// TestProcessorSaleReportedThroughTheEndpoint: the brand reported the
// invoice through the sale endpoint first; the processor's record of the
// same invoice id is refused by the global unique key.
func TestProcessorSaleReportedThroughTheEndpoint(t *testing.T) {
	b := setupProcessor(t)
	w := b.MustWorld(t, programInput("recurring_percent", "20", "USD", 0, 30))
	acct := b.connect(t, w)
	click := b.MustClick(t, w, w.partnerID)
	invoiceID := stripetest.NewID("in_")
	b.MustSale(t, w, sale{txn: invoiceID, clickID: click, amount: 2900})
	ev := stripetest.InvoicePaid("invoice.paid", acct, invoiceID, stripetest.NewID("sub_"), stripetest.NewID("cus_")).
		Set("parent.subscription_details.metadata", map[string]any{"svc_click_id": click})
	wantResult(t, b.deliver(t, ev), ledger.EventSkipped, "already reported through the sale endpoint")
	if n := b.count(t, `SELECT count(*) FROM sales`); n != 1 {
		t.Fatalf("%d sales, want 1", n)
	}
}

func TestProcessorSkips(t *testing.T) {
	b := setupProcessor(t)
	w := b.MustWorld(t, percentProgram())
	other := b.MustWorld(t, percentProgram())
	acct := b.connect(t, w)
	click := b.MustClick(t, w, w.partnerID)
	for _, tc := range []struct {
		desc    string
		event   *stripetest.Event
		outcome string
	}{
		{"UnknownAccount", stripetest.CheckoutCompleted("acct_1NotConnected").Set("metadata.svc_click_id", click),
			"acct_1NotConnected is not connected"},
		{"NoAccount", stripetest.CheckoutCompleted("").Set("metadata.svc_click_id", click), "names no account"},
		{"UnsupportedCurrency", stripetest.CheckoutCompleted(acct).Set("metadata.svc_click_id", click).Set("currency", "gbp"),
			"currency GBP is not supported"},
		{"MetadataNamesAnotherProgram", stripetest.CheckoutCompleted(acct).Set("metadata.svc_click_id", click).
			Set("metadata.program_id", strconv.FormatInt(other.program.ID, 10)), "names another program"},
		{"UnpaidCheckout", stripetest.CheckoutCompleted(acct).Set("metadata.svc_click_id", click).Set("payment_status", "unpaid"),
			ledger.SkipUnpaidCheckout},
		{"OneTimeInvoice", stripetest.InvoicePaid("invoice.paid", acct, stripetest.NewID("in_"), "", "cus_1").Set("parent", nil),
			ledger.SkipNotSubscription},
		{"UnhandledType", stripetest.NewEvent("customer.created", acct, map[string]any{"id": "cus_1", "object": "customer"}),
			ledger.SkipUnhandledType},
		{"RefundOfAnUnknownPayment", stripetest.ChargeRefunded(acct, "pi_unknown", 100, 100), "no sale recorded from this payment"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			res := b.deliver(t, tc.event)
			wantResult(t, res, ledger.EventSkipped, tc.outcome)
			if row := b.event(t, tc.event.ID); row.Status != ledger.EventSkipped || !strings.Contains(row.Outcome, tc.outcome) {
				t.Fatalf("stored event = %+v", row)
			}
		})
	}
	if n := b.count(t, `SELECT count(*) FROM sales`); n != 0 {
		t.Fatalf("%d sales, want none", n)
	}
}

// TestProcessorBrandWebhook: events of a webhook the brand added on its own
// account belong to the program of the path, whatever account they name.
func TestProcessorBrandWebhook(t *testing.T) {
	b := setupProcessor(t)
	w := b.MustWorld(t, percentProgram())
	click := b.MustClick(t, w, w.partnerID)
	ev := stripetest.CheckoutCompleted("").Set("metadata.svc_click_id", click)
	res := b.deliverTo(t, ev, w.program.ID)
	wantResult(t, res, ledger.EventProcessed, "commission")
	if res.ProgramID != w.program.ID {
		t.Fatalf("program %d, want %d", res.ProgramID, w.program.ID)
	}
	if secret, err := b.proc.WebhookSecret(context.Background(), w.program.ID); err != nil || secret != "" {
		t.Fatalf("secret %q, %v; want none set", secret, err)
	}
	if _, err := b.programs.UpdateSettings(context.Background(), w.program.ID,
		ledger.SettingsInput{StripeWebhookSecret: ledger.Some("whsec_brand")}); err != nil {
		t.Fatal(err)
	}
	if secret, err := b.proc.WebhookSecret(context.Background(), w.program.ID); err != nil || secret != "whsec_brand" {
		t.Fatalf("secret %q, %v", secret, err)
	}
	if _, err := b.proc.WebhookSecret(context.Background(), 999999); ledger.ErrorCode(err) != ledger.ENotFound {
		t.Fatalf("secret of no program: %v", err)
	}
}

// TestProcessorUndecodableEvent: a stored event whose object is not what
// its type promises can never be processed: the error says so (the worker
// archives it) and the failure is recorded on the event.
func TestProcessorUndecodableEvent(t *testing.T) {
	b := setupProcessor(t)
	ctx := context.Background()
	ev := stripetest.CheckoutCompleted("acct_1").Set("amount_total", "a lot")
	if _, err := b.proc.Receive(ctx, ledger.ReceivedEvent{EventID: ev.ID, AccountID: "acct_1", Type: ev.Type, Payload: ev.Payload()}); err != nil {
		t.Fatal(err)
	}
	_, err := b.proc.ProcessEvent(ctx, ev.ID)
	if ledger.ErrorCode(err) != ledger.EInvalid {
		t.Fatalf("err = %v, want %s", err, ledger.EInvalid)
	}
	if _, err := b.proc.ProcessEvent(ctx, "evt_never_stored"); ledger.ErrorCode(err) != ledger.ENotFound {
		t.Fatalf("unknown event: %v", err)
	}
	if err := b.proc.RecordFailure(ctx, ev.ID, err.Error(), false); err != nil {
		t.Fatal(err)
	}
	if row := b.event(t, ev.ID); row.Status != ledger.EventReceived || !strings.Contains(row.Error, "undecodable") {
		t.Fatalf("after a failed attempt: %+v", row)
	}
	if err := b.proc.RecordFailure(ctx, ev.ID, "undecodable checkout.session.completed object", true); err != nil {
		t.Fatal(err)
	}
	if row := b.event(t, ev.ID); row.Status != ledger.EventFailed {
		t.Fatalf("after the final attempt: %+v", row)
	}
}

// TestProcessorConcurrentEvents processes events that race in the worker
// pool: the twin events of one invoice record one sale, and refund events
// of one charge (two refunds, one delivered twice) apply its cumulative
// amount once.
func TestProcessorConcurrentEvents(t *testing.T) {
	b := setupProcessor(t)
	ctx := context.Background()
	w := b.MustWorld(t, programInput("recurring_percent", "20", "USD", 0, 30))
	acct := b.connect(t, w)
	store := func(ev *stripetest.Event) {
		t.Helper()
		if _, err := b.proc.Receive(ctx, ledger.ReceivedEvent{EventID: ev.ID, AccountID: acct, Type: ev.Type, Payload: ev.Payload()}); err != nil {
			t.Fatal(err)
		}
	}
	race := func(ids ...string) []*ledger.ProcessResult {
		t.Helper()
		out := make([]*ledger.ProcessResult, len(ids))
		errs := make([]error, len(ids))
		var wg sync.WaitGroup
		for i, id := range ids {
			wg.Add(1)
			go func() { defer wg.Done(); out[i], errs[i] = b.proc.ProcessEvent(ctx, id) }()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	for i := 0; i < 5; i++ {
		click := b.MustClick(t, w, w.partnerID)
		inv, sub, cus := stripetest.NewID("in_"), stripetest.NewID("sub_"), stripetest.NewID("cus_")
		paid := stripetest.InvoicePaid("invoice.paid", acct, inv, sub, cus).
			Set("parent.subscription_details.metadata", map[string]any{"svc_click_id": click})
		succeeded := stripetest.InvoicePaid("invoice.payment_succeeded", acct, inv, sub, cus).
			Set("parent.subscription_details.metadata", map[string]any{"svc_click_id": click})
		store(paid)
		store(succeeded)
		res := race(paid.ID, succeeded.ID)
		if res[0].Status == res[1].Status || b.count(t, `SELECT count(*) FROM sales WHERE processor_event_id = $1`, inv) != 1 {
			t.Fatalf("twin invoice events: %s / %s; want one sale, one processed and one skipped", res[0].Outcome, res[1].Outcome)
		}

		pi := stripetest.NewID("pi_")
		b.deliver(t, stripetest.InvoicePaymentPaid(acct, inv, pi))
		first := stripetest.ChargeRefunded(acct, pi, 2900, 1000)
		second := stripetest.ChargeRefunded(acct, pi, 2900, 2500).Set("id", first.Get("id"))
		again := stripetest.ChargeRefunded(acct, pi, 2900, 2500).Set("id", first.Get("id"))
		store(first)
		store(second)
		store(again)
		race(first.ID, second.ID, again.ID)
		if n := b.count(t, `SELECT COALESCE(sum(r.amount_cents), 0) FROM refunds r JOIN sales s ON s.id = r.sale_id
			WHERE s.processor_event_id = $1`, inv); n != 2500 {
			t.Fatalf("refunded %d, want the charge's 2500 in all", n)
		}
	}
}
