package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ledger"
)

// The sale endpoint's lean path: everything a real sale needs to know is
// read before anything is written (program, duplicate, the customer by
// key or by click with its partner's enrollment, and webhook endpoints in
// one statement; a customer the click brings now is written with the sale,
// salefirst.go), then the sale, its tracking log, the customer's
// conversion, the platform fee and the commission are written by one
// statement, and the brand webhooks by one more when the program has
// endpoints for them. There are no savepoints: when the write fails
// for another reason than a conflict or a cancelled context, the whole
// transaction is run again on the careful path (recordAttributed), whose
// savepoints keep the sale when its commission or its tracking log cannot
// be written. A failure that repeats therefore answers exactly as the
// careful path alone would.

// The lean sale path's statements, prepared (leanSaleStatements).
var (
	// qProgramForSale reads the program ($1), the sale already recorded
	// with the transaction id ($2), the customer (by key $3, else by click
	// id $4) locked, and the facts the sale needs (saleFacts: whether the
	// customer's partner is enrolled; $5 and $6 name the events whose
	// webhook endpoints it lists). It also makes the rest of the
	// transaction use the generic plans of its prepared statements
	// (set_config, as SET LOCAL): the statements that read the
	// partitioned clicks table would otherwise be planned anew on every
	// call (a custom plan prunes the partitions at planning; the cached
	// generic plan, which prunes them when it starts, looks costlier to
	// Postgres), and planning took three times as long as running them.
	// The customer reads say LIMIT 1, which their unique keys make true
	// anyway: without statistics (a new database, or autovacuum off)
	// Postgres expects three rows from each partial unique index, and the
	// generic plan of this read, multiplied through its joins, looked
	// costlier than a custom plan (349 against 130), so the read itself
	// was planned anew in every transaction (0.34 ms); with the limit the
	// generic plan wins (69 against 63 plus planning).
	qProgramForSale = `SELECT ` + programColumns + `,
			(SELECT id FROM sales WHERE processor_event_id = $2) AS duplicate_of,
			set_config('plan_cache_mode', 'force_generic_plan', true) AS plan_cache_mode,
			` + saleCustomerColumns + `,
			EXISTS (SELECT 1 FROM enrollments WHERE program_id = p.id AND status = 'active'
				AND partner_id = COALESCE(ck.partner_id, cc.partner_id)) AS enrolled,
			` + endpointsFor("p.id", "$5") + ` AS sale_endpoints,
			` + endpointsFor("p.id", "$6") + ` AS commission_endpoints
		FROM programs p LEFT JOIN program_keys k ON k.program_id = p.id AND k.mode = 'live'
		LEFT JOIN LATERAL (
			SELECT ` + customerColumns + ` FROM customers
			WHERE program_id = p.id AND customer_key = $3 AND $3 <> ''
			FOR NO KEY UPDATE LIMIT 1
		) ck (` + customerNames + `) ON true
		LEFT JOIN LATERAL (
			SELECT ` + customerColumns + ` FROM customers
			WHERE program_id = p.id AND click_id = $4 AND $4 <> '' AND ck.id IS NULL
			FOR NO KEY UPDATE LIMIT 1
		) cc (` + customerNames + `) ON true
		WHERE p.id = $1`
	// qSaleFacts reads saleFacts of a customer found after
	// qProgramForSale: the program ($1), the customer's partner ($2), the
	// events ($3, $4).
	qSaleFacts = `
		SELECT
			EXISTS (SELECT 1 FROM enrollments WHERE program_id = $1 AND partner_id = $2 AND status = 'active'),
			` + endpointsFor("$1", "$3") + `,
			` + endpointsFor("$1", "$4")
	qWriteLeanSale = `
		WITH sale AS (
			INSERT INTO sales (program_id, customer_id, partner_id, processor_event_id, amount_cents, currency,
				sale_type, is_recurring, is_test, source, click_id, provider, provider_payment_id, livemode,
				subscription_id, product_id, metadata, occurred_at, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, false, $9, NULLIF($10, ''), NULLIF($11, ''), NULLIF($12, ''), $13,
				NULLIF($14, ''), NULLIF($15, ''), $16::jsonb, $17, $18)
			ON CONFLICT ON CONSTRAINT sales_processor_event_id_key DO NOTHING
			RETURNING id, occurred_at, click_id
		), tracking_log AS (
			INSERT INTO tracking_logs (program_id, event_type, is_test, source, reference, created_at)
			SELECT $1, 'sale', false, $9, NULLIF($4, ''), $18 FROM sale
		), customer AS (
			UPDATE customers SET status = 'conversion', first_paid_at = $20, updated_at = $18
			WHERE id = $2 AND $19 AND ` + customerChanges("$20") + ` AND EXISTS (SELECT 1 FROM sale)
		), lead AS (
			UPDATE leads SET converted = true
			WHERE customer_id = $2 AND NOT converted AND $19 AND EXISTS (SELECT 1 FROM sale)
		), click AS (
			UPDATE clicks SET converted = true
			WHERE click_id = $21 AND occurred_at = $22 AND NOT converted AND EXISTS (SELECT 1 FROM sale)
		), fee AS (
			INSERT INTO platform_fees (sale_id, program_id, currency, rate_percent, amount_minor, created_at)
			SELECT id, $1, $6, $23, $24, $18 FROM sale WHERE $19
		), commission AS (
			INSERT INTO commissions (program_id, partner_id, sale_id, customer_id, currency, original_minor,
				amount_minor, status, approve_after, created_at, updated_at)
			SELECT $1, $3, id, $2, $25, $26, $26, 'pending', $27, $18, $18 FROM sale
			WHERE $26::bigint IS NOT NULL AND NOT ($28 AND EXISTS (SELECT 1 FROM commissions WHERE customer_id = $2))
			RETURNING id, approve_after
		)
		SELECT sale.id, sale.occurred_at, sale.click_id, commission.id, commission.approve_after
		FROM sale LEFT JOIN commission ON true`
)

