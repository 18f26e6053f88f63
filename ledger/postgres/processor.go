package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ledger"
)

// ProcessorService implements ledger.ProcessorInbox (the edge stores and
// queues verified events; the maintenance sweep queues what a failed
// enqueue left) and ledger.PaymentEventService (the processor worker).
//
// Processing an event runs in one transaction under the stored event's
// row lock: it attributes the payment in the spec's order, records the
// sale through the sale endpoint's own recording (recordAttributed) or the
// refunds through the refund endpoint's own reversal (applyRefund), and
// writes the event's outcome. After commit it relays the refunds'
// notifications and settles the customer's provisional lead through
// LeadService.SettleProvisionalLead; a retry after a failed settlement
// finds the outcome written and only settles.
type ProcessorService struct {
	db             *DB
	enqueuer       ledger.ProcessorEnqueuer
	enqueueTimeout time.Duration
	sales          *SaleService
	leads          ledger.LeadService
	pending        ledger.PendingClicks
	keys           ledger.MetadataKeys
	logger         *slog.Logger
	after          *afterCommit
}

// ProcessorOptions configure the processor service.
type ProcessorOptions struct {
	// Enqueuer puts stored events on the processor queue; nil leaves them
	// to the sweep.
	Enqueuer ledger.ProcessorEnqueuer
	// EnqueueTimeout bounds the enqueue after an event is stored (default
	// 2 s): the event is safe in Postgres, so a slow Redis must not hold
	// the processor's delivery.
	EnqueueTimeout time.Duration
	// Leads settles provisional leads on qualifying payments; nil settles
	// none.
	Leads ledger.LeadService
	// Pending finds clicks still in the queue; nil resolves clicks from
	// Postgres only.
	Pending ledger.PendingClicks
	// Relay sends the notifications of processor refunds after commit;
	// nil leaves them to the outbox sweep.
	Relay ledger.OutboxRelay
	// PlatformFeePercent is the operator's fee on each attributed sale.
	PlatformFeePercent decimal.Decimal
	// BrandPrefix names the metadata keys (<prefix>_click_id,
	// <prefix>_customer_key); default svc.
	BrandPrefix string
	Logger      *slog.Logger
}

// NewProcessorService returns the processor service over db.
func NewProcessorService(db *DB, opts ProcessorOptions) *ProcessorService {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.EnqueueTimeout <= 0 {
		opts.EnqueueTimeout = 2 * time.Second
	}
	return &ProcessorService{
		db:             db,
		enqueuer:       opts.Enqueuer,
		enqueueTimeout: opts.EnqueueTimeout,
		sales: NewSaleService(db, SaleOptions{Pending: opts.Pending,
			PlatformFeePercent: opts.PlatformFeePercent, Logger: opts.Logger}),
		leads:   opts.Leads,
		pending: opts.Pending,
		keys:    ledger.NewMetadataKeys(opts.BrandPrefix),
		logger:  opts.Logger,
		after:   &afterCommit{relay: opts.Relay, logger: opts.Logger},
	}
}

var (
	_ ledger.ProcessorInbox      = (*ProcessorService)(nil)
	_ ledger.PaymentEventService = (*ProcessorService)(nil)
)

// WaitRelays blocks until the relays started after commits have finished
// (graceful shutdown, tests).
func (p *ProcessorService) WaitRelays() { p.after.wait() }

// Receive stores a verified event (a redelivered id stores nothing), then
// queues it unless it is queued already.
func (p *ProcessorService) Receive(ctx context.Context, ev ledger.ReceivedEvent) (res *ledger.ReceiveResult, err error) {
	defer wrap(&err, "postgres.Receive(%q)", ev.EventID)
	if ev.Provider == "" {
		ev.Provider = ledger.ProviderStripe
	}
	now := p.db.now()
	res = &ledger.ReceiveResult{}
	var queued bool
	err = p.db.Transact(ctx, func(tx *sqlx.Tx) error {
		res.Duplicate, queued = false, false
		var programID *int64
		if ev.ProgramID > 0 {
			programID = &ev.ProgramID
		}
		// The payload goes as text: jsonb refuses lib/pq's binary []byte.
		err := tx.QueryRowContext(ctx, `
			INSERT INTO processor_events (event_id, provider, account_id, program_id, event_type, livemode, payload, received_at)
			VALUES ($1, $2, NULLIF($3, ''), $4, $5, $6, $7::jsonb, $8)
			ON CONFLICT (event_id) DO NOTHING
			RETURNING false`, ev.EventID, ev.Provider, ev.AccountID, programID, ev.Type, ev.Livemode,
			string(ev.Payload), now).Scan(&queued)
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		res.Duplicate = true
		return tx.QueryRowContext(ctx, `SELECT enqueued_at IS NOT NULL FROM processor_events WHERE event_id = $1`,
			ev.EventID).Scan(&queued)
	})
	if err != nil {
		return nil, err
	}
	res.Enqueued = queued || len(p.enqueue(ctx, []string{ev.EventID})) == 1
	return res, nil
}

