package postgres

import (
	"context"

	"github.com/jmoiron/sqlx"
	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ledger"
)

// updatePortalSettings writes the partner portal's settings of an update
// (partner_links, minimum_payout), minimum_payout checked against the
// program's currency as the update leaves it. An update that changes the
// currency alone must leave a minimum_payout the new currency can hold
// (50.50 is no amount of VND): it is refused naming minimum_payout, so
// the brand sends one with the currency.
func updatePortalSettings(ctx context.Context, tx *sqlx.Tx, id int64, in ledger.SettingsInput) error {
	if !in.PartnerLinks.Present && !in.MinimumPayout.Present && !in.Program.Currency.Present {
		return nil
	}
	var currency string
	var stored decimal.Decimal
	if err := tx.QueryRowxContext(ctx, `SELECT currency, minimum_payout FROM programs WHERE id = $1 FOR NO KEY UPDATE`, id).
		Scan(&currency, &stored); err != nil {
		return formatError(err)
	}
	cur := ledger.Currency(currency)
	links, minimum, err := in.PortalSettings(cur)
	if err != nil {
		return err
	}
	if minimum == nil {
		if _, err := ledger.ParseMinimumPayout(ledger.Some(stored), cur); err != nil {
			return err
		}
	}
	if links == nil && minimum == nil {
		return nil
	}
	_, err = tx.ExecContext(ctx, `
		UPDATE programs SET partner_links = COALESCE($2, partner_links), minimum_payout = COALESCE($3::numeric, minimum_payout)
		WHERE id = $1`, id, links, minimum)
	return formatError(err)
}