// customerChanges is the condition under which a sale converting a
// customer (first paid at firstPaid) changes its row: its first sale, or
// one dated before its first paid sale. A repeat sale leaves the customer
// as it is, updated_at included (customerByEmail orders by it: the latest
// lead, not the latest sale), and writes no new row version of it.
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

// saleCustomerColumns are the sale's customer in qProgramForSale: the one
// with its customer key, else the one its click brought (cc is read only
// when ck found none, so each column comes whole from one of them).
const saleCustomerColumns = `COALESCE(ck.id, cc.id) AS customer_id,
			COALESCE(ck.partner_id, cc.partner_id) AS customer_partner_id,
			COALESCE(ck.link_id, cc.link_id) AS customer_link_id,
			COALESCE(ck.click_id, cc.click_id) AS customer_click_id,
			COALESCE(ck.customer_key, cc.customer_key) AS customer_key,
			COALESCE(ck.email, cc.email) AS customer_email,
			COALESCE(ck.status, cc.status) AS customer_status,
			COALESCE(ck.processor_customer_id, cc.processor_customer_id) AS customer_processor_id,
			COALESCE(ck.first_paid_at, cc.first_paid_at) AS customer_first_paid_at,
			COALESCE(ck.is_test, cc.is_test) AS customer_is_test,
			COALESCE(ck.created_at, cc.created_at) AS customer_created_at`

func leanSaleStatements(db *DB) *preparedStatements {
	return newPreparedStatements(db, qProgramForSale, qClickByID, qClickCustomer, qSaleFacts, qWriteLeanSale, qWriteLeanSales, qWriteFirstSale)
}

// leanWriteError is a write of the lean path that failed; the sale is
// recorded again on the careful path.
type leanWriteError struct{ err error }

func (e *leanWriteError) Error() string { return "lean sale write: " + e.err.Error() }
func (e *leanWriteError) Unwrap() error { return e.err }

// saleContext is what a sale reads first, in one statement: its program,
// the id of a sale already recorded with its transaction id (0 when
// none) and its customer when one exists already, locked for the rest of
// the transaction (nil when none): the settled customer of its customer
// key, else the customer its click brought to the program. A repeat sale
// by click id so needs no read of the partitioned clicks table.
type saleContext struct {
	program     *ledger.Program
	duplicateOf int64
	customer    *ledger.Customer
	facts       saleFacts // the program's endpoints; enrolled tells of customer, when there is one
	// firstSaleTried: recordFirstSaleOfClick did not take the sale, and
	// it is not tried again.
	firstSaleTried bool
}

type saleContextRow struct {
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
	Enrolled            bool           `db:"enrolled"`
	SaleEndpoints       pq.Int64Array  `db:"sale_endpoints"`
	CommissionEndpoints pq.Int64Array  `db:"commission_endpoints"`
}

