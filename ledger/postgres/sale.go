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
	"github.com/partnertrack/partnertrack/ledger/groupcommit"
)

// SaleService implements ledger.SaleService.
type SaleService struct {
	db         *DB
	pending    ledger.PendingClicks
	feePercent decimal.Decimal
	logger     *slog.Logger
	after      *afterCommit
	lean       *preparedStatements
	batches    *groupcommit.Committer[*batchedSale]
}

// SaleOptions configure the sale service.
type SaleOptions struct {
	// Pending finds clicks still in the queue; nil resolves clicks from
	// Postgres only.
	Pending ledger.PendingClicks
	// PlatformFeePercent is the operator's fee on each attributed real sale.
	PlatformFeePercent decimal.Decimal
	Logger             *slog.Logger
	// Relay sends the brand webhooks a sale writes to the outbox right
	// after commit; nil leaves them to the outbox sweep.
	Relay ledger.OutboxRelay
}

// NewSaleService returns the sale service over db.
func NewSaleService(db *DB, opts SaleOptions) *SaleService {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &SaleService{db: db, pending: opts.Pending, feePercent: opts.PlatformFeePercent, logger: opts.Logger,
		after: &afterCommit{relay: opts.Relay, logger: opts.Logger}, lean: leanSaleStatements(db)}
	s.batches = newSaleBatches(s)
	return s
}

var _ ledger.SaleService = (*SaleService)(nil)

// RecordSale records a sale in one transaction: the sale row first, then
// its commission inside a savepoint, so that a commission that cannot be
// created leaves the sale stored (its transaction id consumed) and the
// call answers "Failed to create commission". The same holds for a
// customer without a partner: the sale is stored, the call answers 400.
func (s *SaleService) RecordSale(ctx context.Context, req ledger.SaleRequest) (res *ledger.SaleResult, err error) {
	defer wrap(&err, "postgres.RecordSale(program %d)", req.ProgramID)
	return s.record(ctx, req, true)
}

// record validates and records a sale, on the lean path first when
// leanFirst (falling back to the careful one), else on the careful path.
func (s *SaleService) record(ctx context.Context, req ledger.SaleRequest, leanFirst bool) (*ledger.SaleResult, error) {
	now := s.db.now()
	sale, err := req.Validate(now)
	if err != nil {
		return nil, err
	}
	if err := s.lean.prepare(ctx); err != nil {
		return nil, err
	}
	if leanFirst {
		item, err := s.recordBatched(ctx, *sale, now)
		if err != nil {
			return nil, err
		}
		if item.answered {
			return item.result, item.err
		}
	}
	return s.recordAlone(ctx, *sale, now, leanFirst)
}

// recordAlone records a validated sale in a transaction of its own.
func (s *SaleService) recordAlone(ctx context.Context, sale ledger.Sale, now time.Time, leanFirst bool) (*ledger.SaleResult, error) {
	out, msgs, err := s.recordInTransaction(ctx, sale, now, leanFirst)
	if errors.Is(err, errClickCustomerRaced) {
		out, msgs, err = s.recordInTransaction(ctx, sale, now, leanFirst)
	}
	var lean *leanWriteError
	if errors.As(err, &lean) {
		s.logger.Warn("lean sale write failed; recording the sale on the careful path",
			"transaction_id", sale.TransactionID, "err", lean.err)
		out, msgs, err = s.recordInTransaction(ctx, sale, now, false)
	}
	return s.answer(out, msgs, err)
}

// answer relays a committed sale's outbox messages and answers its call.
func (s *SaleService) answer(out saleOutcome, msgs []ledger.OutboxMessage, err error) (*ledger.SaleResult, error) {
	if err != nil {
		return nil, err
	}
	s.after.send(msgs)
	if out.answer != nil {
		return nil, out.answer
	}
	return out.result, nil
}

// recordInTransaction records a sale in one transaction, on the lean path
// (no savepoints) or the careful one, and returns its outcome and the
// outbox messages to relay after commit.
func (s *SaleService) recordInTransaction(ctx context.Context, sale ledger.Sale, now time.Time, lean bool) (saleOutcome, []ledger.OutboxMessage, error) {
	var out saleOutcome
	var msgs []ledger.OutboxMessage
	err := s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		var err error
		msgs = nil
		out, err = s.recordSale(ctx, tx, sale, now, lean)
		if err == nil && out.eventsWritten {
			msgs = out.msgs
		} else if err == nil {
			msgs, err = out.brandEvents(ctx, tx, now)
		}
		return err
	})
	return out, msgs, err
}

