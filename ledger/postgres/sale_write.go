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

// qWriteSales writes planned sales: each parameter is an array with one
// element per sale (an empty text element is NULL where a column may be
// NULL). A sale whose transaction id was taken meanwhile writes nothing:
// every other write reads the sale's inserted row. It returns one row per
// sale, in their order: the sale's id, time and click (NULL when its id
// was taken), and its commission's id and approval date (NULL when it
// wrote none). Foreign keys are checked at the end of the statement, when
// a new customer's row exists. The rows it updates are found by = ANY of
// an array, which reads them by their index whatever the plan's estimates
// (a join with the input could be planned as a scan of the whole table),
// and the clicks by the parameters themselves, so that the plan keeps
// only the partitions of those clicks when it starts. A click's id carries
// its time, so matching ids and times separately finds no other click.
var qWriteSales = `
		WITH input AS (
			SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[], $5::bigint[], $6::text[],
				$7::text[], $8::boolean[], $9::boolean[], $10::text[], $11::text[], $12::text[], $13::text[],
				$14::boolean[], $15::text[], $16::text[], $17::text[], $18::timestamptz[], $19::timestamptz[],
				$20::boolean[], $21::bigint[], $22::timestamptz[], $23::boolean[], $24::boolean[], $25::timestamptz[],
				$26::text[], $27::timestamptz[], $28::numeric[], $29::bigint[], $30::text[], $31::bigint[],
				$32::timestamptz[], $33::boolean[], $34::bigint[])
			WITH ORDINALITY AS u (program_id, customer_id, partner_id, transaction_id, amount_cents, currency,
				sale_type, is_recurring, is_test, source, click_id, provider, provider_payment_id, livemode,
				subscription_id, product_id, metadata, occurred_at, now, new_customer, new_link_id, new_click_at,
				tracking_log, converts, first_paid, converted_click_id, converted_click_at, fee_rate, fee_minor,
				commission_currency, commission_minor, approve_after, first_only, policy_id, ord)
		), sale AS (
			INSERT INTO sales (program_id, customer_id, partner_id, processor_event_id, amount_cents, currency,
				sale_type, is_recurring, is_test, source, click_id, provider, provider_payment_id, livemode,
				subscription_id, product_id, metadata, occurred_at, created_at)
			SELECT program_id, customer_id, partner_id, transaction_id, amount_cents, currency, sale_type,
				is_recurring, is_test, source, NULLIF(click_id, ''), NULLIF(provider, ''), NULLIF(provider_payment_id, ''),
				livemode, NULLIF(subscription_id, ''), NULLIF(product_id, ''), metadata::jsonb, occurred_at, now
			FROM input ORDER BY ord
			ON CONFLICT ON CONSTRAINT sales_processor_event_id_key DO NOTHING
			RETURNING id, processor_event_id, occurred_at, click_id
		), written AS (
			SELECT input.*, sale.id AS sale_id FROM input JOIN sale ON sale.processor_event_id = input.transaction_id
		), new_customer AS (
			INSERT INTO customers (id, program_id, partner_id, link_id, click_id, click_occurred_at, is_test, status,
				first_paid_at, created_at, updated_at)
			SELECT customer_id, program_id, partner_id, new_link_id, click_id, new_click_at, is_test,
				CASE WHEN converts THEN 'conversion' ELSE 'click' END, CASE WHEN converts THEN first_paid END, now, now
			FROM written WHERE new_customer
		), tracking_log AS (
			INSERT INTO tracking_logs (program_id, event_type, is_test, source, reference, created_at)
			SELECT program_id, 'sale', is_test, source, NULLIF(transaction_id, ''), now FROM written
			WHERE tracking_log
		), converting AS (
			SELECT customer_id, first_paid, now FROM written WHERE converts AND NOT new_customer
		), customer AS (
			UPDATE customers SET status = 'conversion', first_paid_at = w.first_paid, updated_at = w.now
			FROM converting w
			WHERE customers.id = ANY (ARRAY(SELECT customer_id FROM converting)) AND customers.id = w.customer_id
				AND ` + customerChanges("w.first_paid") + `
		), lead AS (
			UPDATE leads SET converted = true
			WHERE customer_id = ANY (ARRAY(SELECT customer_id FROM converting)) AND NOT converted
		), click AS (
			UPDATE clicks SET converted = true
			WHERE click_id = ANY ($26::text[]) AND occurred_at = ANY ($27::timestamptz[]) AND NOT converted
				AND click_id IN (SELECT converted_click_id FROM written)
		), fee AS (
			INSERT INTO platform_fees (sale_id, program_id, currency, rate_percent, amount_minor, created_at)
			SELECT sale_id, program_id, currency, fee_rate, fee_minor, now FROM written WHERE converts
		), commission AS (
			INSERT INTO commissions (program_id, partner_id, sale_id, customer_id, currency, original_minor,
				amount_minor, status, approve_after, policy_id, created_at, updated_at)
			SELECT program_id, partner_id, sale_id, customer_id, commission_currency, commission_minor,
				commission_minor, 'pending', approve_after, policy_id, now, now
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

// customerChanges is the condition under which a sale converting a
// customer (first paid at firstPaid) changes its row: its first sale, or
// one dated before its first paid sale. A repeat sale leaves the customer
// as it is, updated_at included (customerByEmail orders by it: the latest
// lead, not the latest sale).
func customerChanges(firstPaid string) string {
	return `(status IS DISTINCT FROM 'conversion' OR first_paid_at IS DISTINCT FROM ` + firstPaid + `)`
}

// writeSales runs qWriteSales for the planned sales and returns what each
// write reports, in their order.
func (s *SaleService) writeSales(ctx context.Context, tx *sqlx.Tx, items []*saleItem) ([]ledger.SaleWritten, error) {
	rows, err := s.stmts.in(ctx, tx, qWriteSales).QueryContext(ctx, newSaleColumns(items).args()...)
	if err != nil {
		return nil, writeFailure(ctx, err)
	}
	defer rows.Close()
	written := make([]ledger.SaleWritten, 0, len(items))
	for rows.Next() {
		var saleID, commissionID sql.NullInt64
		var occurredAt, approveAfter sql.NullTime
		var clickID sql.NullString
		if err := rows.Scan(&saleID, &occurredAt, &clickID, &commissionID, &approveAfter); err != nil {
			return nil, writeFailure(ctx, err)
		}
		written = append(written, ledger.SaleWritten{SaleID: saleID.Int64, OccurredAt: occurredAt.Time, ClickID: clickID.String,
			CommissionID: commissionID.Int64, ApproveAfter: approveAfter.Time})
	}
	if err := rows.Err(); err != nil {
		return nil, writeFailure(ctx, err)
	}
	if len(written) != len(items) {
		return nil, fmt.Errorf("the write of %d sales returned %d rows", len(items), len(written))
	}
	return written, nil
}

// writeFailure is what a failed write returns: the error itself when the
// whole transaction is to run again or the caller gave up,
// errClickCustomerRaced when a concurrent sale created a new customer
// first, else a *writeFailed.
func writeFailure(ctx context.Context, err error) error {
	switch {
	case isRetryable(err) || ctx.Err() != nil:
		return err
	case uniqueViolation(err) == "customers_program_click_id_key":
		return errClickCustomerRaced
	}
	return &writeFailed{err: err}
}

// saleColumns are qWriteSales's parameters: one slice per column, one
// element per sale. Times go as text (RFC 3339 to the nanosecond, which
// Postgres rounds to its microsecond as it does a time parameter).
type saleColumns struct {
	programID, amountCents, feeMinor                                                            []int64
	customerID, partnerID, newLinkID, commissionMinor, policyID                                 []sql.NullInt64
	transactionID, currency, saleType, source, clickID, provider, providerPaymentID, subscripID []string
	productID, occurredAt, now, feeRate                                                         []string
	metadata, newClickAt, firstPaid, convertedClickID, convertedClickAt                         []sql.NullString
	commissionCurrency, approveAfter                                                            []sql.NullString
	isRecurring, isTest, newCustomer, trackingLog, converts, firstOnly                          []bool
	livemode                                                                                    []sql.NullBool
}

func newSaleColumns(items []*saleItem) *saleColumns {
	c := &saleColumns{}
	for _, it := range items {
		p, sale := it.plan, it.plan.Sale
		var customerID, partnerID, linkID *int64
		var newClickAt sql.NullString
		if cu := p.Customer; cu != nil {
			customerID, partnerID, linkID = &cu.ID, cu.PartnerID, cu.LinkID
			if at, ok := ledger.ClickTime(cu.ClickID); ok && p.NewCustomer {
				newClickAt = sql.NullString{String: timeText(at), Valid: true}
			}
		}
		if !p.NewCustomer {
			linkID = nil
		}
		c.programID = append(c.programID, sale.ProgramID)
		c.customerID = append(c.customerID, optInt64(customerID))
		c.partnerID = append(c.partnerID, optInt64(partnerID))
		c.transactionID = append(c.transactionID, sale.TransactionID)
		c.amountCents = append(c.amountCents, sale.AmountCents)
		c.currency = append(c.currency, string(sale.Currency))
		c.saleType = append(c.saleType, sale.SaleType)
		c.isRecurring = append(c.isRecurring, sale.IsRecurring)
		c.isTest = append(c.isTest, sale.IsTest)
		c.source = append(c.source, sale.Source)
		c.clickID = append(c.clickID, sale.ClickID)
		c.provider = append(c.provider, sale.Provider)
		c.providerPaymentID = append(c.providerPaymentID, sale.ProviderPaymentID)
		c.livemode = append(c.livemode, optBool(sale.Livemode))
		c.subscripID = append(c.subscripID, sale.SubscriptionID)
		c.productID = append(c.productID, sale.ProductID)
		c.metadata = append(c.metadata, optString(metadataArg(sale)))
		c.occurredAt = append(c.occurredAt, timeText(sale.OccurredAt))
		c.now = append(c.now, timeText(it.now))
		c.newCustomer = append(c.newCustomer, p.NewCustomer)
		c.newLinkID = append(c.newLinkID, optInt64(linkID))
		c.newClickAt = append(c.newClickAt, newClickAt)
		c.trackingLog = append(c.trackingLog, p.TrackingLog)
		c.converts = append(c.converts, p.Converts)
		c.firstPaid = append(c.firstPaid, sql.NullString{String: timeText(p.FirstPaid), Valid: p.Converts})
		var clickID, clickAt sql.NullString
		if at, ok := ledger.ClickTime(customerClick(p.Customer)); ok && p.Converts {
			clickID, clickAt = sql.NullString{String: p.Customer.ClickID, Valid: true}, sql.NullString{String: timeText(at), Valid: true}
		}
		c.convertedClickID = append(c.convertedClickID, clickID)
		c.convertedClickAt = append(c.convertedClickAt, clickAt)
		c.feeRate = append(c.feeRate, p.Fee.RatePercent.String())
		c.feeMinor = append(c.feeMinor, p.Fee.AmountMinor)
		var amount, policy sql.NullInt64
		var currency, approve sql.NullString
		if cm := p.Commission; cm != nil {
			amount = sql.NullInt64{Int64: cm.AmountMinor, Valid: true}
			policy = optInt64(cm.PolicyID)
			currency = sql.NullString{String: string(cm.Currency), Valid: true}
			approve = sql.NullString{String: timeText(cm.ApproveAfter), Valid: true}
		}
		c.commissionCurrency = append(c.commissionCurrency, currency)
		c.commissionMinor = append(c.commissionMinor, amount)
		c.approveAfter = append(c.approveAfter, approve)
		c.firstOnly = append(c.firstOnly, p.Commission != nil && p.Commission.FirstOnly)
		c.policyID = append(c.policyID, policy)
	}
	return c
}

// args are the columns in qWriteSales's order.
func (c *saleColumns) args() []any {
	return []any{
		pq.Array(c.programID), pq.Array(c.customerID), pq.Array(c.partnerID), pq.Array(c.transactionID),
		pq.Array(c.amountCents), pq.Array(c.currency), pq.Array(c.saleType), pq.Array(c.isRecurring),
		pq.Array(c.isTest), pq.Array(c.source), pq.Array(c.clickID), pq.Array(c.provider),
		pq.Array(c.providerPaymentID), pq.Array(c.livemode), pq.Array(c.subscripID), pq.Array(c.productID),
		pq.Array(c.metadata), pq.Array(c.occurredAt), pq.Array(c.now), pq.Array(c.newCustomer),
		pq.Array(c.newLinkID), pq.Array(c.newClickAt), pq.Array(c.trackingLog), pq.Array(c.converts),
		pq.Array(c.firstPaid), pq.Array(c.convertedClickID), pq.Array(c.convertedClickAt), pq.Array(c.feeRate),
		pq.Array(c.feeMinor), pq.Array(c.commissionCurrency), pq.Array(c.commissionMinor), pq.Array(c.approveAfter),
		pq.Array(c.firstOnly), pq.Array(c.policyID),
	}
}

// customerClick is the click a customer came by ("" for none).
func customerClick(c *ledger.Customer) string {
	if c == nil {
		return ""
	}
	return c.ClickID
}

// metadataArg is a sale's metadata as a jsonb parameter (nil: none).
func metadataArg(s ledger.Sale) *string {
	if len(s.Metadata) == 0 {
		return nil
	}
	m := string(s.Metadata)
	return &m
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
