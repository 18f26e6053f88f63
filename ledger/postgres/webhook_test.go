package postgres_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/stripetest"
)

// webhookRow is a brand webhook delivery the outbox holds.
type webhookRow struct {
	OutboxID int64
	Msg      ledger.WebhookMessage
	Event    struct {
		Type      string          `json:"type"`
		Timestamp string          `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}
}

// webhookRows returns the webhook deliveries in the outbox after id since.
func (b *ledgerBundle) webhookRows(tb testing.TB, since int64) []webhookRow {
	tb.Helper()
	rows, err := b.db.Query(`SELECT id, queue, payload FROM outbox WHERE task_type = $1 AND id > $2 ORDER BY id`,
		ledger.OutboxTaskWebhook, since)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	var out []webhookRow
	for rows.Next() {
		var r webhookRow
		var queue string
		var payload []byte
		if err := rows.Scan(&r.OutboxID, &queue, &payload); err != nil {
			tb.Fatal(err)
		}
		if queue != ledger.OutboxQueueWebhooks {
			tb.Fatalf("webhook row on queue %s", queue)
		}
		if err := json.Unmarshal(payload, &r.Msg); err != nil {
			tb.Fatal(err)
		}
		if err := json.Unmarshal([]byte(r.Msg.Body), &r.Event); err != nil {
			tb.Fatalf("body %s: %v", r.Msg.Body, err)
		}
		out = append(out, r)
	}
	return out
}

func (b *ledgerBundle) lastOutboxID(tb testing.TB) int64 {
	tb.Helper()
	var id int64
	if err := b.db.QueryRow(`SELECT COALESCE(max(id), 0) FROM outbox`).Scan(&id); err != nil {
		tb.Fatal(err)
	}
	return id
}

// wantDeliveries checks which endpoints an event went to, in order.
func wantDeliveries(tb testing.TB, rows []webhookRow, event string, endpoints ...int64) {
	tb.Helper()
	if len(rows) != len(endpoints) {
		tb.Fatalf("%d deliveries %+v, want %s to %v", len(rows), rows, event, endpoints)
	}
	ids := map[string]bool{}
	for i, r := range rows {
		if r.Msg.EventType != event || r.Event.Type != event || r.Msg.EndpointID != endpoints[i] {
			tb.Fatalf("delivery %d: %s to %d, want %s to %d", i, r.Msg.EventType, r.Msg.EndpointID, event, endpoints[i])
		}
		if !strings.HasPrefix(r.Msg.MessageID, "msg_") || ids[r.Msg.MessageID] {
			tb.Fatalf("message id %q (not unique, or not msg_…)", r.Msg.MessageID)
		}
		ids[r.Msg.MessageID] = true
		if _, err := time.Parse(time.RFC3339, r.Event.Timestamp); err != nil {
			tb.Fatalf("timestamp %q: %v", r.Event.Timestamp, err)
		}
	}
}

func decodeData(tb testing.TB, r webhookRow, v any) {
	tb.Helper()
	if err := json.Unmarshal(r.Event.Data, v); err != nil {
		tb.Fatalf("data %s: %v", r.Event.Data, err)
	}
}

// TestBrandWebhookEvents walks a customer through lead, sale and refunds
// and checks the deliveries each change writes to the outbox, in the same
// transaction: one per endpoint subscribed to the event, none to a deleted
// endpoint or another program's, none for provisional leads, test sales or
// skipped refunds.
func TestBrandWebhookEvents(t *testing.T) {
	b := setupLedger(t, "0")
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "30", "USD", 0, 30))
	other := b.MustWorld(t, programInput("percent", "30", "USD", 0, 30))
	hooks := postgres.NewWebhookService(b.db.DB, nil)
	endpoint := func(w saleWorld, events ...string) int64 {
		e, err := hooks.CreateEndpoint(ctx, w.program.ID, ledger.WebhookInput{
			URL: ledger.Some("https://93.184.215.14/hooks"), Events: ledger.Some(events)})
		if err != nil {
			t.Fatal(err)
		}
		return e.ID
	}
	all := endpoint(w, ledger.WebhookEventTypes...)
	leadsOnly := endpoint(w, ledger.EventLeadCreated)
	deleted := endpoint(w, ledger.WebhookEventTypes...)
	if err := hooks.DeleteEndpoint(ctx, w.program.ID, deleted); err != nil {
		t.Fatal(err)
	}
	endpoint(other, ledger.WebhookEventTypes...)
	leads := postgres.NewLeadService(b.db.DB, nil)

	// A provisional browser lead counts for nothing yet; the server lead
	// that settles it is lead.created.
	click := b.MustClick(t, w, w.partnerID)
	mark := b.lastOutboxID(t)
	if _, err := leads.TrackLead(ctx, ledger.LeadRequest{Mode: ledger.LeadModeBrowser, ClickID: click}); err != nil {
		t.Fatal(err)
	}
	if rows := b.webhookRows(t, mark); len(rows) != 0 {
		t.Fatalf("a provisional lead sent %+v", rows)
	}
	res, err := leads.TrackLead(ctx, ledger.LeadRequest{Mode: ledger.LeadModeServer, ProgramID: w.program.ID, ClickID: click, CustomerKey: "user-1"})
	if err != nil {
		t.Fatal(err)
	}
	rows := b.webhookRows(t, mark)
	wantDeliveries(t, rows, ledger.EventLeadCreated, all, leadsOnly)
	var lead ledger.LeadEventData
	decodeData(t, rows[0], &lead)
	if lead.LeadID != res.LeadID || lead.ProgramID != w.program.ID || *lead.PartnerID != w.partnerID ||
		*lead.CustomerKey != "user-1" || *lead.ClickID != click || lead.SettledBy != ledger.SettledByServerLead || rows[0].Msg.Body != rows[1].Msg.Body {
		t.Fatalf("lead.created data %+v", lead)
	}

	// A provisional lead settled by a payment is lead.created too.
	click2 := b.MustClick(t, w, w.partnerID)
	if _, err := leads.TrackLead(ctx, ledger.LeadRequest{Mode: ledger.LeadModeBrowser, ClickID: click2}); err != nil {
		t.Fatal(err)
	}
	var customerID int64
	b.db.QueryRow(`SELECT id FROM customers WHERE click_id = $1`, click2).Scan(&customerID)
	mark = b.lastOutboxID(t)
	if st, err := leads.SettleProvisionalLead(ctx, ledger.Settlement{ProgramID: w.program.ID, CustomerID: customerID}); err != nil || !st.Settled {
		t.Fatalf("settle: %+v, %v", st, err)
	}
	wantDeliveries(t, b.webhookRows(t, mark), ledger.EventLeadCreated, all, leadsOnly)

	// An attributed sale: sale.created, then commission.created.
	mark = b.lastOutboxID(t)
	sold := b.MustSale(t, w, sale{txn: "txn_hook", clickID: click, amount: 10000})
	rows = b.webhookRows(t, mark)
	if len(rows) != 2 {
		t.Fatalf("sale deliveries %+v", rows)
	}
	wantDeliveries(t, rows[:1], ledger.EventSaleCreated, all)
	wantDeliveries(t, rows[1:], ledger.EventCommissionCreated, all)
	var sd ledger.SaleEventData
	decodeData(t, rows[0], &sd)
	if sd.SaleID != sold.SaleID || sd.TransactionID != "txn_hook" || sd.AmountCents != 10000 || sd.Currency != "USD" ||
		*sd.CommissionID != *sold.CommissionID || *sd.PartnerID != w.partnerID {
		t.Fatalf("sale.created data %+v", sd)
	}
	var cd map[string]any
	decodeData(t, rows[1], &cd)
	if cd["commission_id"] != float64(*sold.CommissionID) || cd["amount"] != 30.0 || cd["status"] != ledger.CommissionPending ||
		cd["currency"] != "USD" || cd["transaction_id"] != "txn_hook" {
		t.Fatalf("commission.created data %v", cd)
	}

	// A test sale sends nothing.
	mark = b.lastOutboxID(t)
	req := sale{txn: "txn_test_hook", clickID: click, amount: 500}.request(w.program.ID)
	req.TestKey = true
	if _, err := b.sales.RecordSale(ctx, req); err != nil {
		t.Fatal(err)
	}
	if rows := b.webhookRows(t, mark); len(rows) != 0 {
		t.Fatalf("a test sale sent %+v", rows)
	}

	// A partial refund is commission.refunded, a retry of it nothing, the
	// rest commission.reversed.
	partial := ledger.RefundInput{TransactionID: "txn_hook", AmountCents: 2500, RefundID: "r1", Reason: "damaged"}
	b.refund(t, w, partial)
	rows = b.webhookRows(t, mark)
	wantDeliveries(t, rows, ledger.EventCommissionRefunded, all)
	var rd struct {
		ledger.CommissionEventData
		Refund struct {
			AmountCents     int64   `json:"amount_cents"`
			DeductionAmount float64 `json:"deduction_amount"`
			Reason          string  `json:"reason"`
		} `json:"refund"`
	}
	decodeData(t, rows[0], &rd)
	if rd.CommissionID != *sold.CommissionID || rd.Status != ledger.CommissionRefunded || rd.SaleID != sold.SaleID ||
		// A pending commission partly refunded is cancelled whole; the
		// deduction (a quarter of 30.00) is informational.
		rd.Amount != "0" || rd.Refund.AmountCents != 2500 || rd.Refund.DeductionAmount != 7.5 || rd.Refund.Reason != "damaged" {
		t.Fatalf("commission.refunded data %+v", rd)
	}
	mark = b.lastOutboxID(t)
	b.refund(t, w, partial)
	if rows := b.webhookRows(t, mark); len(rows) != 0 {
		t.Fatalf("a skipped refund sent %+v", rows)
	}
	b.refund(t, w, ledger.RefundInput{TransactionID: "txn_hook", Reason: "chargeback"})
	wantDeliveries(t, b.webhookRows(t, mark), ledger.EventCommissionReversed, all)
}

// TestWebhookEndpoints registers, lists and deletes endpoints, and keeps
// their delivery log.
func TestWebhookEndpoints(t *testing.T) {
	b := setupLedger(t, "0")
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "30", "USD", 0, 30))
	hooks := postgres.NewWebhookService(b.db.DB, nil)
	in := func(url string, events ...string) ledger.WebhookInput {
		return ledger.WebhookInput{URL: ledger.Some(url), Events: ledger.Some(events)}
	}

	t.Run("OKCreate", func(t *testing.T) {
		e, err := hooks.CreateEndpoint(ctx, w.program.ID, in("https://93.184.215.14/a",
			ledger.EventSaleCreated, ledger.EventLeadCreated, ledger.EventSaleCreated))
		if err != nil {
			t.Fatal(err)
		}
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(e.Secret, "whsec_"))
		if !strings.HasPrefix(e.Secret, "whsec_") || err != nil || len(key) != 32 {
			t.Fatalf("secret %q (%v)", e.Secret, err)
		}
		if strings.Join(e.Events, ",") != "lead.created,sale.created" {
			t.Fatalf("events %v, want deduplicated in the contract's order", e.Events)
		}
	})
	t.Run("ErrProgramNotFound", func(t *testing.T) {
		_, err := hooks.CreateEndpoint(ctx, 999999, in("https://93.184.215.14/a", ledger.EventSaleCreated))
		assertCode(t, err, ledger.ENotFound, "program not found")
	})
	t.Run("ErrTargetRefused", func(t *testing.T) {
		refusing := postgres.NewWebhookService(b.db.DB, checkerFunc(func(string) error {
			return ledger.NewError(ledger.EInvalid, ledger.MsgWebhookPrivate)
		}))
		_, err := refusing.CreateEndpoint(ctx, w.program.ID, in("https://93.184.215.14/a", ledger.EventSaleCreated))
		assertCode(t, err, ledger.EInvalid, ledger.MsgWebhookPrivate)
	})
	t.Run("OKListWithLatestDeliveries", func(t *testing.T) {
		e, err := hooks.CreateEndpoint(ctx, w.program.ID, in("https://93.184.215.14/b", ledger.EventSaleCreated))
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 5; i++ {
			status := 500 + i
			if err := hooks.LogWebhookAttempt(ctx, ledger.WebhookAttempt{EndpointID: e.ID, MessageID: "msg_x",
				EventType: ledger.EventSaleCreated, Attempt: i, StatusCode: &status, LatencyMS: i * 10}); err != nil {
				t.Fatal(err)
			}
		}
		if done, err := hooks.WebhookDelivered(ctx, e.ID, "msg_x"); err != nil || done {
			t.Fatalf("delivered = %v, %v; want false after only 5xx", done, err)
		}
		list, err := hooks.Endpoints(ctx, w.program.ID, 3)
		if err != nil {
			t.Fatal(err)
		}
		var got *ledger.WebhookEndpoint
		for i := range list {
			if list[i].ID == e.ID {
				got = &list[i]
			}
			if list[i].Secret != "" {
				t.Fatal("a listing shows a secret")
			}
		}
		if got == nil || len(got.Deliveries) != 3 || got.Deliveries[0].Attempt != 5 || *got.Deliveries[0].StatusCode != 505 ||
			got.Deliveries[2].Attempt != 3 || got.Deliveries[0].LatencyMS != 50 {
			t.Fatalf("listing %+v", got)
		}
		ok := 200
		hooks.LogWebhookAttempt(ctx, ledger.WebhookAttempt{EndpointID: e.ID, MessageID: "msg_x", EventType: ledger.EventSaleCreated, Attempt: 6, StatusCode: &ok})
		if done, err := hooks.WebhookDelivered(ctx, e.ID, "msg_x"); err != nil || !done {
			t.Fatalf("delivered = %v, %v; want true after a 200", done, err)
		}
	})
	t.Run("OKDelete", func(t *testing.T) {
		e, err := hooks.CreateEndpoint(ctx, w.program.ID, in("https://93.184.215.14/c", ledger.EventSaleCreated))
		if err != nil {
			t.Fatal(err)
		}
		other := b.MustWorld(t, programInput("percent", "30", "USD", 0, 30))
		assertCode(t, hooks.DeleteEndpoint(ctx, other.program.ID, e.ID), ledger.ENotFound, ledger.MsgWebhookNotFound)
		if err := hooks.DeleteEndpoint(ctx, w.program.ID, e.ID); err != nil {
			t.Fatal(err)
		}
		assertCode(t, hooks.DeleteEndpoint(ctx, w.program.ID, e.ID), ledger.ENotFound, ledger.MsgWebhookNotFound)
		target, err := hooks.WebhookTarget(ctx, e.ID)
		if err != nil || !target.Deleted || target.Secret == "" {
			t.Fatalf("target %+v, %v", target, err)
		}
		list, _ := hooks.Endpoints(ctx, w.program.ID, 1)
		for _, l := range list {
			if l.ID == e.ID {
				t.Fatal("a deleted endpoint is listed")
			}
		}
	})
}

// checkerFunc is a function-field TargetChecker.
type checkerFunc func(url string) error

func (f checkerFunc) CheckTarget(_ context.Context, url string) error { return f(url) }

// TestAgentService authenticates agent keys and lists a workspace's
// programs only.
func TestAgentService(t *testing.T) {
	b := setupLedger(t, "0")
	ctx := context.Background()
	w1 := b.MustWorld(t, programInput("percent", "30", "USD", 0, 30))
	w2 := b.MustWorld(t, programInput("fixed", "5", "EUR", 0, 30))
	ws2, err := b.accounts.CreateWorkspace(ctx, "Other", "other@other.example")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.programs.CreateProgram(ctx, ws2.ID, percentProgram()); err != nil {
		t.Fatal(err)
	}
	key, err := b.partners.CreateAgentKey(ctx, b.workspaceID, []string{ledger.ScopeProgramsRead})
	if err != nil {
		t.Fatal(err)
	}
	agents := postgres.NewAgentService(b.db.DB)
	got, err := agents.AuthenticateAgentKey(ctx, key.Key)
	if err != nil || got.WorkspaceID != b.workspaceID || !got.Has(ledger.ScopeProgramsRead) || got.Has(ledger.ScopeProgramsWrite) {
		t.Fatalf("key %+v, %v", got, err)
	}
	for _, bad := range []string{key.Key + "x", "agt_nope", strings.TrimPrefix(key.Key, "agt_")} {
		_, err := agents.AuthenticateAgentKey(ctx, bad)
		assertCode(t, err, ledger.EUnauthorized, ledger.MsgAgentKeyInvalid)
	}
	list, err := agents.WorkspacePrograms(ctx, b.workspaceID)
	if err != nil || len(list) != 2 || list[0].ID != w1.program.ID || list[1].ID != w2.program.ID || list[0].APITokenMasked == "" {
		t.Fatalf("programs %+v, %v", list, err)
	}
}

// TestProgramNotifications reads the advertiser's notifications of one
// program.
func TestProgramNotifications(t *testing.T) {
	b := setupLedger(t, "0")
	ctx := context.Background()
	w1 := b.MustWorld(t, programInput("percent", "30", "USD", 0, 30))
	w2 := b.MustWorld(t, programInput("percent", "30", "USD", 0, 30))
	store := postgres.NewNotificationStore(b.db.DB)
	ws := b.workspaceID
	for i, p := range []int64{w1.program.ID, w2.program.ID, w1.program.ID} {
		if _, err := store.SaveNotification(ctx, int64(100+i), ledger.Notification{WorkspaceID: &ws, Kind: ledger.NoticeManualReview,
			Title: "t", Body: "b", Data: map[string]any{"program_id": p}}); err != nil {
			t.Fatal(err)
		}
	}
	partner := w1.partnerID
	store.SaveNotification(ctx, 200, ledger.Notification{PartnerID: &partner, Kind: ledger.NoticeCommissionReversed,
		Title: "t", Body: "b", Data: map[string]any{"program_id": w1.program.ID}})
	list, err := store.ProgramNotifications(ctx, w1.program.ID, 10)
	if err != nil || len(list) != 2 || list[0].OutboxID != 102 || list[1].OutboxID != 100 || *list[0].WorkspaceID != ws {
		t.Fatalf("notifications %+v, %v", list, err)
	}
	_, err = store.ProgramNotifications(ctx, 999999, 10)
	assertCode(t, err, ledger.ENotFound, "program not found")
}

// TestOutboxBacklog reports the unsent rows and the oldest one's time.
func TestOutboxBacklog(t *testing.T) {
	b := setupLedger(t, "0")
	ctx := context.Background()
	outbox := postgres.NewOutbox(b.db.DB, nil)
	if bl, err := outbox.Backlog(ctx); err != nil || bl.Unsent != 0 || !bl.Oldest.IsZero() {
		t.Fatalf("empty backlog %+v, %v", bl, err)
	}
	old := time.Now().UTC().Add(-time.Hour).Truncate(time.Microsecond)
	for _, at := range []time.Time{old, old.Add(time.Minute)} {
		if _, err := b.db.Exec(`INSERT INTO outbox (task_type, queue, payload, created_at) VALUES ('x', 'notifications', '{}', $1)`, at); err != nil {
			t.Fatal(err)
		}
	}
	b.db.Exec(`INSERT INTO outbox (task_type, queue, payload, created_at, sent_at) VALUES ('x', 'notifications', '{}', $1, $1)`, old.Add(-time.Hour))
	if bl, err := outbox.Backlog(ctx); err != nil || bl.Unsent != 2 || !bl.Oldest.Equal(old) {
		t.Fatalf("backlog %+v, %v; want 2 unsent since %s", bl, err, old)
	}
}

// TestBrandWebhookEventsFromProcessor: a sale and refunds recorded from
// Stripe events write the same brand webhooks as the endpoints do.
func TestBrandWebhookEventsFromProcessor(t *testing.T) {
	b := setupProcessor(t)
	w := b.MustWorld(t, percentProgram())
	acct := b.connect(t, w)
	e, err := postgres.NewWebhookService(b.db.DB, nil).CreateEndpoint(context.Background(), w.program.ID, ledger.WebhookInput{
		URL: ledger.Some("https://93.184.215.14/hooks"), Events: ledger.Some(ledger.WebhookEventTypes)})
	if err != nil {
		t.Fatal(err)
	}
	click := b.MustClick(t, w, w.partnerID)
	ev := stripetest.CheckoutCompleted(acct).Set("metadata.svc_click_id", click)
	mark := b.lastOutboxID(t)
	res := b.deliver(t, ev)
	rows := b.webhookRows(t, mark)
	if len(rows) != 2 {
		t.Fatalf("deliveries %+v, want sale.created and commission.created", rows)
	}
	wantDeliveries(t, rows[:1], ledger.EventSaleCreated, e.ID)
	wantDeliveries(t, rows[1:], ledger.EventCommissionCreated, e.ID)
	var sd ledger.SaleEventData
	decodeData(t, rows[0], &sd)
	if sd.SaleID != res.SaleID || sd.TransactionID != ev.Get("id") || sd.AmountCents != 4900 {
		t.Fatalf("sale.created data %+v", sd)
	}
	// Processed again (the task ran twice): nothing more.
	mark = b.lastOutboxID(t)
	if _, err := b.proc.ProcessEvent(context.Background(), ev.ID); err != nil {
		t.Fatal(err)
	}
	if rows := b.webhookRows(t, mark); len(rows) != 0 {
		t.Fatalf("a reprocessed event sent %+v", rows)
	}
	pi := ev.Get("payment_intent").(string)
	b.deliver(t, stripetest.ChargeRefunded(acct, pi, 4900, 4900))
	wantDeliveries(t, b.webhookRows(t, mark), ledger.EventCommissionReversed, e.ID)
}
