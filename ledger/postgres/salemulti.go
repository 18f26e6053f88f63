package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/partnertrack/partnertrack/ledger"
)

// In a batch of sales, the repeat sales of customers that exist already
// (most sales of a busy program) are decided one by one, each after the
// read that locks its customer, and then written together by one
// statement, qWriteLeanSales: one round trip, one plan started and one set
// of constraint checks compiled for the whole group instead of one of each
// per sale. The group is written before any sale that would read what it
// writes: a later sale of one of its customers, or with one of its
// transaction ids, is read again once the group is written, so every sale
// sees the ones before it as if they had been written one at a time. A
// write that fails rolls the batch back, and its sales are then recorded
// one by one (flushSales), each answering as it would alone.

// qWriteLeanSales is qWriteLeanSale for many sales: each parameter is an
// array with one element per sale, in qWriteLeanSale's order (an empty
// text element is NULL where qWriteLeanSale says NULLIF). It returns one
// row per sale, in their order: the ids are NULL when its transaction id
// was taken meanwhile, the commission's when it wrote none. The sales
// name distinct customers and transaction ids (pendingLeanSales). A change
// to what qWriteLeanSale writes is made here too:
// TestSalesWrittenTogetherMatchSalesAlone compares the rows of both,
// column by column.
var qWriteLeanSales = `
		WITH input AS (
			SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[], $5::bigint[], $6::text[],
				$7::text[], $8::boolean[], $9::text[], $10::text[], $11::text[], $12::text[], $13::boolean[],
				$14::text[], $15::text[], $16::text[], $17::timestamptz[], $18::timestamptz[], $19::boolean[],
				$20::timestamptz[], $21::text[], $22::timestamptz[], $23::numeric[], $24::bigint[], $25::text[],
				$26::bigint[], $27::timestamptz[], $28::boolean[])
			WITH ORDINALITY AS u (program_id, customer_id, partner_id, transaction_id, amount_cents, currency,
				sale_type, is_recurring, source, click_id, provider, provider_payment_id, livemode, subscription_id,
				product_id, metadata, occurred_at, now, converts, first_paid, converted_click_id, converted_click_at,
				fee_rate, fee_minor, commission_currency, commission_minor, approve_after, first_only, ord)
		), sale AS (
			INSERT INTO sales (program_id, customer_id, partner_id, processor_event_id, amount_cents, currency,
				sale_type, is_recurring, is_test, source, click_id, provider, provider_payment_id, livemode,
				subscription_id, product_id, metadata, occurred_at, created_at)
			SELECT program_id, customer_id, partner_id, transaction_id, amount_cents, currency, sale_type,
				is_recurring, false, source, NULLIF(click_id, ''), NULLIF(provider, ''), NULLIF(provider_payment_id, ''),
				livemode, NULLIF(subscription_id, ''), NULLIF(product_id, ''), metadata::jsonb, occurred_at, now
			FROM input ORDER BY ord
			ON CONFLICT ON CONSTRAINT sales_processor_event_id_key DO NOTHING
			RETURNING id, processor_event_id, occurred_at, click_id
		), written AS (
			SELECT input.*, sale.id AS sale_id FROM input JOIN sale ON sale.processor_event_id = input.transaction_id
		), tracking_log AS (
			INSERT INTO tracking_logs (program_id, event_type, is_test, source, reference, created_at)
			SELECT program_id, 'sale', false, source, NULLIF(transaction_id, ''), now FROM written ORDER BY ord
		), customer AS (
			UPDATE customers SET status = 'conversion', first_paid_at = w.first_paid, updated_at = w.now
			FROM written w
			WHERE customers.id = w.customer_id AND w.converts AND ` + customerChanges("w.first_paid") + `
		), lead AS (
			UPDATE leads SET converted = true FROM written w
			WHERE leads.customer_id = w.customer_id AND NOT leads.converted AND w.converts
		), click AS (
			UPDATE clicks SET converted = true FROM written w
			WHERE clicks.click_id = w.converted_click_id AND clicks.occurred_at = w.converted_click_at
				AND NOT clicks.converted
		), fee AS (
			INSERT INTO platform_fees (sale_id, program_id, currency, rate_percent, amount_minor, created_at)
			SELECT sale_id, program_id, currency, fee_rate, fee_minor, now FROM written WHERE converts ORDER BY ord
		), commission AS (
			INSERT INTO commissions (program_id, partner_id, sale_id, customer_id, currency, original_minor,
				amount_minor, status, approve_after, created_at, updated_at)
			SELECT program_id, partner_id, sale_id, customer_id, commission_currency, commission_minor,
				commission_minor, 'pending', approve_after, now, now
			FROM written w
			WHERE commission_minor IS NOT NULL
				AND NOT (first_only AND EXISTS (SELECT 1 FROM commissions c WHERE c.customer_id = w.customer_id))
			ORDER BY ord
			RETURNING id, sale_id, approve_after
		)
		SELECT sale.id, sale.occurred_at, sale.click_id, commission.id, commission.approve_after
		FROM input LEFT JOIN sale ON sale.processor_event_id = input.transaction_id
			LEFT JOIN commission ON commission.sale_id = sale.id
		ORDER BY input.ord`

