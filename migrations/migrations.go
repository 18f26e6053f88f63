// Package migrations holds the numbered SQL migrations of the service,
// embedded in the binaries and applied by goose.
//
// Only `partnerctl migrate` (and `partnerctl dev`, which `make run` uses)
// applies them; the edge and the worker call [CheckCurrent] at start and
// refuse to run against a schema that is behind.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"log/slog"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed *.sql
var files embed.FS

// FS returns the embedded migration files.
func FS() embed.FS { return files }

// newProvider builds a goose provider over the embedded files. A Postgres
// session lock keeps two migrating processes from racing each other.
func newProvider(db *sql.DB, logger *slog.Logger) (*goose.Provider, error) {
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, fmt.Errorf("migrations: session locker: %w", err)
	}
	opts := []goose.ProviderOption{goose.WithSessionLocker(locker)}
	if logger != nil {
		opts = append(opts, goose.WithSlog(logger))
	}
	return goose.NewProvider(goose.DialectPostgres, db, files, opts...)
}

// Up applies every pending migration. It never closes db.
func Up(ctx context.Context, db *sql.DB, logger *slog.Logger) error {
	p, err := newProvider(db, logger)
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrations: up: %w", err)
	}
	return nil
}

// UpTo applies the pending migrations up to and including version (tests
// of a migration start from the schema before it). It never closes db.
func UpTo(ctx context.Context, db *sql.DB, version int64) error {
	p, err := newProvider(db, nil)
	if err != nil {
		return err
	}
	if _, err := p.UpTo(ctx, version); err != nil {
		return fmt.Errorf("migrations: up to %d: %w", version, err)
	}
	return nil
}

// Versions reports the schema version of the database and the newest
// embedded migration.
func Versions(ctx context.Context, db *sql.DB) (current, target int64, err error) {
	p, err := newProvider(db, nil)
	if err != nil {
		return 0, 0, err
	}
	return p.GetVersions(ctx)
}

// CheckCurrent returns an error when the database schema is behind the
// embedded migrations.
func CheckCurrent(ctx context.Context, db *sql.DB) error {
	current, target, err := Versions(ctx, db)
	if err != nil {
		return fmt.Errorf("migrations: read schema version: %w", err)
	}
	if current < target {
		return fmt.Errorf("database schema is at version %d, this build needs %d: run `partnerctl migrate`", current, target)
	}
	return nil
}
