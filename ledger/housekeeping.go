package ledger

import (
	"context"
	"time"
)

// Housekeeper keeps the storage ready for what comes and lets go of what
// is done: the monthly click and visit partitions exist before the month
// starts, and delivered history older than its retention is deleted.
type Housekeeper interface {
	// EnsurePartitions creates the monthly partitions of clicks and visits
	// from the current month through `months` months ahead (idempotent).
	EnsurePartitions(ctx context.Context, months int) error
	// Prune deletes the history the retention lets go, in batches, and
	// reports how many rows it deleted.
	Prune(ctx context.Context, r Retention) (Pruned, error)
	// TallySessions counts up to max of the sessions the click batches
	// left pending into the rollups' unique visitors, exactly once each,
	// and reports how many it took (fewer than max: none is left).
	TallySessions(ctx context.Context, max int) (int64, error)
}

// Retention is how long delivered history is kept.
type Retention struct {
	// SentOutbox: outbox messages, counted from their creation, once
	// sent. A message never sent is kept whatever its age (the sweep's
	// business, and visible in the outbox lag metric).
	SentOutbox time.Duration
	// WebhookAttempts: the endpoints' delivery logs, each attempt counted
	// from when it was made.
	WebhookAttempts time.Duration
	// RollupSessions: the sessions the analytics rollups remember per day
	// so that a session counts one visitor (rollup_sessions), counted from
	// the end of their day. Only a click of that day arriving later needs
	// them, so the retention outlasts the latest a click can be written.
	RollupSessions time.Duration
}

// DefaultRetention keeps sent outbox messages a week (long past the 72
// hours a webhook may wait behind an open breaker, so a redelivered task
// still finds its message), delivery logs 30 days (what a brand looks
// back on from the dashboard) and the rollups' sessions 35 days (past the
// about 22 days asynq's 25 retries of a click batch can take).
var DefaultRetention = Retention{SentOutbox: 7 * 24 * time.Hour, WebhookAttempts: 30 * 24 * time.Hour,
	RollupSessions: 35 * 24 * time.Hour}

// ClickHoursKept is how long the programs' clicks per UTC hour
// (rollup_clicks_hourly) are kept, counted from the hour's start: the
// 24-hour counts read the last 24 hours, and the rollup verification
// checks the hours no further back. Prune always deletes older ones.
const ClickHoursKept = 48 * time.Hour

// Pruned counts the rows one Prune deleted.
type Pruned struct {
	Outbox, WebhookAttempts, RollupSessions, ClickHours int64
}
