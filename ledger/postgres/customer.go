package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"

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
//
// The worker deletes a click's pending record once its row is committed,
// so a click can leave pending between this transaction's read of clicks
// and its read of pending: a miss in pending reads clicks again (a new
// statement sees what was committed before it, the transaction being READ
// COMMITTED) before it answers ENotFound.
func resolveClick(ctx context.Context, tx *sqlx.Tx, stmts *preparedStatements, pending ledger.PendingClicks, clickID string) (*ledger.Click, error) {
	at, ok := ledger.ClickTime(clickID)
	if !ok {
		return nil, notFound("click")
	}
	c, err := storedClick(ctx, tx, stmts, clickID, at)
	if err == nil || !errors.Is(err, sql.ErrNoRows) {
		return c, err
	}
	if pending == nil {
		return nil, notFound("click")
	}
	pc, err := pending.PendingClick(ctx, clickID)
	if ledger.ErrorCode(err) == ledger.ENotFound {
		if c, err := storedClick(ctx, tx, stmts, clickID, at); !errors.Is(err, sql.ErrNoRows) {
			return c, err
		}
		return nil, notFound("click")
	}
	if err != nil {
		return nil, err
	}
	if err := insertClick(ctx, tx, pc); err != nil {
		return nil, err
	}
	return pc, nil
}

// storedClick reads a click's row; sql.ErrNoRows when there is none.
func storedClick(ctx context.Context, tx *sqlx.Tx, stmts *preparedStatements, clickID string, at time.Time) (*ledger.Click, error) {
	c := &ledger.Click{ID: clickID}
	err := stmts.row(ctx, tx, qClickByID, clickID, at).
		Scan(&c.OccurredAt, &c.ProgramID, &c.PartnerID, &c.LinkID, &c.IsTest)
	if err != nil {
		return nil, err
	}
	c.OccurredAt = c.OccurredAt.UTC()
	return c, nil
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
