// Package faulttest runs the service's real binaries, and Redis and
// Postgres servers of a test's own, so that reliability tests can stop,
// kill and restart any of them. It is test support: no production code
// imports it. It wraps cmd/internal/proc (which the bench shares) with
// the test's failure and cleanup.
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
//     and signals or kills it.
package faulttest

import (
	"testing"

	"github.com/partnertrack/partnertrack/cmd/internal/proc"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(tb testing.TB) int {
	tb.Helper()
	port, err := proc.FreePort()
	if err != nil {
		tb.Fatalf("faulttest: free port: %v", err)
	}
	return port
}