// pendingLeanSales are the lean sales of a batch decided and not written
// yet, with the customers and transaction ids they write.
type pendingLeanSales struct {
	sales        []pendingLeanSale
	customers    map[int64]bool
	transactions map[string]bool
}

type pendingLeanSale struct {
	item    *batchedSale
	program *ledger.Program
	planned plannedLeanSale
}

func newPendingLeanSales() *pendingLeanSales {
	return &pendingLeanSales{customers: map[int64]bool{}, transactions: map[string]bool{}}
}

func (p *pendingLeanSales) add(it *batchedSale, prog *ledger.Program, planned plannedLeanSale) {
	p.sales = append(p.sales, pendingLeanSale{item: it, program: prog, planned: planned})
	p.customers[planned.plan.cust.ID] = true
	p.transactions[planned.plan.sale.TransactionID] = true
}

// touches tells whether a sale read with context sc would read what the
// pending sales write: its customer, or a sale with its transaction id.
func (p *pendingLeanSales) touches(sale ledger.Sale, sc saleContext) bool {
	return p.transactions[sale.TransactionID] || (sc.customer != nil && p.customers[sc.customer.ID])
}

// writePendingSales writes the pending sales (one statement, or
// qWriteLeanSale for a sale alone) and answers each of them in the batch:
// the duplicate's 409 when its transaction id was taken meanwhile, else
// its outcome and brand events. An error rolls the batch back.
func (s *SaleService) writePendingSales(ctx context.Context, tx *sqlx.Tx, p *pendingLeanSales) error {
	if len(p.sales) == 0 {
		return nil
	}
	written, err := s.writeLeanSales(ctx, tx, p.sales)
	if err != nil {
		return err
	}
	for i, ps := range p.sales {
		it := ps.item
		out, err := leanOutcome(ctx, tx, ps.program, ps.planned.plan, ps.planned.why, written[i], ps.planned.facts, it.now)
		if it.answer, err = refusal(err); err != nil {
			return err
		}
		it.done = true
		if it.answer == nil {
			it.out, it.msgs = out, out.msgs
		}
	}
	*p = *newPendingLeanSales()
	return nil
}

