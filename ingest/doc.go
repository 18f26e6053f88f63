// Package ingest is the HTTP edge of the service: a fiber app with the
// routes of the interface spec and the contract, their middleware (request
// id, recovery, access log, CORS for browser routes, rate limits,
// authentication) and thin handlers that parse, call the ledger and render.
//
// Every error reaches one fiber ErrorHandler (errors.go), which holds the
// only table from error codes to HTTP statuses and renders the platform or
// the typed envelope as the route requires. Handlers never format an error
// body themselves.
//
// ingest knows HTTP and envelopes, not SQL: it calls the ledger's service
// interfaces, which cmd wires to their Postgres implementations.
package ingest
