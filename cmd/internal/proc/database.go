package proc

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	_ "github.com/lib/pq" // the Postgres driver
)

// CreateDB creates the empty database name on the server of adminURL (a
// DSN of any database there) and returns a DSN of it.
func CreateDB(ctx context.Context, adminURL, name string) (string, error) {
	db, err := sql.Open("postgres", adminURL)
	if err != nil {
		return "", err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE DATABASE "`+name+`"`); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return WithDB(adminURL, name), nil
}

// DropDB drops database name, closing its connections.
func DropDB(ctx context.Context, adminURL, name string) error {
	db, err := sql.Open("postgres", adminURL)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err = db.ExecContext(ctx, `DROP DATABASE IF EXISTS "`+name+`" WITH (FORCE)`); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

// WithDB is the DSN adminURL naming database name instead.
func WithDB(adminURL, name string) string {
	base, query, _ := strings.Cut(adminURL, "?")
	if i := strings.LastIndex(base, "/"); i > len("postgres://") {
		base = base[:i]
	}
	if query != "" {
		return base + "/" + name + "?" + query
	}
	return base + "/" + name
}
