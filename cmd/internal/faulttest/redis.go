package faulttest

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisOptions configure a Redis of a test's own.
type RedisOptions struct {
	// AppendOnly turns on the append-only file (appendfsync everysec, as
	// docker-compose.yml runs Redis), so queued tasks survive a restart
	// or a crash of the process.
	AppendOnly bool
}

// Redis is a redis-server of one test, on its own port and directory.
type Redis struct {
	Port int
	Dir  string
	opts RedisOptions

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
	paused bool
}

// StartRedis starts a Redis on a free port of 127.0.0.1 and stops it when
// the test ends. It fails (never skips) when redis-server is missing.
func StartRedis(tb testing.TB, opts RedisOptions) *Redis {
	tb.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		tb.Fatalf("faulttest: redis-server is not installed (%v); install it with `apt-get install -y redis-server`", err)
	}
	r := &Redis{Port: FreePort(tb), Dir: tb.TempDir(), opts: opts}
	tb.Cleanup(func() { r.kill() })
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
	if r.cmd != nil {
		tb.Fatalf("faulttest: redis on %d already running", r.Port)
	}
	appendOnly := "no"
	if r.opts.AppendOnly {
		appendOnly = "yes"
	}
	cmd := exec.Command("redis-server",
		"--port", strconv.Itoa(r.Port), "--bind", "127.0.0.1", "--protected-mode", "yes",
		"--save", "", "--appendonly", appendOnly, "--appendfsync", "everysec",
		"--dir", r.Dir, "--logfile", "")
	bindToTest(cmd, nil)
	// redis-server logs to stdout; the test does not need it.
	if err := cmd.Start(); err != nil {
		tb.Fatalf("faulttest: start redis-server: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	r.cmd, r.done = cmd, done
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(r.Port), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	err := waitFor(20*time.Second, func() error {
		select {
		case <-done:
			return fmt.Errorf("redis-server exited")
		default:
		}
		// Loading the append-only file answers LOADING until done.
		return c.Ping(context.Background()).Err()
	})
	if err != nil {
		tb.Fatalf("faulttest: redis on %d did not come up: %v", r.Port, err)
	}
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
	if r.cmd == nil {
		return
	}
	if r.paused { // a stopped process handles SIGTERM only once continued
		r.cmd.Process.Signal(syscall.SIGCONT)
		r.paused = false
	}
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(20 * time.Second):
		r.cmd.Process.Kill()
		<-r.done
		tb.Errorf("faulttest: redis on %d ignored SIGTERM for 20 s; killed", r.Port)
	}
	r.cmd = nil
}

// Pause freezes the server (SIGSTOP): it keeps its connections and
// accepts new ones in the kernel's backlog, but answers nothing, as a
// hung Redis or a network dropping packets would.
func (r *Redis) Pause(tb testing.TB) {
	tb.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil || r.paused {
		tb.Fatalf("faulttest: redis on %d is not running", r.Port)
	}
	if err := r.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		tb.Fatalf("faulttest: pause redis on %d: %v", r.Port, err)
	}
	r.paused = true
}

// Resume lets a paused server go on (SIGCONT) and waits until it answers
// PING.
func (r *Redis) Resume(tb testing.TB) {
	tb.Helper()
	r.mu.Lock()
	if r.cmd == nil || !r.paused {
		r.mu.Unlock()
		tb.Fatalf("faulttest: redis on %d is not paused", r.Port)
	}
	err := r.cmd.Process.Signal(syscall.SIGCONT)
	r.paused = false
	r.mu.Unlock()
	if err != nil {
		tb.Fatalf("faulttest: resume redis on %d: %v", r.Port, err)
	}
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(r.Port), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	if err := waitFor(20*time.Second, func() error { return c.Ping(context.Background()).Err() }); err != nil {
		tb.Fatalf("faulttest: redis on %d did not answer after SIGCONT: %v", r.Port, err)
	}
}

func (r *Redis) kill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return
	}
	r.cmd.Process.Kill() // SIGKILL ends a paused process too
	<-r.done
	r.cmd, r.paused = nil, false
}