// readSaleContext reads a sale's program, duplicate and existing
// customer. Errors: ENotFound (the program).
func readSaleContext(ctx context.Context, tx *sqlx.Tx, stmts *preparedStatements, programID int64, transactionID, customerKey, clickID string) (saleContext, error) {
	var row saleContextRow
	err := stmts.in(ctx, tx, qProgramForSale).GetContext(ctx, &row, programID, transactionID, customerKey, clickID,
		ledger.EventSaleCreated, ledger.EventCommissionCreated)
	if errors.Is(err, sql.ErrNoRows) {
		return saleContext{}, notFound("program")
	} else if err != nil {
		return saleContext{}, err
	}
	sc := saleContext{program: row.program(), duplicateOf: row.DuplicateOf.Int64,
		facts: saleFacts{saleEndpoints: row.SaleEndpoints, commissionEndpoints: row.CommissionEndpoints}}
	if row.CustomerID.Valid {
		sc.customer = &ledger.Customer{
			ID: row.CustomerID.Int64, ProgramID: programID, PartnerID: row.CustomerPartnerID, LinkID: row.CustomerLinkID,
			ClickID: row.CustomerClickID.String, CustomerKey: row.CustomerKey.String, Email: row.CustomerEmail.String,
			Status: row.CustomerStatus.String, ProcessorCustomerID: row.CustomerProcessorID.String,
			FirstPaidAt: row.CustomerFirstPaidAt, IsTest: row.CustomerIsTest.Bool, CreatedAt: row.CustomerCreatedAt.Time.UTC(),
		}
		sc.facts.enrolled = row.Enrolled
	}
	return sc, nil
}

// duplicateSale is the 409 of a transaction id already recorded as sale id.
func duplicateSale(id int64) error {
	return ledger.NewError(ledger.EDuplicateTransaction, ledger.MsgDuplicateTransaction).
		WithDetails(map[string]any{"sale_id": id})
}

// saleFacts is what the lean path reads about an attributed customer
// before writing: whether its partner is enrolled, and the webhook
// endpoints of the sale's events. Whether the customer earned a commission
// before is decided by the write itself (leanCommission.firstOnly): its
// snapshot is taken after the customer's lock was granted, so it sees the
// commission of a concurrent sale of the customer that held the lock,
// which the statement that waited for the lock would not.
type saleFacts struct {
	enrolled            bool
	saleEndpoints       []int64
	commissionEndpoints []int64
}

func readSaleFacts(ctx context.Context, tx *sqlx.Tx, stmts *preparedStatements, programID int64, cust *ledger.Customer) (saleFacts, error) {
	var f saleFacts
	var sales, commissions pq.Int64Array
	err := stmts.in(ctx, tx, qSaleFacts).QueryRowContext(ctx,
		programID, cust.PartnerID, ledger.EventSaleCreated, ledger.EventCommissionCreated).
		Scan(&f.enrolled, &sales, &commissions)
	f.saleEndpoints, f.commissionEndpoints = sales, commissions
	return f, err
}

// leanSale is what the one write statement stores.
type leanSale struct {
	sale      ledger.Sale
	cust      *ledger.Customer
	converts  bool // attributed to a partner: conversion and platform fee
	firstPaid time.Time
	fee       platformFee
	// commission is written when set.
	commission *leanCommission
}

// platformFee is the operator's fee on a sale: its rate and amount.
type platformFee struct {
	ratePercent decimal.Decimal
	amountMinor int64
}

type leanCommission struct {
	amountMinor  int64
	currency     ledger.Currency
	approveAfter time.Time
	// firstOnly: written only when the customer earned no commission
	// before (a non-recurring program).
	firstOnly bool
}

// args are the commission's parameters of a lean write: its amount,
// currency and approval date, all nil when no commission is written.
func (c *leanCommission) args() (amount *int64, currency *string, approveAfter *time.Time) {
	if c == nil {
		return nil, nil, nil
	}
	cur := string(c.currency)
	return &c.amountMinor, &cur, &c.approveAfter
}

// metadataArg is a sale's metadata as a jsonb parameter (nil: none).
func metadataArg(s ledger.Sale) *string {
	if len(s.Metadata) == 0 {
		return nil
	}
	m := string(s.Metadata)
	return &m
}

// leanWritten is what the write statement reports: nothing inserted
// (the transaction id was taken meanwhile), or the stored sale and
// commission.
type leanWritten struct {
	inserted     bool
	saleID       int64
	occurredAt   time.Time
	clickID      sql.NullString
	commissionID sql.NullInt64
	approveAfter sql.NullTime
}

