// Package drive generates load against the edge over HTTP and measures
// it: the fasthttp client, the provisioning of programs through the
// operator API, the request functions (clicks, leads, sales, refunds,
// Stripe events, the listing), the runner that sends them at a fixed rate
// or as fast as its connections go, the latency histogram, and one line
// per run. RunKind is `loadgen run`; the bench drives its phases with the
// same pieces.
package drive
