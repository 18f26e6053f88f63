package faulttest

import (
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

	"github.com/partnertrack/partnertrack/cmd/internal/proc"
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

	mu sync.Mutex
	p  *proc.Process // nil while stopped
	// logs is what the server logged since it last started.
	logs *proc.Logs
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
	initdb, err := proc.Start("initdb", filepath.Join(p.bin, "initdb"), proc.Options{Inherit: true, Cred: p.cred,
		Args: []string{"-D", p.Dir, "-U", "postgres", "--auth=trust", "--no-sync", "--encoding=UTF8", "--locale=C"}})
	if err != nil {
		tb.Fatalf("faulttest: %v", err)
	}
	if code, err := initdb.Wait(2 * time.Minute); err != nil || code != 0 {
		initdb.Kill()
		tb.Fatalf("faulttest: initdb: exit %d, %v\n%s", code, err, initdb.Logs.Text())
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
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
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
	url, err := proc.CreateDB(ctx, p.URL("postgres"), name)
	if err != nil {
		tb.Fatalf("faulttest: %v", err)
	}
	db, err := sql.Open("postgres", url)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	if err := migrations.Up(ctx, db, nil); err != nil {
		tb.Fatalf("faulttest: migrate %s: %v", name, err)
	}
	return url
}

// Start starts the server (again) and waits until it accepts connections.
func (p *Postgres) Start(tb testing.TB) {
	tb.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.p != nil {
		tb.Fatalf("faulttest: postgres on %d already running", p.Port)
	}
	// fsync is off: tests kill the server's processes, never the machine,
	// so what Postgres wrote to the kernel survives either way.
	// synchronous_commit stays on, so a crash loses nothing committed.
	srv, err := proc.Start("postgres", filepath.Join(p.bin, "postgres"), proc.Options{Inherit: true, Cred: p.cred, Args: []string{
		"-D", p.Dir, "-p", strconv.Itoa(p.Port), "-k", filepath.Dir(p.Dir),
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
		"-c", "full_page_writes=off", "-c", "max_connections=200", "-c", "shared_buffers=32MB"}})
	if err != nil {
		tb.Fatalf("faulttest: %v", err)
	}
	p.p, p.logs = srv, srv.Logs
	db, _ := sql.Open("postgres", p.URL("postgres")+"&connect_timeout=1")
	defer db.Close()
	err = proc.WaitFor(30*time.Second, func() error {
		if srv.Exited() {
			return fmt.Errorf("postgres exited")
		}
		return db.Ping()
	})
	if err != nil {
		tb.Fatalf("faulttest: postgres on %d did not come up: %v\n%s", p.Port, err, srv.Logs.Text())
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
	srv := p.p
	p.mu.Unlock()
	if srv == nil {
		return nil
	}
	err := srv.StopWith(sig, 30*time.Second)
	p.mu.Lock()
	p.p = nil
	p.mu.Unlock()
	return err
}

// Logs returns what the server logged since it last started.
func (p *Postgres) Logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.logs == nil {
		return ""
	}
	return p.logs.Text()
}
