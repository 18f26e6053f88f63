package postgres

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/partnertrack/partnertrack/ledger/secretbox"
)

// Columns holding sealed secrets, named as secretbox purposes: a value
// sealed for one does not open as the other.
const (
	purposeWebhookSecret = "webhook_endpoints.secret"
	purposeStripeSecret  = "programs.stripe_webhook_secret"
)

// devKeyring is shared by every DB opened without a keyring.
var devKeyring = secretbox.Dev()

func (db *DB) keyring() *secretbox.Keyring {
	if db.Secrets != nil {
		return db.Secrets
	}
	return devKeyring
}

// seal encrypts a secret for its column.
func (db *DB) seal(purpose, plain string) (string, error) {
	return db.keyring().Seal(purpose, plain)
}

// open decrypts a stored secret (plaintext from before sealing comes back
// as it is).
func (db *DB) open(purpose, stored string) (string, error) {
	return db.keyring().Open(purpose, stored)
}

// SealCounts says how many stored secrets ResealSecrets sealed again.
type SealCounts struct {
	WebhookSecrets int // webhook_endpoints.secret
	StripeSecrets  int // programs.stripe_webhook_secret
	PayoutMethods  int // payout_methods.sealed
}

// resealBatch bounds the rows one transaction of ResealSecrets locks.
const resealBatch = 500

// ResealSecrets seals stored secrets with the keyring's first key: with
// all, every value not sealed with it (rotation: values under older keys,
// and plaintext); without, only plaintext left from before sealing (what
// `partnerctl migrate` does after migration 00012). A value whose key is
// not in the keyring stops it with an error naming the row.
func (db *DB) ResealSecrets(ctx context.Context, all bool) (n SealCounts, err error) {
	defer wrap(&err, "postgres.ResealSecrets")
	skip := secretbox.Prefix // values starting with it are left alone
	if all {
		skip = fmt.Sprintf("%sv1:%s:", secretbox.Prefix, db.keyring().PrimaryID())
	}
	if n.WebhookSecrets, err = db.reseal(ctx, purposeWebhookSecret, `
		SELECT id, secret FROM webhook_endpoints WHERE NOT starts_with(secret, $1)
		ORDER BY id LIMIT $2 FOR UPDATE`,
		`UPDATE webhook_endpoints SET secret = $2 WHERE id = $1`, skip); err != nil {
		return n, err
	}
	if n.StripeSecrets, err = db.reseal(ctx, purposeStripeSecret, `
		SELECT id, stripe_webhook_secret FROM programs
		WHERE stripe_webhook_secret IS NOT NULL AND NOT starts_with(stripe_webhook_secret, $1)
		ORDER BY id LIMIT $2 FOR UPDATE`,
		`UPDATE programs SET stripe_webhook_secret = $2 WHERE id = $1`, skip); err != nil {
		return n, err
	}
	// Payout methods are always sealed (a CHECK), so only a rotation
	// finds any to do.
	n.PayoutMethods, err = db.reseal(ctx, purposePayoutMethod, `
		SELECT partner_id, sealed FROM payout_methods WHERE NOT starts_with(sealed, $1)
		ORDER BY partner_id LIMIT $2 FOR UPDATE`,
		`UPDATE payout_methods SET sealed = $2 WHERE partner_id = $1`, skip)
	return n, err
}

// reseal re-seals one column in transactions of resealBatch rows until
// no row is left to do.
func (db *DB) reseal(ctx context.Context, purpose, selectSQL, updateSQL, skip string) (total int, err error) {
	for {
		done := 0
		err := db.Transact(ctx, func(tx *sqlx.Tx) error {
			done = 0
			rows, err := tx.QueryContext(ctx, selectSQL, skip, resealBatch)
			if err != nil {
				return err
			}
			type row struct {
				id     int64
				stored string
			}
			var todo []row
			for rows.Next() {
				var r row
				if err := rows.Scan(&r.id, &r.stored); err != nil {
					rows.Close()
					return err
				}
				todo = append(todo, r)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			for _, r := range todo {
				plain, err := db.open(purpose, r.stored)
				if err != nil {
					return fmt.Errorf("%s of row %d: %w", purpose, r.id, err)
				}
				sealed, err := db.seal(purpose, plain)
				if err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, updateSQL, r.id, sealed); err != nil {
					return err
				}
			}
			done = len(todo)
			return nil
		})
		if err != nil {
			return total, err
		}
		total += done
		if done < resealBatch {
			return total, nil
		}
	}
}
