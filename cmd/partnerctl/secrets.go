package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/partnertrack/partnertrack/cmd/internal/config"
	"github.com/partnertrack/partnertrack/cmd/internal/service"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/secretbox"
	"github.com/partnertrack/partnertrack/migrations"
)

// newSecretsCommand groups the commands of SECRETS_KEY, the key that seals
// the signing secrets stored in Postgres (docs/operations.md, "Rotating
// SECRETS_KEY").
func newSecretsCommand(getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secrets",
		Short: "Make and rotate SECRETS_KEY, the key that seals the stored signing secrets",
	}
	cmd.AddCommand(newKeyCommand(), newRotateCommand(getenv))
	return cmd
}

func newKeyCommand() *cobra.Command {
	var id string
	cmd := &cobra.Command{
		Use:   "new-key",
		Short: "Print a fresh key (id:base64) to put first in SECRETS_KEY",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if id == "" {
				id = "k" + time.Now().UTC().Format("20060102150405")
			}
			k, err := secretbox.NewKey(id)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), k)
			return nil
		},
	}
	cmd.Flags().StringVar(&id, "id", "", "the key's id (default k and the current UTC time)")
	return cmd
}

func newRotateCommand(getenv func(string) string) *cobra.Command {
	return &cobra.Command{
		Use:   "rotate",
		Short: "Re-seal every stored secret with the first key of SECRETS_KEY",
		Long: "Re-seal every stored signing secret with the first key of SECRETS_KEY: " +
			"values sealed with the other keys listed (or the development key), and any left in clear. " +
			"Afterwards the other keys can be removed from SECRETS_KEY.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(getenv)
			if err != nil {
				return err
			}
			if cfg.Secrets.IsDev() {
				return errors.New("SECRETS_KEY is not set: rotating to the public development key would protect nothing; " +
					"set SECRETS_KEY to a new key (`partnerctl secrets new-key`) followed by the old ones")
			}
			ctx := cmd.Context()
			db, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.PoolConfig{MaxConns: 2})
			if err != nil {
				return fmt.Errorf("cannot reach Postgres at %s (%v); set DATABASE_URL", config.Redacted(cfg.DatabaseURL), err)
			}
			defer db.Close()
			if err := migrations.CheckCurrent(ctx, db.DB.DB); err != nil {
				return err
			}
			db.Secrets = cfg.Secrets
			n, err := db.ResealSecrets(ctx, true)
			if err != nil {
				return fmt.Errorf("%v; SECRETS_KEY must hold every key secrets were sealed with", err)
			}
			service.NewLogger(cfg).Info("secrets re-sealed", "key", cfg.Secrets.PrimaryID(),
				"webhook_secrets", n.WebhookSecrets, "stripe_secrets", n.StripeSecrets, "payout_methods", n.PayoutMethods)
			fmt.Fprintf(cmd.OutOrStdout(), "re-sealed %d webhook secrets and %d Stripe secrets with key %s\n",
				n.WebhookSecrets, n.StripeSecrets, cfg.Secrets.PrimaryID())
			return nil
		},
	}
}
