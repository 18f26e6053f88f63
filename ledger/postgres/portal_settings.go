package postgres

import (
	"context"

	"github.com/jmoiron/sqlx"

	"github.com/partnertrack/partnertrack/ledger"
)

// updatePortalSettings writes the partner portal's settings of an update
// (partner_links, minimum_payout), minimum_payout checked against the
// program's currency as the update leaves it.
func updatePortalSettings(ctx context.Context, tx *sqlx.Tx, id int64, in ledger.SettingsInput) error {
	if !in.PartnerLinks.Present && !in.MinimumPayout.Present {
		return nil
	}
	var currency string
	if err := tx.GetContext(ctx, &currency, `SELECT currency FROM programs WHERE id = $1 FOR NO KEY UPDATE`, id); err != nil {
		return formatError(err)
	}
	links, minimum, err := in.PortalSettings(ledger.Currency(currency))
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `
		UPDATE programs SET partner_links = COALESCE($2, partner_links), minimum_payout = COALESCE($3::numeric, minimum_payout)
		WHERE id = $1`, id, links, minimum)
	return formatError(err)
}
