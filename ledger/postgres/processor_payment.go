package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/partnertrack/partnertrack/ledger"
)

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
	cur, why := ledger.PaymentPayable(ev, p.keys, prog.ID)
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
	it := newSaleItem(sale, cust.ID, now)
	if err := p.sales.recordSales(ctx, tx, []*saleItem{it}); err != nil {
		return eventOutcome{}, err
	}
	switch ledger.ErrorCode(it.answer) {
	case "":
	case ledger.EDuplicateTransaction:
		// Recorded by a concurrent call since the check above.
		o.status, o.outcome = ledger.EventSkipped, ev.TransactionID+" already recorded"
		return o, nil
	case ledger.ENoAttribution:
		o.status, o.outcome = ledger.EventSkipped, ledger.ErrorMessage(it.answer)
		return o, nil
	default:
		return eventOutcome{}, it.answer
	}
	res := it.outcome.Result
	o.status, o.saleID, o.hooks = ledger.EventProcessed, res.SaleID, it.msgs
	switch {
	case it.outcome.Answer != nil:
		// Stored without commission, as the sale endpoint stores it.
		o.outcome = fmt.Sprintf("sale %d recorded (attributed by %s) without commission: %s",
			o.saleID, step, ledger.ErrorMessage(it.outcome.Answer))
		p.logger.Error("processor sale recorded without commission", "event_id", ev.EventID,
			"sale_id", o.saleID, "reason", ledger.ErrorMessage(it.outcome.Answer))
	case res.CommissionID != nil:
		o.outcome = fmt.Sprintf("sale %d recorded (attributed by %s), commission %d", o.saleID, step, *res.CommissionID)
	default:
		o.outcome = fmt.Sprintf("sale %d recorded (attributed by %s): %s", o.saleID, step, res.Message)
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