// writeLeanSale stores a sale and all that follows from it in one
// statement. The sale insert yields no row when its transaction id is
// taken; every other write reads that row, so then nothing is written.
// Foreign keys are checked at the end of the statement, when the sale row
// exists.
func writeLeanSale(ctx context.Context, tx *sqlx.Tx, stmts *preparedStatements, l leanSale, now time.Time) (leanWritten, error) {
	s, c := l.sale, l.cust
	var clickID *string
	var clickAt *time.Time
	if at, ok := ledger.ClickTime(c.ClickID); ok && l.converts {
		clickID, clickAt = &c.ClickID, &at
	}
	commissionAmount, commissionCurrency, approveAfter := l.commission.args()
	firstOnly := l.commission != nil && l.commission.firstOnly
	var w leanWritten
	err := stmts.in(ctx, tx, qWriteLeanSale).QueryRowContext(ctx,
		s.ProgramID, c.ID, c.PartnerID, s.TransactionID, s.AmountCents, string(s.Currency),
		s.SaleType, s.IsRecurring, s.Source, s.ClickID, s.Provider, s.ProviderPaymentID, s.Livemode,
		s.SubscriptionID, s.ProductID, metadataArg(s), s.OccurredAt, now,
		l.converts, l.firstPaid, clickID, clickAt, l.fee.ratePercent, l.fee.amountMinor,
		commissionCurrency, commissionAmount, approveAfter, firstOnly).
		Scan(&w.saleID, &w.occurredAt, &w.clickID, &w.commissionID, &w.approveAfter)
	if errors.Is(err, sql.ErrNoRows) {
		return leanWritten{}, nil
	}
	w.inserted = err == nil
	return w, err
}

// recordAttributedLean is recordAttributed without savepoints, for the
// sale endpoint. A write that fails returns a *leanWriteError: the caller
// records the sale again on the careful path.
func (s *SaleService) recordAttributedLean(ctx context.Context, tx *sqlx.Tx, prog *ledger.Program, sale ledger.Sale, cust *ledger.Customer, known *saleFacts, now time.Time) (saleOutcome, error) {
	if cust.IsTest {
		return s.recordTestCustomerSale(ctx, tx, sale, cust, now)
	}
	w, err := s.planAttributedLean(ctx, tx, prog, sale, cust, known, now)
	if err != nil {
		return saleOutcome{}, err
	}
	written, err := writeLeanSale(ctx, tx, s.lean, w.plan, now)
	if err != nil {
		return saleOutcome{}, leanFailure(ctx, err)
	}
	return leanOutcome(ctx, tx, prog, w.plan, w.why, written, w.facts, now)
}

// plannedLeanSale is a lean sale of an attributed customer, decided and
// not written yet: what its write stores, why it earns no commission (when
// it earns none), and the facts its brand events need.
type plannedLeanSale struct {
	plan  leanSale
	why   string
	facts saleFacts
}

// planAttributedLean decides a real sale of cust (not a test customer)
// without writing anything. Errors: ENoAttribution (the customer's partner
// is not enrolled in the program).
func (s *SaleService) planAttributedLean(ctx context.Context, tx *sqlx.Tx, prog *ledger.Program, sale ledger.Sale, cust *ledger.Customer, known *saleFacts, now time.Time) (plannedLeanSale, error) {
	facts, err := s.factsOf(ctx, tx, prog, cust, known)
	if err != nil {
		return plannedLeanSale{}, err
	}
	if cust.PartnerID != nil && !facts.enrolled {
		return plannedLeanSale{}, ledger.NewError(ledger.ENoAttribution, ledger.MsgNoRelationship)
	}
	if sale.ClickID == "" {
		sale.ClickID = cust.ClickID
	}
	plan, why := s.planLeanSale(prog, sale, cust, cust.PartnerID != nil, now)
	return plannedLeanSale{plan: plan, why: why, facts: facts}, nil
}

// planLeanSale decides what a sale of cust writes besides itself: when it
// converts (the customer has a partner), the conversion, the platform fee
// and the commission the program owes, if any (why tells why none).
func (s *SaleService) planLeanSale(prog *ledger.Program, sale ledger.Sale, cust *ledger.Customer, converts bool, now time.Time) (leanSale, string) {
	plan := leanSale{sale: sale, cust: cust, converts: converts}
	if !converts {
		return plan, ""
	}
	plan.firstPaid = sale.OccurredAt
	if cust.FirstPaidAt != nil && cust.FirstPaidAt.Before(plan.firstPaid) {
		plan.firstPaid = *cust.FirstPaidAt
	}
	plan.fee = platformFee{ratePercent: s.feePercent, amountMinor: ledger.PercentOf(sale.AmountCents, s.feePercent)}
	due, why := ledger.CommissionDue(prog, plan.firstPaid, sale.OccurredAt, false)
	if due {
		// Due unless the customer earned one before: the write decides.
		again, _ := ledger.CommissionDue(prog, plan.firstPaid, sale.OccurredAt, true)
		amount, cur := ledger.CommissionAmount(prog, sale.AmountCents, sale.Currency)
		plan.commission = &leanCommission{amountMinor: amount, currency: cur, approveAfter: ledger.ApproveAfter(prog, now),
			firstOnly: !again}
	}
	return plan, why
}

