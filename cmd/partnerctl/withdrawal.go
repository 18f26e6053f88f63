package main

import (
	"context"
	"io"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// newWithdrawalCommand: partners' withdrawals of their balances.
func (o *operator) newWithdrawalCommand() *cobra.Command {
	return o.noun("withdrawal", "Create withdrawals, read them, mark them paid",
		o.withdrawalCreate(),
		idCommand(o, "get WITHDRAWAL_ID", "Print a withdrawal", "withdrawal",
			withdrawalTable, (*apiclient.Client).GetWithdrawal),
		idCommand(o, "mark-paid WITHDRAWAL_ID", "Mark a withdrawal paid; the commissions it covers become paid out", "withdrawal",
			withdrawalTable, (*apiclient.Client).MarkWithdrawalPaid),
	)
}

func withdrawalTable(w io.Writer, wd apiclient.OpWithdrawal) {
	row(w, "withdrawal", wd.Id)
	row(w, "partner", wd.PartnerId)
	row(w, "status", string(wd.Status))
	row(w, "amount", wd.Amount.String()+" "+string(wd.Currency))
	row(w, "requested", wd.RequestedAmount.String()+" "+string(wd.Currency))
	row(w, "created", wd.CreatedAt)
	row(w, "paid", wd.PaidAt)
}

func (o *operator) withdrawalCreate() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create PARTNER_ID --currency USD --amount 12.50",
		Short: "Open a withdrawal of a partner's balance in one currency (major units)",
		Args:  cobra.ExactArgs(1),
	}
	f := newForm(cmd)
	f.text("currency", "currency", "the balance's currency")
	f.number("amount", "amount", "the amount in major units, sent exactly (12.50)")
	cmd.RunE = sendForm(o, f, "partner", withdrawalTable, func(ctx context.Context, c *apiclient.Client, id int64, body io.Reader) (*http.Response, error) {
		return c.CreateWithdrawalWithBody(ctx, id, jsonType, body)
	})
	return cmd
}
