package ledger

import "context"

// Housekeeper keeps the storage ready for what comes: the monthly click and
// visit partitions exist before the month starts.
type Housekeeper interface {
	// EnsurePartitions creates the monthly partitions of clicks and visits
	// from the current month through `months` months ahead (idempotent).
	EnsurePartitions(ctx context.Context, months int) error
}