// writeLeanSales stores the sales and what follows from each of them, and
// returns what each write reports, in their order.
func (s *SaleService) writeLeanSales(ctx context.Context, tx *sqlx.Tx, sales []pendingLeanSale) ([]leanWritten, error) {
	if len(sales) == 1 {
		w, err := writeLeanSale(ctx, tx, s.lean, sales[0].planned.plan, sales[0].item.now)
		return []leanWritten{w}, err
	}
	rows, err := s.lean.in(ctx, tx, qWriteLeanSales).QueryContext(ctx, newLeanSaleColumns(sales).args()...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	written := make([]leanWritten, 0, len(sales))
	for rows.Next() {
		var w leanWritten
		var saleID sql.NullInt64
		var occurredAt sql.NullTime
		if err := rows.Scan(&saleID, &occurredAt, &w.clickID, &w.commissionID, &w.approveAfter); err != nil {
			return nil, err
		}
		w.inserted, w.saleID, w.occurredAt = saleID.Valid, saleID.Int64, occurredAt.Time
		written = append(written, w)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(written) != len(sales) {
		return nil, fmt.Errorf("the write of %d sales returned %d rows", len(sales), len(written))
	}
	return written, nil
}

// leanSaleColumns are qWriteLeanSales's parameters: one slice per column,
// one element per sale. Times go as text (RFC 3339, to the nanosecond,
// which Postgres rounds to its microsecond as it does a time parameter).
type leanSaleColumns struct {
	programID, customerID, amountCents, feeMinor                                                []int64
	partnerID, commissionMinor                                                                  []sql.NullInt64
	transactionID, currency, saleType, source, clickID, provider, providerPaymentID, subscripID []string
	productID, occurredAt, now, feeRate                                                         []string
	metadata, firstPaid, convertedClickID, convertedClickAt, commissionCurrency, approveAfter   []sql.NullString
	isRecurring, converts, firstOnly                                                            []bool
	livemode                                                                                    []sql.NullBool
}

func newLeanSaleColumns(sales []pendingLeanSale) *leanSaleColumns {
	c := &leanSaleColumns{}
	for _, ps := range sales {
		l, now := ps.planned.plan, ps.item.now
		sale, cust := l.sale, l.cust
		c.programID = append(c.programID, sale.ProgramID)
		c.customerID = append(c.customerID, cust.ID)
		c.partnerID = append(c.partnerID, optInt64(cust.PartnerID))
		c.transactionID = append(c.transactionID, sale.TransactionID)
		c.amountCents = append(c.amountCents, sale.AmountCents)
		c.currency = append(c.currency, string(sale.Currency))
		c.saleType = append(c.saleType, sale.SaleType)
		c.isRecurring = append(c.isRecurring, sale.IsRecurring)
		c.source = append(c.source, sale.Source)
		c.clickID = append(c.clickID, sale.ClickID)
		c.provider = append(c.provider, sale.Provider)
		c.providerPaymentID = append(c.providerPaymentID, sale.ProviderPaymentID)
		c.livemode = append(c.livemode, optBool(sale.Livemode))
		c.subscripID = append(c.subscripID, sale.SubscriptionID)
		c.productID = append(c.productID, sale.ProductID)
		c.metadata = append(c.metadata, optString(metadataArg(sale)))
		c.occurredAt = append(c.occurredAt, timeText(sale.OccurredAt))
		c.now = append(c.now, timeText(now))
		c.converts = append(c.converts, l.converts)
		c.firstPaid = append(c.firstPaid, sql.NullString{String: timeText(l.firstPaid), Valid: l.converts})
		var clickID, clickAt sql.NullString
		if at, ok := ledger.ClickTime(cust.ClickID); ok && l.converts {
			clickID, clickAt = sql.NullString{String: cust.ClickID, Valid: true}, sql.NullString{String: timeText(at), Valid: true}
		}
		c.convertedClickID = append(c.convertedClickID, clickID)
		c.convertedClickAt = append(c.convertedClickAt, clickAt)
		c.feeRate = append(c.feeRate, l.fee.ratePercent.String())
		c.feeMinor = append(c.feeMinor, l.fee.amountMinor)
		amount, currency, approveAfter := l.commission.args()
		c.commissionCurrency = append(c.commissionCurrency, optString(currency))
		c.commissionMinor = append(c.commissionMinor, optInt64(amount))
		var approve sql.NullString
		if approveAfter != nil {
			approve = sql.NullString{String: timeText(*approveAfter), Valid: true}
		}
		c.approveAfter = append(c.approveAfter, approve)
		c.firstOnly = append(c.firstOnly, l.commission != nil && l.commission.firstOnly)
	}
	return c
}

// args are the columns in qWriteLeanSales's order.
func (c *leanSaleColumns) args() []any {
	return []any{
		pq.Array(c.programID), pq.Array(c.customerID), pq.Array(c.partnerID), pq.Array(c.transactionID),
		pq.Array(c.amountCents), pq.Array(c.currency), pq.Array(c.saleType), pq.Array(c.isRecurring),
		pq.Array(c.source), pq.Array(c.clickID), pq.Array(c.provider), pq.Array(c.providerPaymentID),
		pq.Array(c.livemode), pq.Array(c.subscripID), pq.Array(c.productID), pq.Array(c.metadata),
		pq.Array(c.occurredAt), pq.Array(c.now), pq.Array(c.converts), pq.Array(c.firstPaid),
		pq.Array(c.convertedClickID), pq.Array(c.convertedClickAt), pq.Array(c.feeRate), pq.Array(c.feeMinor),
		pq.Array(c.commissionCurrency), pq.Array(c.commissionMinor), pq.Array(c.approveAfter), pq.Array(c.firstOnly),
	}
}

func timeText(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func optInt64(v *int64) sql.NullInt64 {
	if v == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: *v, Valid: true}
}

func optString(v *string) sql.NullString {
	if v == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: *v, Valid: true}
}

func optBool(v *bool) sql.NullBool {
	if v == nil {
		return sql.NullBool{}
	}
	return sql.NullBool{Bool: *v, Valid: true}
}
