package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/partnertrack/partnertrack/cmd/internal/config"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/migrations"
)

// newAnalyticsCommand groups the checks of the analytics rollups
// (docs/analytics.md, "Rollups"). Like migrate, they talk to Postgres
// (DATABASE_URL) directly: they are the operator's tools for an upgrade,
// a restored backup or a suspected fault, not an API.
func newAnalyticsCommand(getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "analytics",
		Short: "Verify or rebuild the analytics rollups against the raw events (DATABASE_URL)",
	}
	cmd.AddCommand(newVerifyCommand(getenv), newRebuildCommand(getenv))
	return cmd
}

// openRollups opens the database of DATABASE_URL, which must be migrated.
func openRollups(cmd *cobra.Command, getenv func(string) string) (*postgres.RollupService, func(), error) {
	cfg, err := config.Load(getenv)
	if err != nil {
		return nil, nil, err
	}
	ctx := cmd.Context()
	db, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.PoolConfig{MaxConns: 2})
	if err != nil {
		return nil, nil, fmt.Errorf("cannot reach Postgres at %s (%v); set DATABASE_URL", config.Redacted(cfg.DatabaseURL), err)
	}
	if err := migrations.CheckCurrent(ctx, db.DB.DB); err != nil {
		db.Close()
		return nil, nil, err
	}
	return postgres.NewRollupService(db), func() { db.Close() }, nil
}

// parseDay reads a --from/--to day (empty: unbounded).
func parseDay(flag, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.DateOnly, v)
	if err != nil {
		return time.Time{}, usageError("--%s must be a day as YYYY-MM-DD", flag)
	}
	return t, nil
}

func newVerifyCommand(getenv func(string) string) *cobra.Command {
	var program int64
	var from, to string
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Recompute a program's rollups from the raw events and print every difference",
		Long: "Recompute every counter of the program's rollups (days in the program's timezone, --from and --to " +
			"inclusive) from the raw clicks, leads, sales, commissions and refunds, and print each stored counter " +
			"that differs. Exits 0 and prints \"0 differences\" when none, 1 when any.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if program <= 0 {
				return usageError("--program must be a program id")
			}
			fromDay, err := parseDay("from", from)
			if err != nil {
				return err
			}
			toDay, err := parseDay("to", to)
			if err != nil {
				return err
			}
			if !fromDay.IsZero() && !toDay.IsZero() && toDay.Before(fromDay) {
				return usageError("--to must not be before --from")
			}
			rollups, done, err := openRollups(cmd, getenv)
			if err != nil {
				return err
			}
			defer done()
			diffs, err := rollups.VerifyRollups(cmd.Context(), program, fromDay, toDay)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			for _, d := range diffs {
				fmt.Fprintln(out, d)
			}
			fmt.Fprintf(out, "%d differences\n", len(diffs))
			if len(diffs) > 0 {
				return &exitError{code: exitFailure, msg: fmt.Sprintf("program %d: %d rollup counters differ from the raw events; "+
					"`partnerctl analytics rebuild --program %d` recomputes them", program, len(diffs), program)}
			}
			return nil
		},
	}
	cmd.Flags().Int64Var(&program, "program", 0, "the program to verify (required)")
	cmd.Flags().StringVar(&from, "from", "", "first day to verify, YYYY-MM-DD (default: the first)")
	cmd.Flags().StringVar(&to, "to", "", "last day to verify, YYYY-MM-DD (default: the last)")
	return cmd
}

func newRebuildCommand(getenv func(string) string) *cobra.Command {
	var program int64
	cmd := &cobra.Command{
		Use:   "rebuild",
		Short: "Recompute the rollups of a program (or of every program) from the raw events",
		Long: "Delete and recompute the rollups of --program (default: every program, one transaction each). " +
			"The program's click batches, sales and refunds wait while its rollups are rebuilt; the time is " +
			"proportional to the program's events.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if program < 0 {
				return usageError("--program must be a program id")
			}
			rollups, done, err := openRollups(cmd, getenv)
			if err != nil {
				return err
			}
			defer done()
			rebuilt, err := rollups.RebuildRollups(cmd.Context(), program)
			for _, id := range rebuilt {
				fmt.Fprintf(cmd.OutOrStdout(), "program %d rebuilt\n", id)
			}
			return err
		},
	}
	cmd.Flags().Int64Var(&program, "program", 0, "the program to rebuild (default: every program)")
	return cmd
}