// saleOutcome is what a committed sale transaction answers: a result, or
// an error the caller gets although the sale is stored (the result then
// names the stored sale).
type saleOutcome struct {
	result *ledger.SaleResult
	answer error
	// eventsWritten tells that the brand events are written already (the
	// lean path), as msgs.
	eventsWritten bool
	msgs          []ledger.OutboxMessage
}

// brandEvents writes the brand webhooks of a recorded real sale
// (sale.created, commission.created) in the sale's transaction. A sale
// stored with an error answer (no partner, commission not created) sends
// none.
func (o saleOutcome) brandEvents(ctx context.Context, tx *sqlx.Tx, now time.Time) ([]ledger.OutboxMessage, error) {
	if o.result == nil || o.answer != nil || o.result.Test || o.result.SaleID == 0 {
		return nil, nil
	}
	return saleEvents(ctx, tx, o.result.SaleID, now)
}

// WaitRelays blocks until the relays started after commits have finished
// (graceful shutdown, tests).
func (s *SaleService) WaitRelays() { s.after.wait() }

func answered(result *ledger.SaleResult) (saleOutcome, error) {
	return saleOutcome{result: result}, nil
}

// recordSale writes a sale and what follows from it. An error rolls
// everything back; an outcome's answer is given after commit.
func (s *SaleService) recordSale(ctx context.Context, tx *sqlx.Tx, sale ledger.Sale, now time.Time, lean bool) (saleOutcome, error) {
	sc, err := readSaleContext(ctx, tx, s.lean, sale.ProgramID, sale.TransactionID, sale.CustomerKey, sale.ClickID)
	if err != nil {
		return saleOutcome{}, err
	}
	return s.recordWithContext(ctx, tx, sale, sc, now, lean)
}

// recordWithContext is recordSale once the sale's context is read.
func (s *SaleService) recordWithContext(ctx context.Context, tx *sqlx.Tx, sale ledger.Sale, sc saleContext, now time.Time, lean bool) (saleOutcome, error) {
	prog := sc.program
	sale = withDefaults(sale, prog)
	if sale.IsTest {
		res, err := s.recordTestSale(ctx, tx, &sale, now)
		return saleOutcome{result: res}, err
	}
	if sc.duplicateOf != 0 {
		return saleOutcome{}, duplicateSale(sc.duplicateOf)
	}
	if lean && sc.customer == nil && sale.ClickID != "" && !sc.firstSaleTried {
		if out, handled, err := s.recordFirstSaleOfClick(ctx, tx, prog, sale, sc.facts, now); handled {
			return out, err
		}
	}
	cust, known, err := s.attribute(ctx, tx, prog, &sale, sc.customer, now)
	if err != nil {
		return saleOutcome{}, err
	}
	if lean {
		if sc.customer != nil {
			// attribute answered the customer read with the program.
			known = &sc.facts
		}
		return s.recordAttributedLean(ctx, tx, prog, sale, cust, known, now)
	}
	return s.recordAttributed(ctx, tx, prog, sale, cust, now)
}

// withDefaults is the sale with the currency and amount it omitted: the
// program's currency, and the test amount of that currency.
func withDefaults(sale ledger.Sale, prog *ledger.Program) ledger.Sale {
	if sale.Currency == "" {
		sale.Currency = prog.Currency
	}
	if sale.AmountCents == 0 {
		sale.AmountCents = ledger.DefaultTestAmount(sale.Currency)
	}
	return sale
}