// enqueue queues stored events and marks the queued ones. A failure is
// logged, not returned: the events are stored, and the sweep queues them.
func (p *ProcessorService) enqueue(ctx context.Context, ids []string) []string {
	if p.enqueuer == nil || len(ids) == 0 {
		return nil
	}
	ectx, cancel := context.WithTimeout(ctx, p.enqueueTimeout)
	sent, err := p.enqueuer.EnqueueProcessorEvents(ectx, ids)
	cancel()
	if err != nil {
		p.logger.Warn("processor events stored but not queued; the sweep will queue them",
			"count", len(ids)-len(sent), "err", err)
	}
	if len(sent) > 0 {
		if _, err := p.db.ExecContext(ctx, `UPDATE processor_events SET enqueued_at = $2 WHERE event_id = ANY($1)`,
			pq.Array(sent), p.db.now()); err != nil {
			// Queued but not marked: the sweep queues them again, which
			// the task id makes harmless.
			p.logger.Warn("processor events queued but not marked", "count", len(sent), "err", err)
		}
	}
	return sent
}

// WebhookSecret returns the signing secret of a program's brand-added
// processor webhook.
func (p *ProcessorService) WebhookSecret(ctx context.Context, programID int64) (secret string, err error) {
	defer wrap(&err, "postgres.WebhookSecret(%d)", programID)
	err = p.db.QueryRowContext(ctx, `SELECT COALESCE(stripe_webhook_secret, '') FROM programs WHERE id = $1`,
		programID).Scan(&secret)
	if errors.Is(err, sql.ErrNoRows) {
		return "", notFound("program")
	} else if err != nil || secret == "" {
		return "", err
	}
	return p.db.open(purposeStripeSecret, secret)
}

