// Package pgtest gives each test its own Postgres database, cloned in
// milliseconds from a template migrated once per migration set.
//
// The server is TEST_DATABASE_URL (default: the local trust-auth server).
// A test never skips when Postgres is missing: it fails and says how to
// start it.
package pgtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/lib/pq" // the postgres driver

	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/migrations"
)

const defaultServer = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// ServerURL is the admin connection of the test server.
func ServerURL() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	return defaultServer
}

var (
	templateOnce sync.Once
	templateName string
	templateErr  error
)

// DB is a database of one test.
type DB struct {
	*postgres.DB
	URL  string // DSN of this database, for processes the test starts
	Name string
}

// New returns a fresh, migrated database dropped when the test ends.
func New(tb testing.TB) *DB {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	templateOnce.Do(func() { templateName, templateErr = ensureTemplate(ctx) })
	if templateErr != nil {
		tb.Fatalf("pgtest: %v", templateErr)
	}
	admin := mustAdmin(tb)
	defer admin.Close()

	name := "pt_test_" + randomHex(8)
	var err error
	for attempt := 0; attempt < 20; attempt++ {
		_, err = admin.ExecContext(ctx, fmt.Sprintf(`CREATE DATABASE %s TEMPLATE %s`, name, templateName))
		// Cloning fails while another session is connected to the
		// template; that only happens for a moment, so try again.
		if err == nil || !strings.Contains(err.Error(), "is being accessed by other users") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		tb.Fatalf("pgtest: create database: %v", err)
	}
	dsn := withDatabase(ServerURL(), name)
	db, err := postgres.Open(ctx, dsn, postgres.PoolConfig{MaxConns: 16, ConnMaxLifetime: time.Hour, ConnMaxIdleTime: time.Minute})
	if err != nil {
		tb.Fatalf("pgtest: open %s: %v", name, err)
	}
	tb.Cleanup(func() {
		db.Close()
		a := mustAdmin(tb)
		defer a.Close()
		if _, err := a.Exec(fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name)); err != nil {
			tb.Errorf("pgtest: drop %s: %v", name, err)
		}
	})
	return &DB{DB: db, URL: dsn, Name: name}
}

func mustAdmin(tb testing.TB) *sql.DB {
	tb.Helper()
	admin, err := sql.Open("postgres", ServerURL())
	if err == nil {
		err = admin.Ping()
	}
	if err != nil {
		tb.Fatalf("pgtest: Postgres is not reachable at %s (%v); start it with "+
			"`pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start` or set TEST_DATABASE_URL", ServerURL(), err)
	}
	return admin
}

// ensureTemplate creates the migrated template database of this migration
// set once per server (and month, since the first migration creates
// partitions around the current month). An advisory lock keeps parallel
// test binaries from building it twice. Templates of other migration sets
// are left alone (another checkout may be testing with them); `make
// clean-testdb` drops them all.
func ensureTemplate(ctx context.Context) (string, error) {
	name, err := templateDBName()
	if err != nil {
		return "", err
	}
	admin, err := sql.Open("postgres", ServerURL())
	if err != nil {
		return "", err
	}
	defer admin.Close()
	conn, err := admin.Conn(ctx)
	if err != nil {
		return "", fmt.Errorf("Postgres is not reachable at %s (%v); start it with "+
			"`pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start`", ServerURL(), err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(7271001)`); err != nil {
		return "", err
	}
	defer conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock(7271001)`)

	var isTemplate sql.NullBool
	err = conn.QueryRowContext(ctx, `SELECT datistemplate FROM pg_database WHERE datname = $1`, name).Scan(&isTemplate)
	if err == nil && isTemplate.Bool {
		return name, nil
	}
	// Missing, or left half-built by an interrupted run.
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name)); err != nil {
		return "", err
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(`CREATE DATABASE %s`, name)); err != nil {
		return "", err
	}
	tmpl, err := sql.Open("postgres", withDatabase(ServerURL(), name))
	if err != nil {
		return "", err
	}
	if err := migrations.Up(ctx, tmpl, nil); err != nil {
		tmpl.Close()
		return "", err
	}
	tmpl.Close()
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(`ALTER DATABASE %s WITH is_template true`, name)); err != nil {
		return "", err
	}
	return name, nil
}

func templateDBName() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(migrations.FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.FS(), path)
		if err != nil {
			return err
		}
		h.Write([]byte(path))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", err
	}
	h.Write([]byte(time.Now().UTC().Format("2006-01")))
	return "pt_tmpl_" + hex.EncodeToString(h.Sum(nil))[:12], nil
}

func withDatabase(dsn, name string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		panic(err)
	}
	u.Path = "/" + name
	return u.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Fixture is a program with an enrolled partner and the partner's
// referral link, for tests that work below the operator API.
type Fixture struct {
	ProgramID, PartnerID, LinkID int64
	Code                         string
}

// MustFixture writes a workspace, a program (10 percent, the default
// cookie duration), a partner enrolled in it and an active link with
// code.
func (db *DB) MustFixture(tb testing.TB, code string) Fixture {
	tb.Helper()
	f := Fixture{Code: code}
	err := db.QueryRow(`WITH w AS (INSERT INTO workspaces (name) VALUES ('w ' || $1) RETURNING id)
		INSERT INTO programs (workspace_id, name, domain, commission_type, commission_rate)
		SELECT id, 'p', 'p.example', 'percent', 10 FROM w RETURNING id`, code).Scan(&f.ProgramID)
	if err == nil {
		err = db.QueryRow(`INSERT INTO partners (email, name) VALUES ($1 || '@partner.example', 'Pat') RETURNING id`, code).Scan(&f.PartnerID)
	}
	if err == nil {
		_, err = db.Exec(`INSERT INTO enrollments (program_id, partner_id) VALUES ($1, $2)`, f.ProgramID, f.PartnerID)
	}
	if err == nil {
		err = db.QueryRow(`INSERT INTO links (program_id, partner_id, code) VALUES ($1, $2, $3) RETURNING id`,
			f.ProgramID, f.PartnerID, code).Scan(&f.LinkID)
	}
	if err != nil {
		tb.Fatalf("pgtest: fixture %q: %v", code, err)
	}
	return f
}