// leanFailure is what a failed lean write returns: the error itself when
// the whole transaction is to run again (isRetryable) or the caller gave
// up, else a *leanWriteError, so that the sale is recorded again on the
// careful path.
func leanFailure(ctx context.Context, err error) error {
	if isRetryable(err) || ctx.Err() != nil {
		return err
	}
	return &leanWriteError{err: err}
}

// leanOutcome answers a lean sale once written, and writes its brand
// webhooks: the duplicate's 409 when the transaction id was taken
// meanwhile, the sale stored without commission, or the sale and its
// commission.
func leanOutcome(ctx context.Context, tx *sqlx.Tx, prog *ledger.Program, plan leanSale, why string, written leanWritten, facts saleFacts, now time.Time) (saleOutcome, error) {
	sale := plan.sale
	if !written.inserted {
		return saleOutcome{}, duplicateOf(ctx, tx, sale.TransactionID)
	}
	res := &ledger.SaleResult{SaleID: written.saleID, ProgramID: prog.ID}
	switch {
	case !plan.converts:
		return saleOutcome{result: res, answer: ledger.NewError(ledger.ENoAttribution, ledger.MsgPartnerRequired)}, nil
	case written.commissionID.Valid:
		res.CommissionID = &written.commissionID.Int64
		res.Message = ledger.MsgSaleRecorded
	case plan.commission != nil && plan.commission.firstOnly:
		// The write found a commission the customer earned before.
		res.Message = ledger.MsgSaleNotFirst
	case plan.commission == nil && why == ledger.NotDueDurationOver:
		res.Message = ledger.MsgSaleDurationOver
	default:
		return saleOutcome{}, fmt.Errorf("sale %q: commission planned %v, written %v, not due because %q",
			sale.TransactionID, plan.commission != nil, written.commissionID.Valid, why)
	}
	msgs, err := leanSaleEvents(ctx, tx, plan, written, facts, now)
	return saleOutcome{result: res, msgs: msgs, eventsWritten: true}, err
}

// factsOf returns the facts of the sale's customer: known, read with the
// program, else read now (a customer the sale's click just brought).
func (s *SaleService) factsOf(ctx context.Context, tx *sqlx.Tx, prog *ledger.Program, cust *ledger.Customer, known *saleFacts) (saleFacts, error) {
	if known != nil {
		return *known, nil
	}
	return readSaleFacts(ctx, tx, s.lean, prog.ID, cust)
}

// leanSaleEvents writes sale.created, and commission.created when the
// sale earned a commission, for the program's endpoints, in one statement
// (none when no endpoint wants them). The data are those saleEvents reads
// back from the stored rows.
func leanSaleEvents(ctx context.Context, tx *sqlx.Tx, l leanSale, w leanWritten, f saleFacts, now time.Time) ([]ledger.OutboxMessage, error) {
	d := ledger.SaleEventData{
		SaleID: w.saleID, ProgramID: l.sale.ProgramID, TransactionID: l.sale.TransactionID,
		AmountCents: l.sale.AmountCents, Currency: string(l.sale.Currency), CustomerID: &l.cust.ID,
		PartnerID: l.cust.PartnerID, SaleType: l.sale.SaleType, IsRecurring: l.sale.IsRecurring,
		OccurredAt: ledger.FormatTime(w.occurredAt),
	}
	if w.clickID.Valid {
		d.ClickID = &w.clickID.String
	}
	if w.commissionID.Valid {
		d.CommissionID = &w.commissionID.Int64
	}
	rows, err := webhookRows(ledger.EventSaleCreated, d, f.saleEndpoints, now)
	if err != nil {
		return nil, err
	}
	if !w.commissionID.Valid {
		return insertOutboxRows(ctx, tx, rows, now)
	}
	c := &ledger.Commission{
		ID: w.commissionID.Int64, ProgramID: l.sale.ProgramID, PartnerID: *l.cust.PartnerID, SaleID: w.saleID,
		TransactionID: l.sale.TransactionID, Status: ledger.CommissionPending, AmountMinor: l.commission.amountMinor,
		Currency: l.commission.currency, ApproveAfter: w.approveAfter.Time.UTC(),
	}
	more, err := webhookRows(ledger.EventCommissionCreated, ledger.CommissionCreatedData(c), f.commissionEndpoints, now)
	if err != nil {
		return nil, err
	}
	return insertOutboxRows(ctx, tx, append(rows, more...), now)
}
