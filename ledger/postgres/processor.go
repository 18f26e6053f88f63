package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/stripe"
)

// ProcessorService implements ledger.ProcessorInbox (the edge stores and
// queues verified events; the maintenance sweep queues what a failed
// enqueue left) and ledger.PaymentEventService (the processor worker).
//
// Processing an event runs in one transaction under the stored event's
// row lock: it attributes the payment in the spec's order, records the
// sale through the sale endpoint's own write path (recordSales) or the
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
	// The sale write's statements are prepared outside the transaction,
	// which may hold the pool's last connection.
	if err := p.sales.stmts.prepare(ctx); err != nil {
		return nil, err
	}
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
	ev, err := stripe.DecodeEvent([]byte(row.Payload))
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
