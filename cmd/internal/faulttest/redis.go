package faulttest

import (
	"context"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnertrack/partnertrack/cmd/internal/proc"
)

// RedisOptions configure a Redis of a test's own.
type RedisOptions struct {
	// AppendOnly turns on the append-only file (appendfsync everysec
	// unless FsyncAlways), so queued tasks survive a restart or, but for
	// everysec's slow-disk window, a crash of the process.
	AppendOnly bool
	// FsyncAlways writes and fsyncs the file before every reply, as
	// docker-compose.yml runs Redis: nothing acknowledged is lost to a
	// kill even while the disk is too busy for everysec's background
	// fsync (then Redis postpones its writes up to 2 s and replies
	// meanwhile; docs/ingestion.md).
	FsyncAlways bool
}

// Redis is a redis-server of one test, on its own port and directory.
type Redis struct {
	Port int
	Dir  string
	opts RedisOptions

	mu     sync.Mutex
	p      *proc.Process
	paused bool
}

// StartRedis starts a Redis on a free port of 127.0.0.1 and stops it when
// the test ends. It fails (never skips) when redis-server is missing.
func StartRedis(tb testing.TB, opts RedisOptions) *Redis {
	tb.Helper()
	r := &Redis{Port: FreePort(tb), Dir: tb.TempDir(), opts: opts}
	tb.Cleanup(r.kill)
	r.Start(tb)
	return r
}

// URL is the server's address for REDIS_URL.
func (r *Redis) URL() string { return "redis://127.0.0.1:" + strconv.Itoa(r.Port) + "/0" }

// Start starts the server (again), on the same port and directory: with
// an append-only file it reloads what it held. It waits until the server
// answers PING.
func (r *Redis) Start(tb testing.TB) {
	tb.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.p != nil {
		tb.Fatalf("faulttest: redis on %d already running", r.Port)
	}
	p, err := proc.StartRedis(proc.RedisOptions{Port: r.Port, Dir: r.Dir, AppendOnly: r.opts.AppendOnly, FsyncAlways: r.opts.FsyncAlways})
	if err != nil {
		tb.Fatalf("faulttest: %v", err)
	}
	r.p = p
}

// Kill crashes the server (SIGKILL): what it acknowledged survives only
// in its append-only file.
func (r *Redis) Kill(tb testing.TB) {
	tb.Helper()
	r.kill()
}

// Stop shuts the server down as an operator would (SIGTERM: it flushes
// its append-only file and exits).
func (r *Redis) Stop(tb testing.TB) {
	tb.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.p == nil {
		return
	}
	if r.paused { // a stopped process handles SIGTERM only once continued
		r.p.Signal(syscall.SIGCONT)
		r.paused = false
	}
	if err := r.p.Stop(); err != nil {
		tb.Errorf("faulttest: redis on %d: %v", r.Port, err)
	}
	r.p = nil
}

// Pause freezes the server (SIGSTOP): it keeps its connections and
// accepts new ones in the kernel's backlog, but answers nothing, as a
// hung Redis or a network dropping packets would.
func (r *Redis) Pause(tb testing.TB) {
	tb.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.p == nil || r.paused {
		tb.Fatalf("faulttest: redis on %d is not running", r.Port)
	}
	if err := r.p.Signal(syscall.SIGSTOP); err != nil {
		tb.Fatalf("faulttest: pause redis on %d: %v", r.Port, err)
	}
	r.paused = true
}

// Resume lets a paused server go on (SIGCONT) and waits until it answers
// PING.
func (r *Redis) Resume(tb testing.TB) {
	tb.Helper()
	r.mu.Lock()
	if r.p == nil || !r.paused {
		r.mu.Unlock()
		tb.Fatalf("faulttest: redis on %d is not paused", r.Port)
	}
	err := r.p.Signal(syscall.SIGCONT)
	r.paused = false
	r.mu.Unlock()
	if err != nil {
		tb.Fatalf("faulttest: resume redis on %d: %v", r.Port, err)
	}
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(r.Port), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	if err := proc.WaitFor(20*time.Second, func() error { return c.Ping(context.Background()).Err() }); err != nil {
		tb.Fatalf("faulttest: redis on %d did not answer after SIGCONT: %v", r.Port, err)
	}
}

func (r *Redis) kill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.p == nil {
		return
	}
	r.p.Kill() // SIGKILL ends a paused process too
	r.p, r.paused = nil, false
}
