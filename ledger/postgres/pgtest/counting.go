package pgtest

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/partnertrack/partnertrack/ledger/postgres"
)

// RoundTrips counts the messages a database sends to Postgres that wait
// for an answer: each statement (one round trip with binary_parameters),
// BEGIN, COMMIT and ROLLBACK. It counts at the driver, so it sees exactly
// what the services send.
type RoundTrips struct {
	mu         sync.Mutex
	statements []string
}

// Reset forgets what was counted so far.
func (r *RoundTrips) Reset() {
	r.mu.Lock()
	r.statements = nil
	r.mu.Unlock()
}

// Count is the number of round trips since the last Reset.
func (r *RoundTrips) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.statements)
}

// Statements lists the round trips since the last Reset, each as its
// first line of SQL, for a failing test to show.
func (r *RoundTrips) Statements() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.statements...)
}

func (r *RoundTrips) add(query string) {
	query = strings.Join(strings.Fields(query), " ")
	if len(query) > 90 {
		query = query[:90] + "…"
	}
	r.mu.Lock()
	r.statements = append(r.statements, query)
	r.mu.Unlock()
}

// NewCounting returns a fresh, migrated database (as New) whose pool
// counts its round trips in the returned RoundTrips.
func NewCounting(tb testing.TB) (*DB, *RoundTrips) {
	tb.Helper()
	plain := New(tb)
	sep := "?"
	if strings.Contains(plain.URL, "?") {
		sep = "&"
	}
	connector, err := pq.NewConnector(plain.URL + sep + "binary_parameters=yes")
	if err != nil {
		tb.Fatalf("pgtest: counting connector: %v", err)
	}
	rt := &RoundTrips{}
	pool := sql.OpenDB(countingConnector{Connector: connector, rt: rt})
	pool.SetMaxOpenConns(16)
	pool.SetMaxIdleConns(16)
	tb.Cleanup(func() { pool.Close() })
	db := &postgres.DB{DB: sqlx.NewDb(pool, "postgres"), Now: time.Now}
	return &DB{DB: db, URL: plain.URL, Name: plain.Name}, rt
}

type countingConnector struct {
	*pq.Connector
	rt *RoundTrips
}

func (c countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &countingConn{inner: conn, rt: c.rt}, nil
}

// countingConn forwards every interface lib/pq's connection implements,
// so that database/sql takes the same paths (no extra prepares) as with
// the plain driver.
type countingConn struct {
	inner driver.Conn
	rt    *RoundTrips
}

func (c *countingConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *countingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	c.rt.add("PREPARE " + query)
	st, err := c.inner.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &countingStmt{inner: st, query: query, rt: c.rt}, nil
}

// countingStmt counts each execution of a prepared statement.
type countingStmt struct {
	inner driver.Stmt
	query string
	rt    *RoundTrips
}

func (s *countingStmt) Close() error  { return s.inner.Close() }
func (s *countingStmt) NumInput() int { return s.inner.NumInput() }

func (s *countingStmt) Exec(args []driver.Value) (driver.Result, error) {
	s.rt.add("EXECUTE " + s.query)
	return s.inner.Exec(args) //nolint:staticcheck // the driver's own fallback
}

func (s *countingStmt) Query(args []driver.Value) (driver.Rows, error) {
	s.rt.add("EXECUTE " + s.query)
	return s.inner.Query(args) //nolint:staticcheck // the driver's own fallback
}

func (s *countingStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.rt.add("EXECUTE " + s.query)
	return s.inner.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (s *countingStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.rt.add("EXECUTE " + s.query)
	return s.inner.(driver.StmtQueryContext).QueryContext(ctx, args)
}

func (c *countingConn) Close() error { return c.inner.Close() }

func (c *countingConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *countingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	c.rt.add("BEGIN")
	tx, err := c.inner.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return countingTx{inner: tx, rt: c.rt}, nil
}

func (c *countingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	c.rt.add(query)
	return c.inner.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (c *countingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	c.rt.add(query)
	return c.inner.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (c *countingConn) CheckNamedValue(nv *driver.NamedValue) error {
	return c.inner.(driver.NamedValueChecker).CheckNamedValue(nv)
}

func (c *countingConn) Ping(ctx context.Context) error {
	return c.inner.(driver.Pinger).Ping(ctx)
}

func (c *countingConn) ResetSession(ctx context.Context) error {
	return c.inner.(driver.SessionResetter).ResetSession(ctx)
}

func (c *countingConn) IsValid() bool { return c.inner.(driver.Validator).IsValid() }

type countingTx struct {
	inner driver.Tx
	rt    *RoundTrips
}

func (t countingTx) Commit() error {
	t.rt.add("COMMIT")
	return t.inner.Commit()
}

func (t countingTx) Rollback() error {
	t.rt.add("ROLLBACK")
	return t.inner.Rollback()
}
