package postgres

import (
	"context"

	"github.com/partnertrack/partnertrack/ledger"
)

// Housekeeper implements ledger.Housekeeper.
type Housekeeper struct{ db *DB }

// NewHousekeeper returns the housekeeper over db.
func NewHousekeeper(db *DB) *Housekeeper { return &Housekeeper{db: db} }

var _ ledger.Housekeeper = (*Housekeeper)(nil)

// EnsurePartitions creates missing monthly partitions of clicks and visits.
func (h *Housekeeper) EnsurePartitions(ctx context.Context, months int) (err error) {
	defer wrap(&err, "postgres.EnsurePartitions(%d)", months)
	now := h.db.now()
	for _, parent := range []string{"clicks", "visits"} {
		if _, err := h.db.ExecContext(ctx,
			`SELECT ensure_monthly_partitions($1, $2, $3)`, parent, now, months+1); err != nil {
			return err
		}
	}
	return nil
}
