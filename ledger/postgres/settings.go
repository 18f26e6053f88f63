package postgres

import (
	"context"

	"github.com/jmoiron/sqlx"

	"github.com/partnertrack/partnertrack/ledger"
)

var _ ledger.SettingsService = (*ProgramService)(nil)

// UpdateSettings applies a dashboard settings update.
func (s *ProgramService) UpdateSettings(ctx context.Context, id int64, in ledger.SettingsInput) (p *ledger.Program, err error) {
	defer wrap(&err, "postgres.UpdateSettings(%d)", id)
	now := s.db.now()
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		if err := updateProgram(ctx, tx, id, in.Program, now); err != nil {
			return err
		}
		slug, approval, err := in.PublicSettings(id)
		if err != nil {
			return err
		}
		if slug != nil || approval != nil {
			if _, err := tx.ExecContext(ctx, `
				UPDATE programs SET slug = COALESCE($2, slug), partner_approval = COALESCE($3, partner_approval)
				WHERE id = $1`, id, slug, approval); err != nil {
				return formatError(err)
			}
		}
		tz, err := in.TimezoneSetting()
		if err != nil {
			return err
		}
		if tz != nil {
			// Postgres must know the zone too: its tzdata may differ
			// from Go's.
			var known bool
			if err := tx.GetContext(ctx, &known, `SELECT EXISTS (SELECT 1 FROM pg_timezone_names WHERE name = $1)`, *tz); err != nil {
				return err
			}
			if !known {
				return ledger.NewError(ledger.EInvalid, ledger.MsgTimezone)
			}
			var old string
			if err := tx.GetContext(ctx, &old, `SELECT timezone FROM programs WHERE id = $1 FOR NO KEY UPDATE`, id); err != nil {
				return formatError(err)
			}
			if old != *tz {
				if _, err := tx.ExecContext(ctx, `UPDATE programs SET timezone = $2 WHERE id = $1`, id, *tz); err != nil {
					return formatError(err)
				}
				if err := rebuildRollups(ctx, tx, id, s.db.now()); err != nil {
					return err
				}
			}
		}
		if err := updatePortalSettings(ctx, tx, id, in); err != nil {
			return err
		}
		set, secret, err := in.StripeSecret()
		if err != nil || !set {
			return err
		}
		if secret != "" {
			if secret, err = s.db.seal(purposeStripeSecret, secret); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx,
			`UPDATE programs SET stripe_webhook_secret = NULLIF($2, '') WHERE id = $1`, id, secret)
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.Program(ctx, id)
}
