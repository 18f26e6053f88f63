// Command partnerctl is the operator's tool: `partnerctl migrate` creates
// the database when missing and applies the migrations; `partnerctl dev`
// does the same and then runs the edge, a worker serving every queue and
// the scheduler in one process, for a laptop; `partnerctl secrets` makes
// and rotates SECRETS_KEY.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCommand(os.Getenv).ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "partnerctl:", err)
		os.Exit(1)
	}
}

func newRootCommand(getenv func(string) string) *cobra.Command {
	root := &cobra.Command{
		Use:           "partnerctl",
		Short:         "Operate a partnertrack deployment",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newMigrateCommand(getenv), newDevCommand(getenv), newSecretsCommand(getenv))
	return root
}
