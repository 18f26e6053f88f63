package tasks

import "github.com/partnertrack/partnertrack/ledger"

// TypeWebhookDeliver is one brand webhook message to one endpoint, relayed
// from the outbox to the webhooks queue; its payload is an OutboxPayload
// whose data is a ledger.WebhookMessage.
const TypeWebhookDeliver = ledger.OutboxTaskWebhook

// WebhookMaxRetry is how many times a webhook delivery is retried after its
// first attempt (with notify.DefaultBackoff: over about 27 hours) before
// it is archived. Retries deferred by an open breaker do not count.
const WebhookMaxRetry = 8

// maxRetryByType overrides the enqueuer's MaxRetry for task types with a
// retry policy of their own.
var maxRetryByType = map[string]int{TypeWebhookDeliver: WebhookMaxRetry, TypeEmailSend: EmailMaxRetry}
