package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/partnertrack/partnertrack/ledger"
)

// The one write path of sales. A batch of sales (one sale is a batch of
// one; the sale endpoint and the processor's payments both come here) is
// recorded in rounds: one statement reads every sale's snapshot with its
// customer locked (qSaleSnapshots), ledger.PlanSale decides each sale,
// and one statement writes every planned sale with all that follows from
// it (qWriteSales): the customer a first sale's click brings, the
// tracking log, the customer's conversion, the platform fee and the
// commission. The brand webhooks of the round take one more statement
// when the program has endpoints for them. Nothing is written before a
// sale knows its answer, so a refusal leaves nothing behind. A sale that
// would read what an earlier sale of its round writes (the same customer,
// the click of a customer being created, the same transaction id) waits
// for the next round, which reads it again: every sale sees the ones
// before it, as if each had been written alone.

// qSaleSnapshots reads, for each sale (arrays of program $1, transaction
// id $2, customer key $3, click id $4 and its time $5, the processor's
// customer $6, 0 for none), the snapshot ledger.PlanSale decides on: the
// program, a sale already recorded with the transaction id, the customer
// (the processor's, else by key, else by click) locked, else the click
// and an id for the customer it brings, the partner's enrollment and the
// webhook endpoints ($7, $8 name the events). It also makes the rest of
// the transaction use the generic plans of its prepared statements
// (set_config, as SET LOCAL): statements on the partitioned clicks table
// are otherwise planned anew on every call (docs/decisions.md). The
// arrays are read through sub-selects so that a custom plan cannot see
// their lengths, and the customer reads say LIMIT 1 (true anyway of their
// unique keys) so that the generic plan looks cheapest without statistics.
var qSaleSnapshots = `
		WITH u AS (
			SELECT * FROM unnest((SELECT $1::bigint[]), (SELECT $2::text[]), (SELECT $3::text[]), (SELECT $4::text[]),
				(SELECT $5::timestamptz[]), (SELECT $6::bigint[]))
				WITH ORDINALITY AS u (program_id, transaction_id, customer_key, click_id, click_at, customer_id, ord)
		)
		SELECT u.ord, ` + programColumns + `,
			(SELECT id FROM sales WHERE processor_event_id = u.transaction_id) AS duplicate_of,
			set_config('plan_cache_mode', 'force_generic_plan', true) AS plan_cache_mode,
			` + snapshotCustomerColumns + `,
			cl.program_id AS click_program_id, cl.partner_id AS click_partner_id, cl.link_id AS click_link_id,
			cl.occurred_at AS click_occurred_at, cl.is_test AS click_is_test,
			CASE WHEN cl.program_id IS NOT NULL THEN nextval('customers_id_seq') END AS new_customer_id,
			EXISTS (SELECT 1 FROM enrollments WHERE program_id = p.id AND status = 'active'
				AND partner_id = COALESCE(ci.partner_id, ck.partner_id, cc.partner_id, cl.partner_id)) AS enrolled,
			` + endpointsFor("p.id", "$7") + ` AS sale_endpoints,
			` + endpointsFor("p.id", "$8") + ` AS commission_endpoints
		FROM u
		JOIN programs p ON p.id = u.program_id
		LEFT JOIN program_keys k ON k.program_id = p.id AND k.mode = 'live'
		LEFT JOIN LATERAL (
			SELECT ` + customerColumns + ` FROM customers
			WHERE id = u.customer_id AND program_id = p.id
			FOR NO KEY UPDATE LIMIT 1
		) ci (` + customerNames + `) ON true
		LEFT JOIN LATERAL (
			SELECT ` + customerColumns + ` FROM customers
			WHERE program_id = p.id AND customer_key = u.customer_key AND u.customer_key <> '' AND ci.id IS NULL
			FOR NO KEY UPDATE LIMIT 1
		) ck (` + customerNames + `) ON true
		LEFT JOIN LATERAL (
			SELECT ` + customerColumns + ` FROM customers
			WHERE program_id = p.id AND click_id = u.click_id AND u.click_id <> '' AND ci.id IS NULL AND ck.id IS NULL
			FOR NO KEY UPDATE LIMIT 1
		) cc (` + customerNames + `) ON true
		LEFT JOIN LATERAL (
			SELECT program_id, partner_id, link_id, occurred_at, is_test FROM clicks
			WHERE click_id = u.click_id AND occurred_at = u.click_at AND ci.id IS NULL AND ck.id IS NULL AND cc.id IS NULL
		) cl ON true
		ORDER BY u.ord`

