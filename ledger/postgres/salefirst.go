package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/partnertrack/partnertrack/ledger"
)

// The first sale by click id of a customer the click has not brought yet
// (most sales of a tracked checkout) writes that customer with itself, in
// the lean path's write: one statement reads the click, checks that its
// partner is enrolled, and inserts the sale, the customer, the tracking
// log, the click's conversion, the platform fee and the commission, or
// nothing at all. It so needs no savepoint in a batch of sales (a refusal
// leaves nothing behind) and no separate statement for the customer:
// two round trips of its own, as a repeat sale, where the customer read
// and created first took four.
//
// The statement takes a click already in Postgres, of the sale's program
// and not a test click. Any other sale of a new customer (a click still
// in the queue, of another program, a test click) finds no click row,
// writes nothing, and goes on the usual way (attribute).

// qWriteFirstSale records the first sale of a click's customer: the
// program ($1), the click ($2, at $3), the sale ($4–$17 as in
// qWriteLeanSale, $17 being now), the platform fee ($18 rate, $19 amount)
// and the commission ($20 currency, $21 amount, none when NULL, $22
// approval date). Every write reads the sale row, and the sale is written
// only when the click's partner may earn from the program (allowed), so a
// refusal writes nothing; the customer's id is drawn first, for the sale
// to name it. A customer of the click created meanwhile by a concurrent
// sale makes the customer insert fail (its unique key): the sale is then
// recorded again (errClickCustomerRaced), and finds that customer.
const qWriteFirstSale = `
		WITH click AS (
			SELECT c.partner_id, c.link_id, c.occurred_at,
				c.partner_id IS NULL OR EXISTS (SELECT 1 FROM enrollments e
					WHERE e.program_id = $1 AND e.partner_id = c.partner_id AND e.status = 'active') AS allowed
			FROM clicks c
			WHERE c.click_id = $2 AND c.occurred_at = $3 AND c.program_id = $1 AND NOT c.is_test
		), new_customer AS (
			SELECT nextval('customers_id_seq') AS id FROM click WHERE allowed
		), sale AS (
			INSERT INTO sales (program_id, customer_id, partner_id, processor_event_id, amount_cents, currency,
				sale_type, is_recurring, is_test, source, click_id, provider, provider_payment_id, livemode,
				subscription_id, product_id, metadata, occurred_at, created_at)
			SELECT $1, new_customer.id, click.partner_id, $4, $5, $6, $7, $8, false, $9, $2, NULLIF($10, ''),
				NULLIF($11, ''), $12, NULLIF($13, ''), NULLIF($14, ''), $15::jsonb, $16, $17
			FROM click, new_customer
			ON CONFLICT ON CONSTRAINT sales_processor_event_id_key DO NOTHING
			RETURNING id, customer_id, partner_id, occurred_at
		), customer AS (
			INSERT INTO customers (id, program_id, partner_id, link_id, click_id, click_occurred_at, is_test, status,
				first_paid_at, created_at, updated_at)
			SELECT sale.customer_id, $1, click.partner_id, click.link_id, $2, click.occurred_at, false,
				CASE WHEN click.partner_id IS NULL THEN 'click' ELSE 'conversion' END,
				CASE WHEN click.partner_id IS NOT NULL THEN $16::timestamptz END, $17, $17
			FROM sale, click
		), tracking_log AS (
			INSERT INTO tracking_logs (program_id, event_type, is_test, source, reference, created_at)
			SELECT $1, 'sale', false, $9, NULLIF($4, ''), $17 FROM sale
		), converted_click AS (
			UPDATE clicks SET converted = true
			WHERE click_id = $2 AND occurred_at = $3 AND NOT converted
				AND EXISTS (SELECT 1 FROM sale WHERE partner_id IS NOT NULL)
		), fee AS (
			INSERT INTO platform_fees (sale_id, program_id, currency, rate_percent, amount_minor, created_at)
			SELECT id, $1, $6, $18, $19, $17 FROM sale WHERE partner_id IS NOT NULL
		), commission AS (
			INSERT INTO commissions (program_id, partner_id, sale_id, customer_id, currency, original_minor,
				amount_minor, status, approve_after, created_at, updated_at)
			SELECT $1, partner_id, id, customer_id, $20, $21, $21, 'pending', $22, $17, $17 FROM sale
			WHERE partner_id IS NOT NULL AND $21::bigint IS NOT NULL
			RETURNING id, approve_after
		)
		SELECT click.partner_id, click.link_id, click.allowed, sale.customer_id, sale.id, sale.occurred_at,
			commission.id, commission.approve_after
		FROM click LEFT JOIN sale ON true LEFT JOIN commission ON true`

