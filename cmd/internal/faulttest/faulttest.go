// Package faulttest runs the service's real binaries, and Redis and
// Postgres servers of a test's own, so that reliability tests can stop,
// kill and restart any of them. It is test support: no production code
// imports it.
//
// Everything it starts binds 127.0.0.1 only and is stopped by the test's
// cleanup (and, on Linux, killed with the test process if that dies
// first). The shared servers of the other tests (Postgres on 5432, Redis
// on 6379) are never touched: a test that needs to stop one gets its own.
//
//   - [StartRedis] runs redis-server on a free port, with or without an
//     append-only file; Kill, Stop and Start simulate a crash, an outage
//     and the return.
//   - [StartPostgres] creates a throwaway cluster with initdb (as the
//     postgres user when the test runs as root: initdb refuses root) and
//     runs postgres in the foreground; Stop and Start simulate a restart.
//   - [Build] compiles the edge and worker binaries once per test binary;
//     [StartProcess] runs one with an environment, captures its JSON logs
//     (stderr) and signals or kills it.
package faulttest

import (
	"fmt"
	"net"
	"testing"
	"time"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("faulttest: free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitFor polls check every 50 ms until it returns nil or timeout passes,
// and returns its last error.
func waitFor(timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %w", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
