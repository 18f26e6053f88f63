package postgres

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"

	"github.com/jmoiron/sqlx"
)

// preparedStatements are the statements of a hot path, prepared once for
// the pool and by database/sql once on each connection, so that Postgres
// parses and plans them once per connection instead of on every call.
// Executing a prepared statement is one round trip, as a statement sent
// with binary_parameters is.
type preparedStatements struct {
	db      *DB
	queries []string
	ready   atomic.Bool
	mu      sync.Mutex
	stmts   map[string]*sqlx.Stmt
}

func newPreparedStatements(db *DB, queries ...string) *preparedStatements {
	return &preparedStatements{db: db, queries: queries, stmts: make(map[string]*sqlx.Stmt, len(queries))}
}

// prepare prepares the statements not prepared yet. It must run outside
// any transaction of the caller: preparing takes a connection of the
// pool, which a caller holding the last one would wait for forever.
func (p *preparedStatements) prepare(ctx context.Context) error {
	if p.ready.Load() {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, q := range p.queries {
		if _, ok := p.stmts[q]; ok {
			continue
		}
		st, err := p.db.PreparexContext(ctx, q)
		if err != nil {
			return err
		}
		p.stmts[q] = st
	}
	p.ready.Store(true)
	return nil
}

// in returns query, one of the set, prepared, for use in tx; the first
// use on a connection prepares it there.
func (p *preparedStatements) in(ctx context.Context, tx *sqlx.Tx, query string) *sqlx.Stmt {
	st := p.stmts[query]
	if st == nil {
		panic("postgres: a statement used before prepare, or outside its set: " + query)
	}
	return tx.StmtxContext(ctx, st)
}

// row runs query, one of the set, in tx and returns its row; with no set
// (p nil) the query runs unprepared.
func (p *preparedStatements) row(ctx context.Context, tx *sqlx.Tx, query string, args ...any) *sql.Row {
	if p == nil {
		return tx.QueryRowContext(ctx, query, args...)
	}
	return p.in(ctx, tx, query).QueryRowContext(ctx, args...)
}

// pooled returns query, one of the set, for use outside a transaction: it
// runs on any connection of the pool.
func (p *preparedStatements) pooled(query string) *sqlx.Stmt {
	return p.stmts[query]
}
