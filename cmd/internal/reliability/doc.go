// Package reliability holds the service's reliability and security suite:
// tests that run the real edge and worker binaries (built once per test
// run, started as child processes with their JSON logs captured) against
// real Postgres and Redis, inject faults, races and hostile input, and
// prove, by counting what was accepted and what was stored, that nothing
// is lost or recorded twice and that no caller reaches another program's
// data.
//
// The package has no code of its own; everything is in its tests, and the
// helpers that start servers and binaries are in cmd/internal/faulttest.
//
//	go test ./cmd/internal/reliability                      # the short versions (make test)
//	go test -tags soak -run . -v ./cmd/internal/reliability # the long versions (make soak)
//
// Every scenario reports what it accepted and what it stored; the test
// binary prints one line per scenario and a last line "N passed, M
// failed". docs/reliability.md lists the scenarios, their commands and
// their last results.
package reliability