// errClickCustomerRaced: a concurrent sale of the same click created its
// customer first (and committed). The transaction is aborted; run again,
// the sale finds that customer.
var errClickCustomerRaced = errors.New("the click's customer was created by a concurrent sale")

// recordFirstSaleOfClick records a sale by click id whose customer does
// not exist yet, with that customer (qWriteFirstSale). Not handled: the
// click is not one the statement takes, nothing was written, and the
// caller attributes the sale the usual way. The answers are those of
// recordAttributedLean: 400 for a partner not enrolled (nothing written),
// 409 for a transaction id taken meanwhile, the sale stored without
// commission for a click without partner.
func (s *SaleService) recordFirstSaleOfClick(ctx context.Context, tx *sqlx.Tx, prog *ledger.Program, sale ledger.Sale, facts saleFacts, now time.Time) (out saleOutcome, handled bool, err error) {
	at, ok := ledger.ClickTime(sale.ClickID)
	if !ok {
		return saleOutcome{}, false, nil
	}
	cust := &ledger.Customer{ProgramID: prog.ID, ClickID: sale.ClickID, CreatedAt: now}
	// Planned as a converting sale; a click without partner turns out not
	// to convert, and the statement then writes no fee and no commission.
	plan, why := s.planLeanSale(prog, sale, cust, true, now)
	commissionAmount, commissionCurrency, approveAfter := plan.commission.args()
	var (
		allowed    bool
		customerID sql.NullInt64
		written    leanWritten
		saleID     sql.NullInt64
		saleAt     sql.NullTime
	)
	err = s.lean.in(ctx, tx, qWriteFirstSale).QueryRowContext(ctx,
		prog.ID, sale.ClickID, at, sale.TransactionID, sale.AmountCents, string(sale.Currency),
		sale.SaleType, sale.IsRecurring, sale.Source, sale.Provider, sale.ProviderPaymentID, sale.Livemode,
		sale.SubscriptionID, sale.ProductID, metadataArg(sale), sale.OccurredAt, now,
		plan.fee.ratePercent, plan.fee.amountMinor, commissionCurrency, commissionAmount, approveAfter).
		Scan(&cust.PartnerID, &cust.LinkID, &allowed, &customerID, &saleID, &saleAt,
			&written.commissionID, &written.approveAfter)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return saleOutcome{}, false, nil
	case uniqueViolation(err) == "customers_program_click_id_key":
		return saleOutcome{}, true, errClickCustomerRaced
	case err != nil:
		return saleOutcome{}, true, leanFailure(ctx, err)
	case !allowed:
		return saleOutcome{}, true, ledger.NewError(ledger.ENoAttribution, ledger.MsgNoRelationship)
	}
	if saleID.Valid {
		written.inserted, written.saleID, written.occurredAt = true, saleID.Int64, saleAt.Time
		written.clickID = sql.NullString{String: sale.ClickID, Valid: true}
		cust.ID = customerID.Int64
		cust.Status = ledger.FunnelConversion
		if cust.PartnerID == nil {
			cust.Status = ledger.FunnelClick
		} else {
			cust.FirstPaidAt = &plan.firstPaid
		}
	}
	if cust.PartnerID == nil {
		plan.converts, plan.commission = false, nil
	}
	out, err = leanOutcome(ctx, tx, prog, plan, why, written, facts, now)
	return out, true, err
}