// recordAttributed records a real sale of an attributed customer, locked
// in tx: the sale row, its tracking log, the customer's conversion, the
// platform fee and the commission. The sale endpoint and processor events
// share it, each with its own attribution. Errors: ENoAttribution (the
// partner is not enrolled in the program), EDuplicateTransaction (the
// transaction id is taken). An outcome's answer (the sale stored without
// commission) comes with the stored sale's id in its result. The sale of
// a test customer is a test sale (recordTestCustomerSale).
func (s *SaleService) recordAttributed(ctx context.Context, tx *sqlx.Tx, prog *ledger.Program, sale ledger.Sale, cust *ledger.Customer, now time.Time) (saleOutcome, error) {
	if cust.IsTest {
		// A customer of a test click (a test link: the CLI's synthetic
		// chain) buys in test: attributed, flagged, never paid, whichever
		// path reports the sale.
		return s.recordTestCustomerSale(ctx, tx, sale, cust, now)
	}
	if cust.PartnerID != nil {
		if err := checkEnrolled(ctx, tx, prog.ID, *cust.PartnerID); err != nil {
			return saleOutcome{}, err
		}
	}
	if sale.ClickID == "" {
		sale.ClickID = cust.ClickID
	}
	saleID, inserted, err := insertSale(ctx, tx, &sale, cust, now)
	if err != nil {
		return saleOutcome{}, err
	}
	if !inserted {
		// Another call stored this transaction id since the check above;
		// the unique constraint decided.
		return saleOutcome{}, duplicateOf(ctx, tx, sale.TransactionID)
	}
	if err := logTracking(ctx, tx, s.logger, trackingLog{prog.ID, "sale", false, sale.Source, sale.TransactionID}, now); err != nil {
		return saleOutcome{}, err
	}
	res := &ledger.SaleResult{SaleID: saleID, ProgramID: prog.ID}
	if cust.PartnerID == nil {
		return saleOutcome{result: res, answer: ledger.NewError(ledger.ENoAttribution, ledger.MsgPartnerRequired)}, nil
	}

	firstPaid := sale.OccurredAt
	if cust.FirstPaidAt != nil && cust.FirstPaidAt.Before(firstPaid) {
		firstPaid = *cust.FirstPaidAt
	}
	if err := convertCustomer(ctx, tx, cust, firstPaid, now); err != nil {
		return saleOutcome{}, err
	}
	if err := s.recordPlatformFee(ctx, tx, saleID, &sale, now); err != nil {
		return saleOutcome{}, err
	}
	var hadCommission bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM commissions WHERE customer_id = $1)`,
		cust.ID).Scan(&hadCommission); err != nil {
		return saleOutcome{}, err
	}
	switch due, why := ledger.CommissionDue(prog, firstPaid, sale.OccurredAt, hadCommission); {
	case !due && why == ledger.NotDueNotFirst:
		res.Message = ledger.MsgSaleNotFirst
		return answered(res)
	case !due:
		res.Message = ledger.MsgSaleDurationOver
		return answered(res)
	}
	amount, cur := ledger.CommissionAmount(prog, sale.AmountCents, sale.Currency)
	var commissionID int64
	contained, err := savepoint(ctx, tx, "commission", func() error {
		return tx.QueryRowContext(ctx, `
			INSERT INTO commissions (program_id, partner_id, sale_id, customer_id, currency, original_minor,
				amount_minor, status, approve_after, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $6, 'pending', $7, $8, $8)
			RETURNING id`,
			prog.ID, *cust.PartnerID, saleID, cust.ID, string(cur), amount, ledger.ApproveAfter(prog, now), now).Scan(&commissionID)
	})
	if err != nil {
		return saleOutcome{}, err
	}
	if contained != nil {
		s.logger.Error("commission not created; the sale is stored without it",
			"sale_id", saleID, "transaction_id", sale.TransactionID, "err", contained)
		return saleOutcome{result: res, answer: ledger.NewError(ledger.EInternal, ledger.MsgCommissionFailed)}, nil
	}
	res.CommissionID = &commissionID
	res.Message = ledger.MsgSaleRecorded
	return answered(res)
}

// recordTestSale stores a sale flagged as a test and its tracking log
// entry; it earns no commission and no fee. A test sale sent without a
// transaction id gets test_txn_<ms>, made unique when that is taken.
func (s *SaleService) recordTestSale(ctx context.Context, tx *sqlx.Tx, sale *ledger.Sale, now time.Time) (*ledger.SaleResult, error) {
	base := sale.TransactionID
	for attempt := 1; ; attempt++ {
		id, inserted, err := insertSale(ctx, tx, sale, nil, now)
		if err != nil {
			return nil, err
		}
		if !inserted {
			if !sale.GeneratedID || attempt == 10 {
				return nil, duplicateOf(ctx, tx, sale.TransactionID)
			}
			sale.TransactionID = base + "_" + strconv.Itoa(attempt+1)
			continue
		}
		if err := logTracking(ctx, tx, s.logger, trackingLog{sale.ProgramID, "sale", true, ledger.SourceAPI, sale.TransactionID}, now); err != nil {
			return nil, err
		}
		return &ledger.SaleResult{SaleID: id, ProgramID: sale.ProgramID, Test: true, Message: ledger.MsgTestSaleRecorded}, nil
	}
}

// recordTestCustomerSale records the sale of a test customer: stored
// attributed to the customer and its partner and flagged as a test, with
// a test tracking log row; no commission, no fee, no funnel change.
func (s *SaleService) recordTestCustomerSale(ctx context.Context, tx *sqlx.Tx, sale ledger.Sale, cust *ledger.Customer, now time.Time) (saleOutcome, error) {
	sale.IsTest = true
	if sale.ClickID == "" {
		sale.ClickID = cust.ClickID
	}
	id, inserted, err := insertSale(ctx, tx, &sale, cust, now)
	if err != nil {
		return saleOutcome{}, err
	}
	if !inserted {
		return saleOutcome{}, duplicateOf(ctx, tx, sale.TransactionID)
	}
	if err := logTracking(ctx, tx, s.logger, trackingLog{sale.ProgramID, "sale", true, sale.Source, sale.TransactionID}, now); err != nil {
		return saleOutcome{}, err
	}
	return answered(&ledger.SaleResult{SaleID: id, ProgramID: sale.ProgramID, Test: true, Message: ledger.MsgTestSaleRecorded})
}

// refuseDuplicate answers 409 when the transaction id is already recorded,
// in any program (the id is unique globally). It spares a duplicate the
// work of attribution; the unique constraint is what makes the check
// race-free.
func refuseDuplicate(ctx context.Context, tx *sqlx.Tx, transactionID string) error {
	var id int64
	err := tx.QueryRowContext(ctx, `SELECT id FROM sales WHERE processor_event_id = $1`, transactionID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	} else if err != nil {
		return err
	}
	return duplicateSale(id)
}

// duplicateOf is the 409 of a transaction id whose insert conflicted. The
// conflicting sale is committed by then (an insert waits for the
// transaction that holds the id), so a fresh statement reads its id.
func duplicateOf(ctx context.Context, tx *sqlx.Tx, transactionID string) error {
	if err := refuseDuplicate(ctx, tx, transactionID); err != nil {
		return err
	}
	return fmt.Errorf("sale %q conflicted but cannot be read", transactionID)
}

// attribute finds the customer of a sale in its program: known, the
// customer read and locked with the program (by customer key, else by
// click id), else the one its click brings (also a click still in the
// queue), created and locked, so that the sales of one customer are
// recorded one at a time. The customer's saleFacts come with it when the
// statement that found it read them too (nil otherwise, and for known).
func (s *SaleService) attribute(ctx context.Context, tx *sqlx.Tx, prog *ledger.Program, sale *ledger.Sale, known *ledger.Customer, now time.Time) (*ledger.Customer, *saleFacts, error) {
	if sale.CustomerKey == "" && sale.ClickID == "" {
		return nil, nil, ledger.NewError(ledger.EInvalid, ledger.MsgCustomerNotFound)
	}
	if known != nil {
		return known, nil, nil
	}
	notFound := ledger.NewError(ledger.ENoAttribution, ledger.MsgCustomerNotFound)
	if sale.ClickID == "" {
		return nil, nil, notFound
	}
	click, cust, facts, err := clickCustomer(ctx, tx, s.lean, prog.ID, sale.ClickID, now)
	switch {
	case err == nil && cust == nil:
		return nil, nil, ledger.NewError(ledger.ENoAttribution, ledger.MsgNoAttribution)
	case err == nil:
		return cust, facts, nil
	case ledger.ErrorCode(err) != ledger.ENotFound:
		return nil, nil, err
	}
	// Not in Postgres: a click still in the queue is read from the edge's
	// record of it and written here.
	click, err = resolveClick(ctx, tx, s.lean, s.pending, sale.ClickID)
	if ledger.ErrorCode(err) == ledger.ENotFound {
		return nil, nil, notFound
	} else if err != nil {
		return nil, nil, err
	}
	if click.ProgramID != prog.ID {
		return nil, nil, ledger.NewError(ledger.ENoAttribution, ledger.MsgNoAttribution)
	}
	cust, err = customerForClick(ctx, tx, click, now)
	return cust, nil, err
}

// checkEnrolled refuses a partner not actively enrolled in the program.
func checkEnrolled(ctx context.Context, tx *sqlx.Tx, programID, partnerID int64) error {
	var enrolled bool
	if err := tx.QueryRowContext(ctx, `
		SELECT EXISTS (SELECT 1 FROM enrollments WHERE program_id = $1 AND partner_id = $2 AND status = 'active')`,
		programID, partnerID).Scan(&enrolled); err != nil {
		return err
	}
	if !enrolled {
		return ledger.NewError(ledger.ENoAttribution, ledger.MsgNoRelationship)
	}
	return nil
}

// insertSale writes a sale unless its transaction id is taken, in which
// case it reports false; the unique constraint decides, so two concurrent
// calls with one id store one sale.
func insertSale(ctx context.Context, tx *sqlx.Tx, s *ledger.Sale, cust *ledger.Customer, now time.Time) (int64, bool, error) {
	var customerID, partnerID *int64
	if cust != nil {
		customerID, partnerID = &cust.ID, cust.PartnerID
	}
	var metadata *string
	if len(s.Metadata) > 0 {
		m := string(s.Metadata)
		metadata = &m
	}
	var id int64
	err := tx.QueryRowContext(ctx, `
		INSERT INTO sales (program_id, customer_id, partner_id, processor_event_id, amount_cents, currency,
			sale_type, is_recurring, is_test, source, click_id, provider, provider_payment_id, livemode,
			subscription_id, product_id, metadata, occurred_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, NULLIF($11, ''), NULLIF($12, ''), NULLIF($13, ''), $14,
			NULLIF($15, ''), NULLIF($16, ''), $17::jsonb, $18, $19)
		ON CONFLICT ON CONSTRAINT sales_processor_event_id_key DO NOTHING
		RETURNING id`,
		s.ProgramID, customerID, partnerID, s.TransactionID, s.AmountCents, string(s.Currency),
		s.SaleType, s.IsRecurring, s.IsTest, s.Source, s.ClickID, s.Provider, s.ProviderPaymentID, s.Livemode,
		s.SubscriptionID, s.ProductID, metadata, s.OccurredAt, now).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return id, err == nil, err
}

// convertCustomer moves a customer to the last funnel status, conversion
// (it never moves back), records its first paid sale and marks its click
// converted.
func convertCustomer(ctx context.Context, tx *sqlx.Tx, c *ledger.Customer, firstPaid, now time.Time) error {
	// One statement: the customer becomes a paying customer, and its lead
	// and its click are marked converted (the listing shows both).
	var clickID *string
	var clickAt *time.Time
	if at, ok := ledger.ClickTime(c.ClickID); ok {
		clickID, clickAt = &c.ClickID, &at
	}
	_, err := tx.ExecContext(ctx, `
		WITH customer AS (
			UPDATE customers SET status = 'conversion', first_paid_at = $2, updated_at = $3
			WHERE id = $1 AND `+customerChanges("$2")+`
		), lead AS (
			UPDATE leads SET converted = true WHERE customer_id = $1 AND NOT converted
		)
		UPDATE clicks SET converted = true WHERE click_id = $4 AND occurred_at = $5 AND NOT converted`,
		c.ID, firstPaid, now, clickID, clickAt)
	return err
}

// recordPlatformFee records the operator's fee on an attributed real sale,
// a row even at 0% so that every sale shows the rate it was charged.
func (s *SaleService) recordPlatformFee(ctx context.Context, tx *sqlx.Tx, saleID int64, sale *ledger.Sale, now time.Time) error {
	_, err := tx.ExecContext(ctx, `
		INSERT INTO platform_fees (sale_id, program_id, currency, rate_percent, amount_minor, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)`,
		saleID, sale.ProgramID, string(sale.Currency), s.feePercent, ledger.PercentOf(sale.AmountCents, s.feePercent), now)
	return err
}