// qWriteSales writes planned sales: each parameter is an array with one
// element per sale (an empty text element is NULL where a column may be
// NULL). A sale whose transaction id was taken meanwhile writes nothing:
// every other write reads the sale's inserted row. It returns one row per
// sale, in their order: the sale's id, time and click (NULL when its id
// was taken), and its commission's id and approval date (NULL when it
// wrote none). Foreign keys are checked at the end of the statement, when
// a new customer's row exists.
var qWriteSales = `
		WITH input AS (
			SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[], $5::bigint[], $6::text[],
				$7::text[], $8::boolean[], $9::boolean[], $10::text[], $11::text[], $12::text[], $13::text[],
				$14::boolean[], $15::text[], $16::text[], $17::text[], $18::timestamptz[], $19::timestamptz[],
				$20::boolean[], $21::bigint[], $22::timestamptz[], $23::boolean[], $24::boolean[], $25::timestamptz[],
				$26::text[], $27::timestamptz[], $28::numeric[], $29::bigint[], $30::text[], $31::bigint[],
				$32::timestamptz[], $33::boolean[])
			WITH ORDINALITY AS u (program_id, customer_id, partner_id, transaction_id, amount_cents, currency,
				sale_type, is_recurring, is_test, source, click_id, provider, provider_payment_id, livemode,
				subscription_id, product_id, metadata, occurred_at, now, new_customer, new_link_id, new_click_at,
				tracking_log, converts, first_paid, converted_click_id, converted_click_at, fee_rate, fee_minor,
				commission_currency, commission_minor, approve_after, first_only, ord)
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
			FROM written WHERE new_customer ORDER BY ord
		), tracking_log AS (
			INSERT INTO tracking_logs (program_id, event_type, is_test, source, reference, created_at)
			SELECT program_id, 'sale', is_test, source, NULLIF(transaction_id, ''), now FROM written
			WHERE tracking_log ORDER BY ord
		), customer AS (
			UPDATE customers SET status = 'conversion', first_paid_at = w.first_paid, updated_at = w.now
			FROM written w
			WHERE customers.id = w.customer_id AND w.converts AND NOT w.new_customer AND ` + customerChanges("w.first_paid") + `
		), lead AS (
			UPDATE leads SET converted = true FROM written w
			WHERE leads.customer_id = w.customer_id AND NOT leads.converted AND w.converts AND NOT w.new_customer
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

// customerChanges is the condition under which a sale converting a
// customer (first paid at firstPaid) changes its row: its first sale, or
// one dated before its first paid sale. A repeat sale leaves the customer
// as it is, updated_at included (customerByEmail orders by it: the latest
// lead, not the latest sale).
func customerChanges(firstPaid string) string {
	return `(status IS DISTINCT FROM 'conversion' OR first_paid_at IS DISTINCT FROM ` + firstPaid + `)`
}

// endpointsFor lists the ids of a program's live webhook endpoints that
// want an event (SQL expressions of both).
func endpointsFor(program, event string) string {
	return `ARRAY(SELECT id FROM webhook_endpoints
				WHERE program_id = ` + program + ` AND deleted_at IS NULL AND ` + event + ` = ANY (events) ORDER BY id)`
}

// customerNames name the columns of customerColumns, for a subquery that
// selects them.
const customerNames = `id, program_id, partner_id, link_id, click_id, customer_key, email, status,
	processor_customer_id, first_paid_at, is_test, created_at`

// snapshotCustomerColumns are the sale's customer in qSaleSnapshots: the
// processor's (ci), else the one with the sale's customer key (ck), else
// the one its click brought (cc); each is read only when the ones before
// found none, so each column comes whole from one of them.
const snapshotCustomerColumns = `COALESCE(ci.id, ck.id, cc.id) AS customer_id,
			COALESCE(ci.partner_id, ck.partner_id, cc.partner_id) AS customer_partner_id,
			COALESCE(ci.link_id, ck.link_id, cc.link_id) AS customer_link_id,
			COALESCE(ci.click_id, ck.click_id, cc.click_id) AS customer_click_id,
			COALESCE(ci.customer_key, ck.customer_key, cc.customer_key) AS customer_key,
			COALESCE(ci.email, ck.email, cc.email) AS customer_email,
			COALESCE(ci.status, ck.status, cc.status) AS customer_status,
			COALESCE(ci.processor_customer_id, ck.processor_customer_id, cc.processor_customer_id) AS customer_processor_id,
			COALESCE(ci.first_paid_at, ck.first_paid_at, cc.first_paid_at) AS customer_first_paid_at,
			COALESCE(ci.is_test, ck.is_test, cc.is_test) AS customer_is_test,
			COALESCE(ci.created_at, ck.created_at, cc.created_at) AS customer_created_at`

func saleStatements(db *DB) *preparedStatements {
	return newPreparedStatements(db, qSaleSnapshots, qWriteSales)
}

// saleItem is one sale through the write path, and what became of it.
type saleItem struct {
	sale ledger.Sale
	// customerID is the customer the processor attributed the sale to (0:
	// found by the sale's key or click).
	customerID int64
	now        time.Time
	// fallback is how far the plan is lowered (ledger.SalePlan.Fallbacks)
	// after its full write failed, of fallbacks possible.
	fallback, fallbacks int
	// base is a test sale's made-up transaction id; attempt counts the
	// ids found taken.
	base    string
	attempt int
	// clickResolved: the sale's click was read from the queue's record and
	// written, and is not looked for there again.
	clickResolved bool

	// The outcome in the transaction, answered once it commits.
	plan    ledger.SalePlan
	outcome ledger.SaleOutcome
	answer  error
	msgs    []ledger.OutboxMessage
	// err is the failure of the transaction that recorded the sale.
	err error
}

// reset forgets an outcome: a transaction run again starts afresh.
func (it *saleItem) reset() {
	*it = saleItem{sale: it.sale, customerID: it.customerID, now: it.now, fallback: it.fallback,
		base: it.base, attempt: it.attempt}
}

// answered is the call's answer.
func (it *saleItem) answered() (*ledger.SaleResult, error) {
	switch {
	case it.err != nil:
		return nil, it.err
	case it.answer != nil:
		return nil, it.answer
	case it.outcome.Answer != nil:
		return nil, it.outcome.Answer
	}
	return it.outcome.Result, nil
}

// writeFailed is a write statement Postgres refused (not a conflict, a
// deadlock or a cancelled call): the sale is tried again alone, then with
// its plan lowered.
type writeFailed struct{ err error }

func (e *writeFailed) Error() string { return "sale write: " + e.err.Error() }
func (e *writeFailed) Unwrap() error { return e.err }

// errClickCustomerRaced: a concurrent sale of the same click created its
// customer first (and committed). The transaction is aborted; run again,
// the sale finds that customer.
var errClickCustomerRaced = errors.New("the click's customer was created by a concurrent sale")

// recordSales records sales in tx, round by round, and leaves each one's
// answer and outbox messages on it. An error rolls everything back.
func (s *SaleService) recordSales(ctx context.Context, tx *sqlx.Tx, items []*saleItem) error {
	for _, it := range items {
		it.reset()
	}
	for round := items; len(round) > 0; {
		snaps, err := s.readSnapshots(ctx, tx, round)
		if err != nil {
			return err
		}
		var planned, later []*saleItem
		claimed := map[string]bool{}
		for i, it := range round {
			if snaps[i] == nil {
				it.answer = notFound("program")
				continue
			}
			if queued, err := s.resolveQueuedClick(ctx, tx, it, snaps[i]); err != nil {
				return err
			} else if queued {
				later = append(later, it)
				continue
			}
			plan := ledger.PlanSale(it.sale, *snaps[i], s.feePercent, it.now)
			if plan.Refusal != nil {
				it.answer = plan.Refusal
				continue
			}
			fallbacks := plan.Fallbacks()
			if it.fallbacks = len(fallbacks); it.fallback > 0 && it.fallbacks > 0 {
				plan = fallbacks[min(it.fallback, it.fallbacks)-1]
			}
			if keys := writeKeys(plan); claims(claimed, keys) {
				later = append(later, it)
				continue
			}
			it.plan = plan
			planned = append(planned, it)
		}
		retry, err := s.writePlanned(ctx, tx, planned)
		if err != nil {
			return err
		}
		round = append(later, retry...)
	}
	return nil
}

// writeKeys are what a planned sale writes that a later sale of its
// round may read: its transaction id and its customer (or the click of
// the customer it creates).
func writeKeys(p ledger.SalePlan) []string {
	keys := []string{"txn:" + p.Sale.TransactionID}
	switch c := p.Customer; {
	case c == nil:
	case p.NewCustomer:
		keys = append(keys, "click:"+c.ClickID)
	default:
		keys = append(keys, "customer:"+strconv.FormatInt(c.ID, 10))
	}
	return keys
}

// claims marks keys as claimed, unless one already is (and then marks
// none).
func claims(claimed map[string]bool, keys []string) bool {
	for _, k := range keys {
		if claimed[k] {
			return true
		}
	}
	for _, k := range keys {
		claimed[k] = true
	}
	return false
}

// resolveQueuedClick writes the click of a sale whose click the edge
// acknowledged but the clicks worker has not written yet (read from the
// edge's record of it); the sale is then read again. It reports whether
// it wrote one.
func (s *SaleService) resolveQueuedClick(ctx context.Context, tx *sqlx.Tx, it *saleItem, snap *ledger.SaleSnapshot) (bool, error) {
	if s.pending == nil || it.clickResolved || it.sale.IsTest || snap.Customer != nil || snap.Click != nil ||
		snap.DuplicateOf != 0 || it.sale.ClickID == "" {
		return false, nil
	}
	if _, ok := ledger.ClickTime(it.sale.ClickID); !ok {
		return false, nil
	}
	it.clickResolved = true
	c, err := s.pending.PendingClick(ctx, it.sale.ClickID)
	if ledger.ErrorCode(err) == ledger.ENotFound {
		return false, nil
	} else if err != nil {
		return false, err
	}
	return true, insertClick(ctx, tx, c)
}

// writePlanned writes the planned sales of a round and answers them; it
// returns the test sales whose made-up id was taken, to try under the
// next one.
func (s *SaleService) writePlanned(ctx context.Context, tx *sqlx.Tx, planned []*saleItem) ([]*saleItem, error) {
	if len(planned) == 0 {
		return nil, nil
	}
	written, err := s.writeSales(ctx, tx, planned)
	if err != nil {
		return nil, err
	}
	var retry []*saleItem
	var rows []outboxRow
	var owners []*saleItem
	for i, it := range planned {
		out, err := it.plan.Outcome(written[i])
		if err != nil {
			return nil, err
		}
		if out.Taken {
			it.attempt++
			if next, ok := it.plan.WithTestID(it.base, it.attempt+1); ok {
				it.sale.TransactionID = next.Sale.TransactionID
				retry = append(retry, it)
				continue
			}
			it.answer = duplicateOf(ctx, tx, it.plan.Sale.TransactionID)
			if ledger.ErrorCode(it.answer) == "" {
				return nil, it.answer
			}
			continue
		}
		it.outcome = out
		for _, ev := range out.Events {
			more, err := webhookRows(ev.Type, ev.Data, ev.Endpoints, it.now)
			if err != nil {
				return nil, err
			}
			rows = append(rows, more...)
			for range more {
				owners = append(owners, it)
			}
		}
	}
	msgs, err := insertOutboxRows(ctx, tx, rows, planned[0].now)
	if err != nil {
		return nil, err
	}
	for i, m := range msgs {
		owners[i].msgs = append(owners[i].msgs, m)
	}
	return retry, nil
}

// duplicateOf is the 409 of a transaction id whose insert conflicted. The
// conflicting sale is committed by then (an insert waits for the
// transaction that holds the id), so a fresh statement reads its id.
func duplicateOf(ctx context.Context, tx *sqlx.Tx, transactionID string) error {
	var id int64
	err := tx.QueryRowContext(ctx, `SELECT id FROM sales WHERE processor_event_id = $1`, transactionID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("sale %q conflicted but cannot be read", transactionID)
	} else if err != nil {
		return err
	}
	return ledger.DuplicateSale(id)
}

// snapshotRow is a row of qSaleSnapshots.
type snapshotRow struct {
	Ord int `db:"ord"`
	programRow
	DuplicateOf         sql.NullInt64  `db:"duplicate_of"`
	PlanCacheMode       string         `db:"plan_cache_mode"`
	CustomerID          sql.NullInt64  `db:"customer_id"`
	CustomerPartnerID   *int64         `db:"customer_partner_id"`
	CustomerLinkID      *int64         `db:"customer_link_id"`
	CustomerClickID     sql.NullString `db:"customer_click_id"`
	CustomerKey         sql.NullString `db:"customer_key"`
	CustomerEmail       sql.NullString `db:"customer_email"`
	CustomerStatus      sql.NullString `db:"customer_status"`
	CustomerProcessorID sql.NullString `db:"customer_processor_id"`
	CustomerFirstPaidAt *time.Time     `db:"customer_first_paid_at"`
	CustomerIsTest      sql.NullBool   `db:"customer_is_test"`
	CustomerCreatedAt   sql.NullTime   `db:"customer_created_at"`
	ClickProgramID      sql.NullInt64  `db:"click_program_id"`
	ClickPartnerID      *int64         `db:"click_partner_id"`
	ClickLinkID         *int64         `db:"click_link_id"`
	ClickOccurredAt     sql.NullTime   `db:"click_occurred_at"`
	ClickIsTest         sql.NullBool   `db:"click_is_test"`
	NewCustomerID       sql.NullInt64  `db:"new_customer_id"`
	Enrolled            bool           `db:"enrolled"`
	SaleEndpoints       pq.Int64Array  `db:"sale_endpoints"`
	CommissionEndpoints pq.Int64Array  `db:"commission_endpoints"`
}

func (r *snapshotRow) snapshot(clickID string) *ledger.SaleSnapshot {
	snap := &ledger.SaleSnapshot{Program: r.program(), DuplicateOf: r.DuplicateOf.Int64, Enrolled: r.Enrolled,
		SaleEndpoints: r.SaleEndpoints, CommissionEndpoints: r.CommissionEndpoints}
	if r.CustomerID.Valid {
		snap.Customer = &ledger.Customer{
			ID: r.CustomerID.Int64, ProgramID: r.ID, PartnerID: r.CustomerPartnerID, LinkID: r.CustomerLinkID,
			ClickID: r.CustomerClickID.String, CustomerKey: r.CustomerKey.String, Email: r.CustomerEmail.String,
			Status: r.CustomerStatus.String, ProcessorCustomerID: r.CustomerProcessorID.String,
			FirstPaidAt: r.CustomerFirstPaidAt, IsTest: r.CustomerIsTest.Bool, CreatedAt: r.CustomerCreatedAt.Time.UTC(),
		}
	}
	if r.ClickProgramID.Valid {
		snap.Click = &ledger.Click{ID: clickID, OccurredAt: r.ClickOccurredAt.Time.UTC(), ProgramID: r.ClickProgramID.Int64,
			PartnerID: r.ClickPartnerID, LinkID: r.ClickLinkID, IsTest: r.ClickIsTest.Bool}
		snap.NewCustomerID = r.NewCustomerID.Int64
	}
	return snap
}

// readSnapshots reads the snapshot of each sale, in their order; nil
// where the sale's program does not exist. A test sale looks for no
// customer.
func (s *SaleService) readSnapshots(ctx context.Context, tx *sqlx.Tx, items []*saleItem) ([]*ledger.SaleSnapshot, error) {
	n := len(items)
	programs, customers := make([]int64, n), make([]int64, n)
	txns, keys, clicks := make([]string, n), make([]string, n), make([]string, n)
	clickAt := make([]sql.NullString, n)
	for i, it := range items {
		programs[i], txns[i], customers[i] = it.sale.ProgramID, it.sale.TransactionID, it.customerID
		if it.sale.IsTest {
			continue
		}
		keys[i], clicks[i] = it.sale.CustomerKey, it.sale.ClickID
		if at, ok := ledger.ClickTime(it.sale.ClickID); ok {
			clickAt[i] = sql.NullString{String: timeText(at), Valid: true}
		}
	}
	rows, err := s.stmts.in(ctx, tx, qSaleSnapshots).QueryxContext(ctx, pq.Array(programs), pq.Array(txns),
		pq.Array(keys), pq.Array(clicks), pq.Array(clickAt), pq.Array(customers),
		ledger.EventSaleCreated, ledger.EventCommissionCreated)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	snaps := make([]*ledger.SaleSnapshot, n)
	for rows.Next() {
		var r snapshotRow
		if err := rows.StructScan(&r); err != nil {
			return nil, err
		}
		snaps[r.Ord-1] = r.snapshot(items[r.Ord-1].sale.ClickID)
	}
	return snaps, rows.Err()
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
	customerID, partnerID, newLinkID, commissionMinor                                           []sql.NullInt64
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
		var amount sql.NullInt64
		var currency, approve sql.NullString
		if cm := p.Commission; cm != nil {
			amount = sql.NullInt64{Int64: cm.AmountMinor, Valid: true}
			currency = sql.NullString{String: string(cm.Currency), Valid: true}
			approve = sql.NullString{String: timeText(cm.ApproveAfter), Valid: true}
		}
		c.commissionCurrency = append(c.commissionCurrency, currency)
		c.commissionMinor = append(c.commissionMinor, amount)
		c.approveAfter = append(c.approveAfter, approve)
		c.firstOnly = append(c.firstOnly, p.Commission != nil && p.Commission.FirstOnly)
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
		pq.Array(c.firstOnly),
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
