// Package pagetest tests the dashboard's pages (ingest/web) over an edge
// wired as the binaries wire it (cmd/internal/service), with a real
// Postgres, Redis and the in-process OIDC issuer. It holds only tests; it
// lives under cmd because the wiring it needs is internal there.
package pagetest
