package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/partnertrack/partnertrack/ledger"
)

// This file holds the click and customer primitives that leads, sales and
// processor events share: resolving a click id (from Postgres, else from
// the edge's short-lived record of a click still in the queue) and finding
// or creating the customer a click brought.

// qClickByID reads a click row by its id (which carries its time).
const qClickByID = `
		SELECT occurred_at, program_id, partner_id, link_id, is_test
		FROM clicks WHERE click_id = $1 AND occurred_at = $2`

// resolveClick returns the click with id clickID (read with the prepared
// statement of stmts, or unprepared when stmts is nil). A click acknowledged by
// the edge but not yet written by the clicks worker is read from pending
// and its row written here (idempotently: the worker's later insert of the
// same click does nothing). Errors: ENotFound.
func resolveClick(ctx context.Context, tx *sqlx.Tx, stmts *preparedStatements, pending ledger.PendingClicks, clickID string) (*ledger.Click, error) {
	at, ok := ledger.ClickTime(clickID)
	if !ok {
		return nil, notFound("click")
	}
	c := &ledger.Click{ID: clickID}
	err := stmts.row(ctx, tx, qClickByID, clickID, at).
		Scan(&c.OccurredAt, &c.ProgramID, &c.PartnerID, &c.LinkID, &c.IsTest)
	if err == nil {
		c.OccurredAt = c.OccurredAt.UTC()
		return c, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	if pending == nil {
		return nil, notFound("click")
	}
	pc, err := pending.PendingClick(ctx, clickID)
	if err != nil {
		return nil, err
	}
	if err := insertClick(ctx, tx, pc); err != nil {
		return nil, err
	}
	return pc, nil
}

// insertClick writes one click row unless it is already there.
func insertClick(ctx context.Context, tx *sqlx.Tx, c *ledger.Click) error {
	_, err := tx.ExecContext(ctx, `
		INSERT INTO clicks (click_id, occurred_at, program_id, partner_id, link_id, session_id, page_url,
			referrer_url, geo_country, geo_region, geo_city, device_type, device_os, browser_name,
			ip, user_agent, is_test)
		VALUES ($1, $2, $3, $4, $5, NULLIF($6, ''), NULLIF($7, ''), NULLIF($8, ''), NULLIF($9, ''),
			NULLIF($10, ''), NULLIF($11, ''), NULLIF($12, ''), NULLIF($13, ''), NULLIF($14, ''),
			NULLIF($15, '')::inet, NULLIF($16, ''), $17)
		ON CONFLICT (click_id, occurred_at) DO NOTHING`,
		c.ID, c.OccurredAt, c.ProgramID, c.PartnerID, c.LinkID, c.SessionID, c.PageURL,
		c.ReferrerURL, c.GeoCountry, c.GeoRegion, c.GeoCity, c.DeviceType, c.DeviceOS, c.BrowserName,
		c.IP, c.UserAgent, c.IsTest)
	return err
}

const customerColumns = `id, program_id, partner_id, link_id, COALESCE(click_id, ''), COALESCE(customer_key, ''),
	COALESCE(email, ''), status, COALESCE(processor_customer_id, ''), first_paid_at, is_test, created_at`

func scanCustomer(row interface{ Scan(...any) error }) (*ledger.Customer, error) {
	c := &ledger.Customer{}
	err := row.Scan(&c.ID, &c.ProgramID, &c.PartnerID, &c.LinkID, &c.ClickID, &c.CustomerKey,
		&c.Email, &c.Status, &c.ProcessorCustomerID, &c.FirstPaidAt, &c.IsTest, &c.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("customer")
	}
	if err != nil {
		return nil, err
	}
	c.CreatedAt = c.CreatedAt.UTC()
	return c, nil
}

// qClickCustomer reads a click ($1, at $2) and, when it belongs to
// program $3, finds or creates the customer it brought, locked for the
// rest of the transaction, with the facts a sale needs about it (saleFacts:
// $5 and $6 name the events whose webhook endpoints it lists), in one
// statement: the insert creates it, or
// the locking read finds the row that was there before the statement
// began. A customer inserted by a concurrent transaction that committed
// after this statement began is seen by neither (one snapshot): then the
// click comes back without a customer and customerForClick looks again.
// No row at all: the click is not in Postgres.
var qClickCustomer = `
		WITH click AS (
			SELECT occurred_at, program_id, partner_id, link_id, is_test
			FROM clicks WHERE click_id = $1 AND occurred_at = $2
		), inserted AS (
			INSERT INTO customers (program_id, partner_id, link_id, click_id, click_occurred_at, is_test, created_at, updated_at)
			SELECT program_id, partner_id, link_id, $1, occurred_at, is_test, $4, $4 FROM click WHERE program_id = $3
			ON CONFLICT (program_id, click_id) WHERE click_id IS NOT NULL DO NOTHING
			RETURNING ` + customerColumns + `
		), existing AS (
			SELECT ` + customerColumns + ` FROM customers
			WHERE program_id = $3 AND click_id = $1 AND EXISTS (SELECT 1 FROM click WHERE program_id = $3)
			FOR NO KEY UPDATE
		)
		SELECT click.*, customer.*,
			EXISTS (SELECT 1 FROM enrollments WHERE program_id = $3 AND partner_id = customer.partner_id
				AND status = 'active') AS enrolled,
			` + endpointsFor("$3", "$5") + `,
			` + endpointsFor("$3", "$6") + `
		FROM click
		LEFT JOIN (SELECT * FROM inserted UNION ALL SELECT * FROM existing) customer (` + customerNames + `) ON true`

// clickCustomer is resolveClick then customerForClick, in one round trip
// for a click already in Postgres (qClickCustomer) unless a concurrent
// transaction just created its customer; the customer's saleFacts come
// with it (nil when the customer was looked for again). The customer is
// nil when the click belongs to another program. Errors: ENotFound (no
// such click in Postgres: it may still be in the queue, see resolveClick).
func clickCustomer(ctx context.Context, tx *sqlx.Tx, stmts *preparedStatements, programID int64, clickID string, now time.Time) (*ledger.Click, *ledger.Customer, *saleFacts, error) {
	at, ok := ledger.ClickTime(clickID)
	if !ok {
		return nil, nil, nil, notFound("click")
	}
	c := &ledger.Click{ID: clickID}
	var (
		id                                    sql.NullInt64
		progID                                sql.NullInt64
		partnerID, linkID                     *int64
		custClick, key, email, status, procID sql.NullString
		firstPaid                             *time.Time
		isTest                                sql.NullBool
		created                               sql.NullTime
		facts                                 saleFacts
		saleEndpoints, commissionEndpoints    pq.Int64Array
	)
	// The generic plan: the sale's first statement forced it for the
	// transaction (qProgramForSale).
	err := stmts.row(ctx, tx, qClickCustomer, clickID, at, programID, now,
		ledger.EventSaleCreated, ledger.EventCommissionCreated).Scan(
		&c.OccurredAt, &c.ProgramID, &c.PartnerID, &c.LinkID, &c.IsTest,
		&id, &progID, &partnerID, &linkID, &custClick, &key, &email, &status, &procID, &firstPaid, &isTest, &created,
		&facts.enrolled, &saleEndpoints, &commissionEndpoints)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, nil, notFound("click")
	} else if err != nil {
		return nil, nil, nil, err
	}
	c.OccurredAt = c.OccurredAt.UTC()
	switch {
	case c.ProgramID != programID:
		return c, nil, nil, nil
	case !id.Valid:
		cust, err := customerForClick(ctx, tx, c, now)
		return c, cust, nil, err
	}
	facts.saleEndpoints, facts.commissionEndpoints = saleEndpoints, commissionEndpoints
	return c, &ledger.Customer{
		ID: id.Int64, ProgramID: progID.Int64, PartnerID: partnerID, LinkID: linkID, ClickID: custClick.String,
		CustomerKey: key.String, Email: email.String, Status: status.String, ProcessorCustomerID: procID.String,
		FirstPaidAt: firstPaid, IsTest: isTest.Bool, CreatedAt: created.Time.UTC(),
	}, &facts, nil
}

