package faulttest

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/lib/pq" // the postgres driver

	"github.com/partnertrack/partnertrack/migrations"
)

// Postgres is a throwaway Postgres cluster of one test: initdb'd into a
// temporary directory, served on a free port of 127.0.0.1 by a postgres
// process in the foreground, trust authentication for user postgres.
type Postgres struct {
	Port int
	Dir  string // data directory (the Unix socket lives beside it)
	bin  string
	cred *syscall.Credential

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}

	logMu sync.Mutex
	logs  bytes.Buffer
}

// StartPostgres creates and starts a cluster, stopped when the test ends.
//
// initdb and postgres refuse to run as root. When the test runs as root,
// both run as the system user postgres (the Debian packages create it)
// through the process credentials, in a directory that user owns; as any
// other user they run as that user. The binaries are found in PG_BINDIR,
// else in /usr/lib/postgresql/<newest>/bin, else on PATH.
func StartPostgres(tb testing.TB) *Postgres {
	tb.Helper()
	p := &Postgres{Port: FreePort(tb)}
	var err error
	if p.bin, err = postgresBinDir(); err != nil {
		tb.Fatalf("faulttest: %v", err)
	}
	base, err := os.MkdirTemp("", "faulttest-pg-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(base) })
	p.Dir = filepath.Join(base, "data")
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			tb.Fatalf("faulttest: initdb refuses to run as root and there is no postgres user (%v); "+
				"install PostgreSQL (`apt-get install -y postgresql`) or run the tests as another user", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(base, uid, gid); err != nil {
			tb.Fatal(err)
		}
	}
	initdb := exec.Command(filepath.Join(p.bin, "initdb"), "-D", p.Dir, "-U", "postgres",
		"--auth=trust", "--no-sync", "--encoding=UTF8", "--locale=C")
	bindToTest(initdb, p.cred)
	if out, err := initdb.CombinedOutput(); err != nil {
		tb.Fatalf("faulttest: initdb: %v\n%s", err, out)
	}
	tb.Cleanup(func() { p.stop(syscall.SIGQUIT) })
	p.Start(tb)
	return p
}

func postgresBinDir() (string, error) {
	if d := os.Getenv("PG_BINDIR"); d != "" {
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgVersion(dirs[i]) > pgVersion(dirs[j]) })
	for _, d := range dirs {
		if fileExists(filepath.Join(d, "initdb")) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", fmt.Errorf("initdb not found in PG_BINDIR, /usr/lib/postgresql/*/bin or PATH; install PostgreSQL (`apt-get install -y postgresql`)")
}

func pgVersion(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// URL is the DSN of database name on this cluster.
func (p *Postgres) URL(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", p.Port, name)
}

// CreateDatabase creates a database, applies the migrations, and returns
// its DSN.
func (p *Postgres) CreateDatabase(tb testing.TB, name string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := sql.Open("postgres", p.URL("postgres"))
	if err != nil {
		tb.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("faulttest: create database %s: %v", name, err)
	}
	db, err := sql.Open("postgres", p.URL(name))
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	if err := migrations.Up(ctx, db, nil); err != nil {
		tb.Fatalf("faulttest: migrate %s: %v", name, err)
	}
	return p.URL(name)
}

// Start starts the server (again) and waits until it accepts connections.
func (p *Postgres) Start(tb testing.TB) {
	tb.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		tb.Fatalf("faulttest: postgres on %d already running", p.Port)
	}
	// fsync is off: tests kill the server's processes, never the machine,
	// so what Postgres wrote to the kernel survives either way.
	// synchronous_commit stays on, so a crash loses nothing committed.
	cmd := exec.Command(filepath.Join(p.bin, "postgres"), "-D", p.Dir,
		"-p", strconv.Itoa(p.Port), "-k", filepath.Dir(p.Dir),
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
		"-c", "full_page_writes=off", "-c", "max_connections=200", "-c", "shared_buffers=32MB")
	bindToTest(cmd, p.cred)
	p.logMu.Lock()
	p.logs.Reset()
	p.logMu.Unlock()
	cmd.Stdout, cmd.Stderr = &lockedWriter{mu: &p.logMu, w: &p.logs}, &lockedWriter{mu: &p.logMu, w: &p.logs}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("faulttest: start postgres: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	p.cmd, p.done = cmd, done
	db, _ := sql.Open("postgres", p.URL("postgres")+"&connect_timeout=1")
	defer db.Close()
	err := waitFor(30*time.Second, func() error {
		select {
		case <-done:
			return fmt.Errorf("postgres exited")
		default:
		}
		return db.Ping()
	})
	if err != nil {
		logs := p.Logs()
		tb.Fatalf("faulttest: postgres on %d did not come up: %v\n%s", p.Port, err, logs)
	}
}

// Stop shuts the server down with the fast mode (SIGINT): open
// transactions are rolled back and every connection is closed, as in a
// restart by an operator or a failover.
func (p *Postgres) Stop(tb testing.TB) {
	tb.Helper()
	if err := p.stop(syscall.SIGINT); err != nil {
		tb.Fatalf("faulttest: %v", err)
	}
}

// Crash stops the server with the immediate mode (SIGQUIT): no shutdown
// checkpoint, recovery from the WAL at the next start, as after a crash.
func (p *Postgres) Crash(tb testing.TB) {
	tb.Helper()
	if err := p.stop(syscall.SIGQUIT); err != nil {
		tb.Fatalf("faulttest: %v", err)
	}
}

func (p *Postgres) stop(sig syscall.Signal) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	cmd.Process.Signal(sig)
	var err error
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		err = fmt.Errorf("postgres on %d ignored %s for 30 s; killed", p.Port, sig)
	}
	p.mu.Lock()
	p.cmd = nil
	p.mu.Unlock()
	return err
}

// Logs returns what the server logged since it last started.
func (p *Postgres) Logs() string {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	return p.logs.String()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
