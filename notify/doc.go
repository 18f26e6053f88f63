// Package notify delivers notifications. It knows delivery, not money: the
// ledger decides what to tell whom and writes it to the transactional
// outbox in the transaction of the change; the workers hand each relayed
// message to this package.
//
// In-app notifications (a ledger.Notification) go to an Inbox, which
// stores each for its recipient (a partner, or the advertiser's workspace)
// exactly once per outbox id, however often the task is delivered.
//
// Brand webhooks (a ledger.WebhookMessage: one message to one endpoint) go
// to a Sender, which signs them per the Standard Webhooks convention
// (webhook-id, webhook-timestamp, webhook-signature: see Sign), POSTs them
// through a client whose dialer refuses loopback, private and link-local
// addresses (Guard) and follows no redirect, keeps one circuit breaker per
// destination so that a dead endpoint fails fast instead of holding
// workers, and appends every attempt to the endpoint's delivery log. A
// retry keeps the message's webhook-id and signs a fresh timestamp.
package notify
