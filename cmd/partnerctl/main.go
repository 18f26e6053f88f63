// Command partnerctl is the operator's tool.
//
// Deployment: `partnerctl migrate` creates the database when missing and
// applies the migrations; `partnerctl dev` does the same and then runs the
// edge, a worker serving every queue and the scheduler in one process, for
// a laptop; `partnerctl secrets` makes and rotates SECRETS_KEY; `partnerctl
// analytics verify` and `rebuild` check and recompute the analytics rollups.
//
// Operating: workspace, user, program, partner, link, agent-key, customer,
// commission and withdrawal call the running edge's operator API
// (/api/operator/v1) over HTTP with the client generated from the OpenAPI
// document, never the database, for example
//
//	export OPERATOR_TOKEN=…   # the token the edge runs with
//	partnerctl workspace create --name Acme --owner-email owner@acme.example
//	partnerctl program create --workspace 1 --name Acme --domain acme.example \
//	    --commission-type percent --commission-rate 20
//	partnerctl commission approve 42 --json
//
// The edge is --url, else PARTNERTRACK_URL, else PUBLIC_BASE_URL, else
// http://localhost:8080. The token is read only from OPERATOR_TOKEN: a
// token on the command line would leak into shell history and ps. Answers
// print as a short table; --json prints the answer's data as the edge sent
// it. Only the flags given are sent, so the edge names what is missing.
//
// Exit codes:
//
//	0  success
//	1  a local failure (migrate, dev, secrets), or differences found by
//	   analytics verify
//	2  a user error: bad usage, OPERATOR_TOKEN unset, or a request the edge
//	   refused (4xx)
//	3  a server error: 5xx, the edge could not be reached, or it answered
//	   something that is not the operator API
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCommand(os.Getenv, nil).ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "partnerctl:", err)
		os.Exit(exitCode(err))
	}
}

// newRootCommand builds partnerctl reading the environment through getenv;
// the operator commands call the edge with hc (nil: a client with a 30 s
// timeout).
func newRootCommand(getenv func(string) string, hc *http.Client) *cobra.Command {
	root := &cobra.Command{
		Use:           "partnerctl",
		Short:         "Operate a partnertrack deployment",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newMigrateCommand(getenv), newDevCommand(getenv), newSecretsCommand(getenv),
		newAnalyticsCommand(getenv))
	o := &operator{getenv: getenv, http: hc}
	root.AddCommand(o.newWorkspaceCommand(), o.newUserCommand(), o.newProgramCommand(), o.newPartnerCommand(),
		o.newLinkCommand(), o.newAgentKeyCommand(), o.newCustomerCommand(), o.newCommissionCommand(),
		o.newWithdrawalCommand())
	return root
}
