package ceiling

// RawTx measures the raw sale-shaped transaction the sale endpoint is
// compared with: lock the partner's row, insert the sale, insert its
// commission, update the partner's balance, commit; over lib/pq with
// binary_parameters=yes, in a scratch database of its own.

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	_ "github.com/lib/pq" // the Postgres driver

	"github.com/partnertrack/partnertrack/cmd/loadgen/internal/drive"
)

// Schema is the scratch database's tables: the shape of the ledger's
// partners, sales and commissions, without the rest.
const Schema = `
CREATE TABLE partners (id bigint PRIMARY KEY, balance_cents bigint NOT NULL DEFAULT 0, updated_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE sales (id bigserial PRIMARY KEY, partner_id bigint NOT NULL REFERENCES partners (id),
  transaction_id text NOT NULL UNIQUE, amount_cents bigint NOT NULL, currency text NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE commissions (id bigserial PRIMARY KEY, sale_id bigint NOT NULL REFERENCES sales (id), partner_id bigint NOT NULL REFERENCES partners (id),
  amount_cents bigint NOT NULL, status text NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
`

// RawOptions shape a run of the raw sale transaction.
type RawOptions struct {
	DSN      string // the scratch database (empty); binary_parameters=yes is added
	Clients  int    // concurrent transactions (16)
	Partners int    // partners the sales spread over
	Duration time.Duration
}

// Run creates the tables, runs transactions from Clients connections as
// fast as they go for Duration, and returns what it measured (status 200
// a committed transaction, 500 a failed one).
func RawTx(ctx context.Context, o RawOptions) (*drive.Result, error) {
	dsn := o.DSN
	if !strings.Contains(dsn, "binary_parameters") {
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		dsn += sep + "binary_parameters=yes"
	}
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.SetMaxOpenConns(o.Clients)
	db.SetMaxIdleConns(o.Clients)
	if _, err := db.ExecContext(ctx, Schema); err != nil {
		return nil, fmt.Errorf("raw sale schema: %w", err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO partners (id) SELECT generate_series(1, $1::bigint)`, o.Partners); err != nil {
		return nil, err
	}
	res := drive.Run(ctx, drive.Options{Workers: o.Clients, Duration: o.Duration}, func(ctx context.Context, w int, i int64) (int, error) {
		if err := sale(ctx, db, i, int64(o.Partners)); err != nil {
			return 500, err
		}
		return 200, nil
	})
	return res, nil
}

// sale is one sale-shaped transaction, the partner locked first (locking
// it after inserting the sale deadlocks under load: the foreign key's
// share lock meets the later FOR UPDATE).
func sale(ctx context.Context, db *sql.DB, i, partners int64) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	partner := i*7919%partners + 1
	var balance int64
	if err := tx.QueryRowContext(ctx, `SELECT balance_cents FROM partners WHERE id = $1 FOR NO KEY UPDATE`, partner).Scan(&balance); err != nil {
		return err
	}
	var saleID int64
	if err := tx.QueryRowContext(ctx, `INSERT INTO sales (partner_id, transaction_id, amount_cents, currency) VALUES ($1, $2, $3, $4) RETURNING id`,
		partner, "raw-"+strconv.FormatInt(i, 10), 4999, "USD").Scan(&saleID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO commissions (sale_id, partner_id, amount_cents, status) VALUES ($1, $2, $3, 'pending')`,
		saleID, partner, 999); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE partners SET balance_cents = balance_cents + $2, updated_at = now() WHERE id = $1`, partner, 999); err != nil {
		return err
	}
	return tx.Commit()
}
