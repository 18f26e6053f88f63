package main

import (
	"context"
	"io"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// newPartnerCommand: partners, their balances and in-app notifications.
func (o *operator) newPartnerCommand() *cobra.Command {
	return o.noun("partner", "Enroll partners; read their balances and notifications",
		o.partnerEnroll(),
		idCommand(o, "balances PARTNER_ID", "Print the partner's balances, one per currency (major units)", "partner",
			func(w io.Writer, list []apiclient.OpBalance) {
				row(w, "CURRENCY", "AMOUNT")
				for _, b := range list {
					row(w, string(b.Currency), b.Amount.String())
				}
			}, (*apiclient.Client).GetPartnerBalances),
		idCommand(o, "notifications PARTNER_ID", "Print the partner's in-app notifications, newest first", "partner",
			func(w io.Writer, list []apiclient.OpNotification) {
				row(w, "ID", "CREATED", "KIND", "TITLE", "READ")
				for _, n := range list {
					row(w, n.Id, n.CreatedAt, n.Kind, n.Title, n.ReadAt)
				}
			}, (*apiclient.Client).ListPartnerNotifications),
	)
}

func (o *operator) partnerEnroll() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "enroll PROGRAM_ID --email EMAIL --name NAME",
		Short: "Enroll a partner in a program",
		Args:  cobra.ExactArgs(1),
	}
	f := newForm(cmd)
	f.text("email", "email", "the partner's email")
	f.text("name", "name", "the partner's name")
	cmd.RunE = sendForm(o, f, "program", func(w io.Writer, p apiclient.OpPartner) {
		row(w, "partner", p.Id)
		row(w, "program", p.ProgramId)
		row(w, "name", p.Name)
		row(w, "email", p.Email)
	}, func(ctx context.Context, c *apiclient.Client, id int64, body io.Reader) (*http.Response, error) {
		return c.EnrollPartnerWithBody(ctx, id, jsonType, body)
	})
	return cmd
}
