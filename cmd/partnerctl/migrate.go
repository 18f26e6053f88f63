package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/partnertrack/partnertrack/cmd/internal/config"
	"github.com/partnertrack/partnertrack/cmd/internal/service"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/migrations"
)

func newMigrateCommand(getenv func(string) string) *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Create the database when missing and apply every pending migration",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(getenv)
			if err != nil {
				return err
			}
			return migrate(cmd, cfg, service.NewLogger(cfg))
		},
	}
}

// migrate creates the database named by DATABASE_URL when missing and
// applies the migrations under goose's Postgres session lock.
func migrate(cmd *cobra.Command, cfg config.Config, logger *slog.Logger) error {
	ctx := cmd.Context()
	created, err := postgres.EnsureDatabase(ctx, cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("cannot reach Postgres at %s (%v); set DATABASE_URL", config.Redacted(cfg.DatabaseURL), err)
	}
	if created {
		logger.Info("database created", "url", config.Redacted(cfg.DatabaseURL))
	}
	db, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.PoolConfig{MaxConns: 2})
	if err != nil {
		return fmt.Errorf("cannot reach Postgres at %s (%v); set DATABASE_URL", config.Redacted(cfg.DatabaseURL), err)
	}
	defer db.Close()
	if err := migrations.Up(ctx, db.DB.DB, logger); err != nil {
		return err
	}
	current, _, err := migrations.Versions(ctx, db.DB.DB)
	if err != nil {
		return err
	}
	// SQL cannot seal: secrets stored in clear before migration 00012 are
	// sealed here, so that no deploy leaves any.
	if cfg.Secrets == nil || cfg.Secrets.IsDev() {
		logger.Warn(config.DevSecretsWarning)
	}
	db.Secrets = cfg.Secrets
	n, err := db.ResealSecrets(ctx, false)
	if err != nil {
		return fmt.Errorf("%v; SECRETS_KEY must hold every key secrets were sealed with", err)
	}
	if n != (postgres.SealCounts{}) {
		logger.Info("secrets stored in clear sealed", "webhook_secrets", n.WebhookSecrets, "stripe_secrets", n.StripeSecrets,
			"key", cfg.Secrets.PrimaryID())
	}
	fmt.Fprintf(os.Stdout, "database at schema version %d\n", current)
	return nil
}
