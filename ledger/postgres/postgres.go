// Package postgres implements the ledger services with sqlx and lib/pq. It
// is the only code of the service that speaks SQL: each exported method
// opens its transaction, calls lower-case helpers that take the *sqlx.Tx,
// and commits last.
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/secretbox"
)

// DB wraps the connection pool and the clock every service uses.
type DB struct {
	*sqlx.DB
	// Now is the clock; a transaction reads it once and uses that instant
	// for every timestamp it writes.
	Now func() time.Time
	// Secrets seals the signing secrets stored at rest (SECRETS_KEY); nil
	// is the public development key.
	Secrets *secretbox.Keyring
}

// PoolConfig sizes the connection pool.
type PoolConfig struct {
	MaxConns        int
	ConnMaxLifetime time.Duration
	ConnMaxIdleTime time.Duration
}

// DefaultPool suits a two-core machine running the edge and a worker:
// fewer backends than concurrent requests compete less for the cores, and
// requests beyond the pool wait their turn in database/sql
// (docs/decisions.md, "The connection pool").
var DefaultPool = PoolConfig{MaxConns: 8, ConnMaxLifetime: 30 * time.Minute, ConnMaxIdleTime: 5 * time.Minute}

// Open connects to Postgres and checks the connection. The DSN gains
// binary_parameters=yes (one round trip per parameterised statement with
// lib/pq) unless it says otherwise.
func Open(ctx context.Context, dsn string, pool PoolConfig) (*DB, error) {
	dsn, err := withBinaryParameters(dsn)
	if err != nil {
		return nil, err
	}
	db, err := sqlx.Open("postgres", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(pool.MaxConns)
	db.SetMaxIdleConns(pool.MaxConns)
	db.SetConnMaxLifetime(pool.ConnMaxLifetime)
	db.SetConnMaxIdleTime(pool.ConnMaxIdleTime)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return &DB{DB: db, Now: time.Now}, nil
}

func withBinaryParameters(dsn string) (string, error) {
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		if strings.Contains(dsn, "binary_parameters") {
			return dsn, nil
		}
		return dsn + " binary_parameters=yes", nil
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("parse database url: %w", err)
	}
	q := u.Query()
	if q.Get("binary_parameters") == "" {
		q.Set("binary_parameters", "yes")
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// now returns the service clock in UTC, truncated to microseconds (what
// Postgres stores), so values read back compare equal.
func (db *DB) now() time.Time {
	return db.Now().UTC().Truncate(time.Microsecond)
}

// maxAttempts bounds the retries of a transaction that failed on a
// serialization failure or a deadlock.
const maxAttempts = 5

// Transact runs fn in a transaction and commits it, retrying the whole
// function when Postgres reports a serialization failure or a deadlock.
// fn must be safe to run again (it must not have effects outside tx).
func (db *DB) Transact(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	var err error
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		err = db.transactOnce(ctx, fn)
		if !isRetryable(err) || ctx.Err() != nil {
			return err
		}
		time.Sleep(time.Duration(attempt*attempt) * time.Millisecond)
	}
	return err
}

func (db *DB) transactOnce(ctx context.Context, fn func(tx *sqlx.Tx) error) (err error) {
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	if err = fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

func isRetryable(err error) bool {
	var pqErr *pq.Error
	if errors.As(err, &pqErr) {
		return pqErr.Code == "40001" || pqErr.Code == "40P01"
	}
	return false
}

// uniqueViolation returns the constraint name when err is a unique
// violation, else "".
func uniqueViolation(err error) string {
	var pqErr *pq.Error
	if errors.As(err, &pqErr) && pqErr.Code == "23505" {
		return pqErr.Constraint
	}
	return ""
}

// constraintErrors translates unique violations that callers can cause.
var constraintErrors = map[string]*ledger.Error{
	"links_code_key":                    ledger.NewError(ledger.EConflict, ledger.MsgLinkCodeTaken),
	"programs_slug_key":                 ledger.NewError(ledger.EConflict, ledger.MsgSlugTaken),
	"processor_accounts_pkey":           ledger.NewError(ledger.EConflict, ledger.MsgProcessorTaken),
	"processor_accounts_program_id_key": ledger.NewError(ledger.EConflict, "this program already has a connected processor account"),
}

// formatError turns driver errors a caller can cause into ledger errors and
// leaves the rest as they are (unexpected failures).
func formatError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.NewError(ledger.ENotFound, "not found")
	}
	if name := uniqueViolation(err); name != "" {
		if e, ok := constraintErrors[name]; ok {
			return e
		}
	}
	return err
}

// wrap adds the operation's name to an unexpected error, keeping it
// unwrappable so that ledger codes survive: defer wrap(&err, "op(%d)", id).
func wrap(errp *error, format string, args ...any) {
	if *errp == nil {
		return
	}
	var le *ledger.Error
	if errors.As(*errp, &le) {
		return
	}
	*errp = fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), *errp)
}

func notFound(what string) error {
	return ledger.NewError(ledger.ENotFound, what+" not found")
}

// EnsureDatabase creates the database named in dsn when it does not exist,
// connecting to the server's postgres database to do so. It reports
// whether it created it.
func EnsureDatabase(ctx context.Context, dsn string) (created bool, err error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return false, fmt.Errorf("parse database url: %w", err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	if name == "" {
		return false, errors.New("database url names no database")
	}
	admin := *u
	admin.Path = "/postgres"
	db, err := sql.Open("postgres", admin.String())
	if err != nil {
		return false, err
	}
	defer db.Close()
	var exists bool
	if err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return false, err
	}
	if exists {
		return false, nil
	}
	if _, err := db.ExecContext(ctx, `CREATE DATABASE `+pq.QuoteIdentifier(name)); err != nil {
		// Another process may have created it meanwhile.
		var pqErr *pq.Error
		if errors.As(err, &pqErr) && pqErr.Code == "42P04" {
			return false, nil
		}
		return false, err
	}
	return true, nil
}