// customerForClick returns the customer a click brought to its program,
// creating it at funnel status "click", locked for the rest of tx.
func customerForClick(ctx context.Context, tx *sqlx.Tx, c *ledger.Click, now time.Time) (*ledger.Customer, error) {
	_, err := tx.ExecContext(ctx, `
		INSERT INTO customers (program_id, partner_id, link_id, click_id, click_occurred_at, is_test, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
		ON CONFLICT (program_id, click_id) WHERE click_id IS NOT NULL DO NOTHING`,
		c.ProgramID, c.PartnerID, c.LinkID, c.ID, c.OccurredAt, c.IsTest, now)
	if err != nil {
		return nil, err
	}
	return scanCustomer(tx.QueryRowContext(ctx, `SELECT `+customerColumns+`
		FROM customers WHERE program_id = $1 AND click_id = $2 FOR NO KEY UPDATE`, c.ProgramID, c.ID))
}

// customerByKey returns the program's customer with a settled customer
// key, locked for the rest of tx (read with the prepared statement of
// stmts, or unprepared when stmts is nil). Errors: ENotFound.
func customerByKey(ctx context.Context, tx *sqlx.Tx, stmts *preparedStatements, programID int64, key string) (*ledger.Customer, error) {
	return scanCustomer(stmts.row(ctx, tx, qCustomerByKey, programID, key))
}

const qCustomerByKey = `SELECT ` + customerColumns + `
		FROM customers WHERE program_id = $1 AND customer_key = $2 FOR NO KEY UPDATE`