// SweepEvents queues stored events left unqueued for longer than grace.
func (p *ProcessorService) SweepEvents(ctx context.Context, grace time.Duration, limit int) (n int, err error) {
	defer wrap(&err, "postgres.SweepEvents")
	if p.enqueuer == nil {
		return 0, errors.New("no enqueuer to sweep processor events with")
	}
	now := p.db.now()
	var enqErr error
	err = p.db.Transact(ctx, func(tx *sqlx.Tx) error {
		var ids []string
		if err := tx.SelectContext(ctx, &ids, `
			SELECT event_id FROM processor_events
			WHERE enqueued_at IS NULL AND received_at < $1
			ORDER BY received_at LIMIT $2
			FOR UPDATE SKIP LOCKED`, now.Add(-grace), limit); err != nil || len(ids) == 0 {
			return err
		}
		var sent []string
		sent, enqErr = p.enqueuer.EnqueueProcessorEvents(ctx, ids)
		n = len(sent)
		if n == 0 {
			return nil
		}
		_, err := tx.ExecContext(ctx, `UPDATE processor_events SET enqueued_at = $2 WHERE event_id = ANY($1)`,
			pq.Array(sent), now)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, enqErr
}

// RecordFailure notes a failed attempt on a stored event; final marks it
// failed. An event already processed or skipped keeps its outcome.
func (p *ProcessorService) RecordFailure(ctx context.Context, eventID, reason string, final bool) (err error) {
	defer wrap(&err, "postgres.RecordFailure(%q)", eventID)
	_, err = p.db.ExecContext(ctx, `
		UPDATE processor_events SET error = $2, status = CASE WHEN $3 THEN 'failed' ELSE status END
		WHERE event_id = $1 AND status IN ('received', 'failed')`, eventID, truncate(reason, 2000), final)
	return err
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// ProcessEvent processes a stored event once.
func (p *ProcessorService) ProcessEvent(ctx context.Context, eventID string) (*ledger.ProcessResult, error) {
	return p.process(ctx, eventID, false)
}

// eventWork is what processing an event leaves to do after commit.
type eventWork struct {
	res     *ledger.ProcessResult
	msgs    []ledger.OutboxMessage // refund notifications and brand webhooks to relay
	settle  *ledger.Settlement     // the provisional lead to settle
	revisit string                 // a subscription whose unattributed invoices to process again
}

// process processes an event. revisit also processes an event skipped for
// want of attribution (a subscription checkout attributed its customer
// since).
func (p *ProcessorService) process(ctx context.Context, eventID string, revisit bool) (res *ledger.ProcessResult, err error) {
	defer wrap(&err, "postgres.ProcessEvent(%q)", eventID)
	now := p.db.now()
	var w eventWork
	err = p.db.Transact(ctx, func(tx *sqlx.Tx) error {
		w = eventWork{}
		return p.handle(ctx, tx, eventID, revisit, &w, now)
	})
	if err != nil {
		return nil, err
	}
	p.after.send(w.msgs)
	if w.settle != nil && p.leads != nil {
		sr, err := p.leads.SettleProvisionalLead(ctx, *w.settle)
		if err != nil {
			return nil, fmt.Errorf("settle the provisional lead of customer %d: %w", w.settle.CustomerID, err)
		}
		if sr.Settled {
			w.res.Settled = true
			note := fmt.Sprintf("; provisional lead %d settled", sr.LeadID)
			w.res.Outcome += note
			if _, err := p.db.ExecContext(ctx, `UPDATE processor_events SET outcome = outcome || $2 WHERE event_id = $1`,
				eventID, note); err != nil {
				p.logger.Warn("settlement not noted on the processor event", "event_id", eventID, "err", err)
			}
		}
	}
	if w.revisit != "" {
		if err := p.revisitInvoices(ctx, w.res.ProgramID, w.revisit); err != nil {
			return nil, err
		}
	}
	return w.res, nil
}

// storedEvent is a processor_events row.
type storedEvent struct {
	AccountID      string `db:"account_id"`
	ProgramID      *int64 `db:"program_id"`
	Status         string `db:"status"`
	Outcome        string `db:"outcome"`
	CustomerID     *int64 `db:"customer_id"`
	SaleID         *int64 `db:"sale_id"`
	SubscriptionID string `db:"subscription_id"`
	Payload        string `db:"payload"`
}

// eventOutcome is what processing decided.
type eventOutcome struct {
	status, outcome string
	program         *ledger.Program
	customer        *ledger.Customer
	saleID          int64
	attributedBy    string
	hooks           []ledger.OutboxMessage // the recorded sale's brand webhooks
}

func skipped(why string) eventOutcome { return eventOutcome{status: ledger.EventSkipped, outcome: why} }

func (p *ProcessorService) handle(ctx context.Context, tx *sqlx.Tx, eventID string, revisit bool, w *eventWork, now time.Time) error {
	var row storedEvent
	err := tx.GetContext(ctx, &row, `
		SELECT COALESCE(account_id, '') AS account_id, program_id, status, COALESCE(outcome, '') AS outcome,
			customer_id, sale_id, COALESCE(subscription_id, '') AS subscription_id, payload::text AS payload
		FROM processor_events WHERE event_id = $1 FOR UPDATE`, eventID)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("processor event")
	} else if err != nil {
		return err
	}
	ev, err := ledger.DecodeStripeEvent([]byte(row.Payload))
	if err != nil {
		return err
	}
	w.res = &ledger.ProcessResult{EventID: eventID, Type: ev.Type}

	if row.Status == ledger.EventProcessed ||
		(row.Status == ledger.EventSkipped && !(revisit && row.Outcome == ledger.SkipNoAttribution)) {
		// Processed before: only what follows the commit is left to do
		// again (both are idempotent).
		w.res.Status, w.res.Outcome = row.Status, row.Outcome
		if row.ProgramID != nil {
			w.res.ProgramID = *row.ProgramID
		}
		if row.SaleID != nil {
			w.res.SaleID = *row.SaleID
		}
		if row.CustomerID != nil {
			w.res.CustomerID = *row.CustomerID
			w.settle = p.settlement(ev, w.res.ProgramID, *row.CustomerID)
		}
		if ev.Action == ledger.ActionSubscriptionCheckout && row.Status == ledger.EventProcessed {
			w.revisit = row.SubscriptionID
		}
		return nil
	}

	o, err := p.decide(ctx, tx, row, ev, w, now)
	if err != nil {
		return err
	}
	var programID, customerID, saleID *int64
	if o.program != nil {
		programID = &o.program.ID
		w.res.ProgramID = o.program.ID
	}
	if o.customer != nil {
		customerID = &o.customer.ID
		w.res.CustomerID = o.customer.ID
		w.settle = p.settlement(ev, w.res.ProgramID, o.customer.ID)
	}
	if o.saleID != 0 {
		saleID = &o.saleID
		w.res.SaleID = o.saleID
	}
	w.res.Status, w.res.Outcome, w.res.AttributedBy = o.status, o.outcome, o.attributedBy
	if ev.Action == ledger.ActionSubscriptionCheckout && o.status == ledger.EventProcessed {
		w.revisit = ev.SubscriptionID
	}
	_, err = tx.ExecContext(ctx, `
		UPDATE processor_events SET status = $2, outcome = $3, error = NULL, program_id = COALESCE($4, program_id),
			customer_id = $5, sale_id = $6, subscription_id = NULLIF($7, ''), processed_at = $8
		WHERE event_id = $1`,
		eventID, o.status, o.outcome, programID, customerID, saleID, ev.SubscriptionID, now)
	return err
}

// settlement is the settlement a qualifying payment asks for, or nil.
func (p *ProcessorService) settlement(ev *ledger.PaymentEvent, programID, customerID int64) *ledger.Settlement {
	if !ev.QualifiesForSettlement() || programID == 0 {
		return nil
	}
	return &ledger.Settlement{ProgramID: programID, CustomerID: customerID,
		CustomerKey: p.keys.Hints(ev.Metadata).CustomerKey, Email: ev.Email, By: ledger.SettledByProcessorPayment}
}

// decide works out and applies what an event asks for.
func (p *ProcessorService) decide(ctx context.Context, tx *sqlx.Tx, row storedEvent, ev *ledger.PaymentEvent, w *eventWork, now time.Time) (eventOutcome, error) {
	prog, why, err := eventProgram(ctx, tx, row)
	if err != nil {
		return eventOutcome{}, err
	}
	if prog == nil {
		return skipped(why), nil
	}
	var o eventOutcome
	switch {
	case ev.Skip != "":
		o = skipped(ev.Skip)
	case ev.Action == ledger.ActionSale:
		o, err = p.recordPayment(ctx, tx, prog, ev, now)
		w.msgs = append(w.msgs, o.hooks...)
	case ev.Action == ledger.ActionSubscriptionCheckout:
		o, err = p.rememberSubscriber(ctx, tx, prog, ev, now)
	case ev.Action == ledger.ActionInvoicePayment:
		o, err = linkInvoicePayment(ctx, tx, prog, ev)
	case ev.Action == ledger.ActionRefund:
		o, err = p.refund(ctx, tx, prog, ev, w, now)
	default:
		o = skipped(ledger.SkipUnhandledType)
	}
	o.program = prog
	return o, err
}

// eventProgram is the program of an event: the program of a brand-added
// webhook, else the program its connected account is connected to. A nil
// program comes with the reason the event is skipped.
func eventProgram(ctx context.Context, tx *sqlx.Tx, row storedEvent) (*ledger.Program, string, error) {
	if row.ProgramID == nil {
		if row.AccountID == "" {
			return nil, "no connected account: the event names no account", nil
		}
		var id int64
		err := tx.QueryRowContext(ctx, `SELECT program_id FROM processor_accounts WHERE account_id = $1`, row.AccountID).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, "unknown account: " + row.AccountID + " is not connected to any program", nil
		} else if err != nil {
			return nil, "", err
		}
		row.ProgramID = &id
	}
	prog, err := findProgram(ctx, tx, *row.ProgramID, false)
	if ledger.ErrorCode(err) == ledger.ENotFound {
		return nil, "program " + strconv.FormatInt(*row.ProgramID, 10) + " no longer exists", nil
	}
	return prog, "", err
}

// payable checks what a payment event needs before attribution: its
// program (metadata program_id) and its currency.
func (p *ProcessorService) payable(prog *ledger.Program, ev *ledger.PaymentEvent) (ledger.Currency, string) {
	if h := p.keys.Hints(ev.Metadata); h.OtherProgram(prog.ID) {
		return "", "metadata program_id " + h.ProgramID + " names another program"
	}
	if ev.Action != ledger.ActionSale {
		return "", ""
	}
	code := strings.ToUpper(strings.TrimSpace(ev.Currency))
	cur, ok := ledger.ParseCurrency(code)
	if !ok {
		return "", ledger.MsgUnsupportedCurrency(code)
	}
	if utf8.RuneCountInString(ev.TransactionID) > 255 || ev.TransactionID == "" {
		return "", "the payment's id is not a transaction id of 1 to 255 characters"
	}
	return cur, ""
}

// payer is the attributed customer of a payment.
type payer struct {
	cust *ledger.Customer
	step string // the attribution step that found it
	cur  ledger.Currency
}

// findPayer checks what a payment event needs, serialises the events of
// its subscription and attributes it in the spec's order, saving the
// processor customer id on the customer found. A nil payer comes with the
// reason the event is skipped.
func (p *ProcessorService) findPayer(ctx context.Context, tx *sqlx.Tx, prog *ledger.Program, ev *ledger.PaymentEvent, now time.Time) (*payer, string, error) {
	cur, why := p.payable(prog, ev)
	if why != "" {
		return nil, why, nil
	}
	if err := lockSubscription(ctx, tx, prog.ID, ev.SubscriptionID); err != nil {
		return nil, "", err
	}
	cust, step, err := p.attribute(ctx, tx, prog, ev, now)
	if err != nil || cust == nil {
		return nil, ledger.SkipNoAttribution, err
	}
	if err := saveProcessorCustomer(ctx, tx, cust, ev.CustomerID, now); err != nil {
		return nil, "", err
	}
	return &payer{cust: cust, step: step, cur: cur}, "", nil
}

// recordPayment records the sale of a one-time payment or a subscription
// invoice, attributed in the spec's order.
func (p *ProcessorService) recordPayment(ctx context.Context, tx *sqlx.Tx, prog *ledger.Program, ev *ledger.PaymentEvent, now time.Time) (eventOutcome, error) {
	by, why, err := p.findPayer(ctx, tx, prog, ev, now)
	if by == nil {
		return skipped(why), err
	}
	cust, step := by.cust, by.step
	o := eventOutcome{customer: cust, attributedBy: step}

	// One record per transaction id: the twin invoice event, a redelivery
	// under another event id, or the brand's own report through the sale
	// endpoint, which is not linked to this payment (the spec's caveat).
	var prior struct {
		ID     int64  `db:"id"`
		Source string `db:"source"`
	}
	err = tx.GetContext(ctx, &prior, `SELECT id, source FROM sales WHERE processor_event_id = $1`, ev.TransactionID)
	switch {
	case err == nil && prior.Source == ledger.SourceProcessor:
		o.status, o.outcome = ledger.EventSkipped, fmt.Sprintf("%s already recorded as sale %d", ev.TransactionID, prior.ID)
		return o, nil
	case err == nil:
		o.status, o.outcome = ledger.EventSkipped, fmt.Sprintf(
			"%s already reported through the sale endpoint as sale %d: not recorded again", ev.TransactionID, prior.ID)
		return o, nil
	case !errors.Is(err, sql.ErrNoRows):
		return eventOutcome{}, err
	}

	meta, err := json.Marshal(map[string]string{"processor": ledger.ProviderStripe, "event_id": ev.EventID,
		"event_type": ev.Type, "processor_customer_id": ev.CustomerID, "attributed_by": step})
	if err != nil {
		return eventOutcome{}, err
	}
	occurred := ev.OccurredAt
	if occurred.IsZero() {
		occurred = now
	}
	livemode := ev.Livemode
	sale := ledger.Sale{
		ProgramID:         prog.ID,
		TransactionID:     ev.TransactionID,
		AmountCents:       ev.AmountCents,
		Currency:          by.cur,
		OccurredAt:        occurred.UTC().Truncate(time.Microsecond),
		Provider:          ledger.ProviderStripe,
		ProviderPaymentID: ev.PaymentID,
		Livemode:          &livemode,
		SaleType:          ev.SaleType,
		IsRecurring:       ev.IsRecurring,
		SubscriptionID:    ev.SubscriptionID,
		Metadata:          meta,
		Source:            ledger.SourceProcessor,
	}
	out, err := p.sales.recordAttributed(ctx, tx, prog, sale, cust, now)
	switch ledger.ErrorCode(err) {
	case "":
	case ledger.EDuplicateTransaction:
		// Recorded by a concurrent call since the check above.
		o.status, o.outcome = ledger.EventSkipped, ev.TransactionID+" already recorded"
		return o, nil
	case ledger.ENoAttribution:
		o.status, o.outcome = ledger.EventSkipped, ledger.ErrorMessage(err)
		return o, nil
	default:
		return eventOutcome{}, err
	}
	o.status, o.saleID = ledger.EventProcessed, out.result.SaleID
	// The brand's sale.created and commission.created, as for the sale
	// endpoint.
	if o.hooks, err = out.brandEvents(ctx, tx, now); err != nil {
		return eventOutcome{}, err
	}
	switch {
	case out.answer != nil:
		// Stored without commission, as the sale endpoint stores it.
		o.outcome = fmt.Sprintf("sale %d recorded (attributed by %s) without commission: %s",
			o.saleID, step, ledger.ErrorMessage(out.answer))
		p.logger.Error("processor sale recorded without commission", "event_id", ev.EventID,
			"sale_id", o.saleID, "reason", ledger.ErrorMessage(out.answer))
	case out.result.CommissionID != nil:
		o.outcome = fmt.Sprintf("sale %d recorded (attributed by %s), commission %d", o.saleID, step, *out.result.CommissionID)
	default:
		o.outcome = fmt.Sprintf("sale %d recorded (attributed by %s): %s", o.saleID, step, out.result.Message)
	}
	return o, nil
}

// rememberSubscriber attributes a subscription checkout and saves the
// processor customer id on the customer, so that the subscription's
// invoices (which carry the subscription's metadata, not the checkout's)
// find the customer by it. No sale: the invoices record them.
func (p *ProcessorService) rememberSubscriber(ctx context.Context, tx *sqlx.Tx, prog *ledger.Program, ev *ledger.PaymentEvent, now time.Time) (eventOutcome, error) {
	by, why, err := p.findPayer(ctx, tx, prog, ev, now)
	if by == nil {
		return skipped(why), err
	}
	o := eventOutcome{customer: by.cust, attributedBy: by.step, status: ledger.EventProcessed}
	if ev.CustomerID == "" {
		o.status, o.outcome = ledger.EventSkipped, "subscription checkout without a processor customer: nothing to remember"
		return o, nil
	}
	o.outcome = fmt.Sprintf("subscription checkout attributed by %s to customer %d (processor customer %s); "+
		"no sale: the subscription's invoices record them", by.step, by.cust.ID, ev.CustomerID)
	return o, nil
}

// revisitInvoices processes again the invoices of a subscription that were
// skipped for want of attribution: a subscription checkout attributed
// since (its invoice may be processed before the checkout).
func (p *ProcessorService) revisitInvoices(ctx context.Context, programID int64, subscriptionID string) error {
	var ids []string
	if err := p.db.SelectContext(ctx, &ids, `
		SELECT event_id FROM processor_events
		WHERE program_id = $1 AND subscription_id = $2 AND status = 'skipped' AND outcome = $3
			AND event_type IN ($4, $5)
		ORDER BY received_at`, programID, subscriptionID, ledger.SkipNoAttribution,
		ledger.StripeInvoicePaid, ledger.StripeInvoicePaymentOK); err != nil {
		return fmt.Errorf("find invoices of subscription %s to revisit: %w", subscriptionID, err)
	}
	for _, id := range ids {
		res, err := p.process(ctx, id, true)
		if err != nil {
			return fmt.Errorf("revisit invoice event %s: %w", id, err)
		}
		p.logger.Info("unattributed invoice revisited after its subscription checkout", "event_id", id,
			"status", res.Status, "outcome", res.Outcome)
	}
	return nil
}

// lockSubscription serialises the events of one subscription (its
// checkout and its invoices), so that an invoice processed while its
// checkout is being processed either sees the processor customer id the
// checkout saves, or is skipped before the checkout looks for skipped
// invoices to revisit.
func lockSubscription(ctx context.Context, tx *sqlx.Tx, programID int64, subscriptionID string) error {
	if subscriptionID == "" {
		return nil
	}
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`,
		"processor-subscription:"+strconv.FormatInt(programID, 10)+":"+subscriptionID)
	return err
}

// attribute finds the customer of a payment in the spec's order and locks
// it; nil when no step finds a customer of the program. It reports the
// step that found it.
func (p *ProcessorService) attribute(ctx context.Context, tx *sqlx.Tx, prog *ledger.Program, ev *ledger.PaymentEvent, now time.Time) (*ledger.Customer, string, error) {
	for _, step := range ledger.AttributionPlan(ev, p.keys) {
		var cust *ledger.Customer
		var err error
		switch step.Kind {
		case ledger.StepClickID, ledger.StepClientReference:
			cust, err = p.customerByClick(ctx, tx, prog.ID, step.Value, now)
		case ledger.StepEmail:
			cust, err = customerByEmail(ctx, tx, prog.ID, step.Value)
		case ledger.StepProcessorCustomer:
			cust, err = scanCustomer(tx.QueryRowContext(ctx, `SELECT `+customerColumns+`
				FROM customers WHERE program_id = $1 AND processor_customer_id = $2
				ORDER BY id DESC LIMIT 1 FOR NO KEY UPDATE`, prog.ID, step.Value))
		case ledger.StepCustomerKey:
			cust, err = customerByKey(ctx, tx, nil, prog.ID, step.Value)
		}
		if ledger.ErrorCode(err) == ledger.ENotFound {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		return cust, step.Kind, nil
	}
	return nil, "", nil
}

// customerByClick is the customer a click of the program brought (a click
// still in the queue included). A value that is not our click id, or a
// click of another program, finds nothing.
func (p *ProcessorService) customerByClick(ctx context.Context, tx *sqlx.Tx, programID int64, clickID string, now time.Time) (*ledger.Customer, error) {
	click, err := resolveClick(ctx, tx, nil, p.pending, clickID)
	if err != nil {
		return nil, err
	}
	if click.ProgramID != programID {
		return nil, notFound("click")
	}
	return customerForClick(ctx, tx, click, now)
}

// customerByEmail is the program's customer whose lead gave the email: a
// settled lead (the email is on the customer) or a provisional one (the
// email is on the lead only until it settles). The latest lead wins.
func customerByEmail(ctx context.Context, tx *sqlx.Tx, programID int64, email string) (*ledger.Customer, error) {
	var id int64
	err := tx.QueryRowContext(ctx, `
		SELECT id FROM (
			SELECT c.id, c.updated_at AS at FROM customers c WHERE c.program_id = $1 AND lower(c.email) = $2
			UNION ALL
			SELECT l.customer_id, l.occurred_at FROM leads l
			WHERE l.program_id = $1 AND lower(l.email) = $2 AND l.customer_id IS NOT NULL
		) m ORDER BY at DESC, id DESC LIMIT 1`, programID, email).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("customer")
	} else if err != nil {
		return nil, err
	}
	return scanCustomer(tx.QueryRowContext(ctx, `SELECT `+customerColumns+`
		FROM customers WHERE id = $1 FOR NO KEY UPDATE`, id))
}

// saveProcessorCustomer saves the processor's customer id on a customer
// that has none, so that later payments (renewals) find it.
func saveProcessorCustomer(ctx context.Context, tx *sqlx.Tx, cust *ledger.Customer, processorCustomerID string, now time.Time) error {
	if processorCustomerID == "" || cust.ProcessorCustomerID != "" {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `
		UPDATE customers SET processor_customer_id = $2, updated_at = $3 WHERE id = $1 AND processor_customer_id IS NULL`,
		cust.ID, processorCustomerID, now); err != nil {
		return err
	}
	cust.ProcessorCustomerID = processorCustomerID
	return nil
}

// linkInvoicePayment records which payment paid an invoice, so that a
// refund of that payment finds the invoice's sale.
func linkInvoicePayment(ctx context.Context, tx *sqlx.Tx, prog *ledger.Program, ev *ledger.PaymentEvent) (eventOutcome, error) {
	if _, err := tx.ExecContext(ctx, `
		INSERT INTO processor_invoice_payments (program_id, invoice_id, payment_id) VALUES ($1, $2, $3)
		ON CONFLICT DO NOTHING`, prog.ID, ev.TransactionID, ev.PaymentID); err != nil {
		return eventOutcome{}, err
	}
	if _, err := tx.ExecContext(ctx, `
		UPDATE sales SET provider_payment_id = $3
		WHERE program_id = $1 AND processor_event_id = $2 AND source = 'processor' AND provider_payment_id IS NULL`,
		prog.ID, ev.TransactionID, ev.PaymentID); err != nil {
		return eventOutcome{}, err
	}
	return eventOutcome{status: ledger.EventProcessed,
		outcome: fmt.Sprintf("payment %s of invoice %s linked", ev.PaymentID, ev.TransactionID)}, nil
}

// refund applies the refunds of a charge to the sale its payment recorded,
// through applyRefund, the refund endpoint's own reversal. Only a sale
// recorded from processor events is linked to the payment: a sale the
// brand reported through the sale endpoint is not (the spec's caveat).
func (p *ProcessorService) refund(ctx context.Context, tx *sqlx.Tx, prog *ledger.Program, ev *ledger.PaymentEvent, w *eventWork, now time.Time) (eventOutcome, error) {
	// Refund events of one charge run one at a time: each works out what
	// is new from what the others applied.
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`,
		"processor-charge:"+strconv.FormatInt(prog.ID, 10)+":"+ev.ChargeID); err != nil {
		return eventOutcome{}, err
	}
	payments := []string{ev.ChargeID}
	if ev.PaymentID != "" {
		payments = append(payments, ev.PaymentID)
	}
	var sale struct {
		ID            int64  `db:"id"`
		TransactionID string `db:"processor_event_id"`
		Currency      string `db:"currency"`
		CustomerID    *int64 `db:"customer_id"`
	}
	err := tx.GetContext(ctx, &sale, `
		SELECT s.id, s.processor_event_id, s.currency, s.customer_id FROM sales s
		WHERE s.program_id = $1 AND s.source = 'processor' AND NOT s.is_test
			AND (s.provider_payment_id = ANY($2) OR s.processor_event_id IN (
				SELECT i.invoice_id FROM processor_invoice_payments i WHERE i.program_id = $1 AND i.payment_id = ANY($2)))
		ORDER BY s.id LIMIT 1`, prog.ID, pq.Array(payments))
	if errors.Is(err, sql.ErrNoRows) {
		return skipped("no sale recorded from this payment (a sale reported through the sale endpoint is not linked to it)"), nil
	} else if err != nil {
		return eventOutcome{}, err
	}
	if !strings.EqualFold(sale.Currency, ev.Currency) {
		return skipped(fmt.Sprintf("refund in %s of a sale in %s", strings.ToUpper(ev.Currency), sale.Currency)), nil
	}
	var applied minorSum
	var known []string
	if err := tx.QueryRowContext(ctx, `
		SELECT COALESCE(sum(amount_cents) FILTER (WHERE source = 'processor'), 0) FROM refunds WHERE sale_id = $1`,
		sale.ID).Scan(&applied); err != nil {
		return eventOutcome{}, err
	}
	if err := tx.SelectContext(ctx, &known, `SELECT refund_id FROM refunds WHERE sale_id = $1 AND refund_id IS NOT NULL`,
		sale.ID); err != nil {
		return eventOutcome{}, err
	}
	isKnown := func(id string) bool {
		for _, k := range known {
			if k == id {
				return true
			}
		}
		return false
	}
	o := eventOutcome{saleID: sale.ID}
	if sale.CustomerID != nil {
		if o.customer, err = scanCustomer(tx.QueryRowContext(ctx, `SELECT `+customerColumns+`
			FROM customers WHERE id = $1`, *sale.CustomerID)); err != nil && ledger.ErrorCode(err) != ledger.ENotFound {
			return eventOutcome{}, err
		}
	}
	steps := ledger.PlanProcessorRefunds(ev, int64(applied), isKnown)
	if len(steps) == 0 {
		o.status, o.outcome = ledger.EventSkipped, fmt.Sprintf("refunds of %s already applied to sale %d", ev.ChargeID, sale.ID)
		return o, nil
	}
	var done []string
	for _, st := range steps {
		res, msgs, err := applyRefund(ctx, tx, p.logger, ledger.RefundInput{ProgramID: prog.ID,
			TransactionID: sale.TransactionID, AmountCents: st.AmountCents, RefundID: st.RefundID,
			Reason: st.Reason, Source: ledger.SourceProcessor}, now)
		if err != nil {
			return eventOutcome{}, err
		}
		w.msgs = append(w.msgs, msgs...)
		done = append(done, describeRefund(st, res))
	}
	o.status = ledger.EventProcessed
	o.outcome = fmt.Sprintf("sale %d: %s", sale.ID, strings.Join(done, "; "))
	return o, nil
}

func describeRefund(st ledger.RefundStep, r *ledger.RefundResult) string {
	s := fmt.Sprintf("refund %s of %d", st.RefundID, st.AmountCents)
	switch r.Status {
	case ledger.RefundReversed, ledger.RefundRefunded:
		return fmt.Sprintf("%s: commission %d %s (share %d)", s, r.CommissionID, r.Status, r.DeductionMinor)
	case ledger.RefundSkipped:
		return fmt.Sprintf("%s: skipped (%s)", s, r.SkipReason)
	}
	return s + ": " + r.Message
}
