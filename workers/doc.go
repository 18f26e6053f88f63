// Package workers holds the asynq task handlers of the service and the
// server and scheduler that run them. Handlers are structs holding their
// dependencies; they call the ledger and notify packages, never the edge.
//
// A worker process serves the queues it is given (see tasks.Namespace.Queues),
// so click ingestion, processor events, notifications and brand webhooks
// scale as separate processes of one binary. Exactly one process runs the
// scheduler, which feeds the maintenance queue.
package workers
