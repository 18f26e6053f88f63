package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/partnertrack/partnertrack/ledger"
)

// refund applies the refunds of a charge to the sale its payment recorded,
// through applyRefund, the refund endpoint's own write path, inside the
// event's transaction (its statements unprepared). Only a sale
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
		res, msgs, err := applyRefund(ctx, tx, nil, ledger.RefundInput{ProgramID: prog.ID,
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
