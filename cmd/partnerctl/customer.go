package main

import (
	"context"
	"io"
	"net/http"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// newCustomerCommand: a program's customers (the people leads and sales
// are about).
func (o *operator) newCustomerCommand() *cobra.Command {
	var program, key, click string
	cmd := &cobra.Command{
		Use:   "find --program ID (--customer-key KEY | --click-id ID)",
		Short: "Find a program's customer by customer key or click id",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// program_id is a required integer of the generated query
			// parameters, so it cannot be left for the edge to name.
			pid, err := strconv.ParseInt(program, 10, 64)
			if err != nil || pid <= 0 {
				return usageError("--program must be a program id (a positive integer), not %q", program)
			}
			params := &apiclient.FindCustomerParams{ProgramId: pid}
			if cmd.Flags().Changed("customer-key") {
				params.CustomerKey = &key
			}
			if cmd.Flags().Changed("click-id") {
				params.ClickId = &click
			}
			return call(o, cmd, func(w io.Writer, c apiclient.OpCustomer) {
				row(w, "customer", c.Id)
				row(w, "program", c.ProgramId)
				row(w, "customer key", c.CustomerKey)
				row(w, "click id", c.ClickId)
				row(w, "email", c.Email)
				row(w, "status", string(c.Status))
				row(w, "partner", c.PartnerId)
				row(w, "provisional", c.Provisional)
				row(w, "test", c.IsTest)
			}, func(ctx context.Context, c *apiclient.Client) (*http.Response, error) {
				return c.FindCustomer(ctx, params)
			})
		},
	}
	cmd.Flags().StringVar(&program, "program", "", "the program's id")
	cmd.Flags().StringVar(&key, "customer-key", "", "the brand's key of the customer")
	cmd.Flags().StringVar(&click, "click-id", "", "the click the customer came from")
	cmd.MarkFlagRequired("program")
	cmd.MarkFlagsMutuallyExclusive("customer-key", "click-id")
	return o.noun("customer", "Find customers", cmd)
}
