package main

import (
	"context"
	"io"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// newLinkCommand: partners' referral links.
func (o *operator) newLinkCommand() *cobra.Command {
	return o.noun("link", "Create referral links; turn them on and off", o.linkCreate(), o.linkSet())
}

func linkTable(w io.Writer, l apiclient.OpLink) {
	row(w, "link", l.Id)
	row(w, "program", l.ProgramId)
	row(w, "partner", l.PartnerId)
	row(w, "code", l.Code)
	row(w, "active", l.Active)
}

func (o *operator) linkCreate() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create PROGRAM_ID --partner PARTNER_ID --code CODE [--inactive]",
		Short: "Create a partner's referral link (?aff=CODE) in a program",
		Args:  cobra.ExactArgs(1),
	}
	f := newForm(cmd)
	f.number("partner", "partner_id", "the partner's id")
	f.text("code", "code", "the link's code, unique in the program")
	f.negated("inactive", "active", "create the link turned off")
	cmd.RunE = sendForm(o, f, "program", linkTable, func(ctx context.Context, c *apiclient.Client, id int64, body io.Reader) (*http.Response, error) {
		return c.CreateLinkWithBody(ctx, id, jsonType, body)
	})
	return cmd
}

func (o *operator) linkSet() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set LINK_ID --active=true|false",
		Short: "Turn a link on or off (every edge instance stops or starts attributing it at once)",
		Args:  cobra.ExactArgs(1),
	}
	f := newForm(cmd)
	f.boolean("active", "active", "whether the link attributes clicks")
	cmd.RunE = sendForm(o, f, "link", linkTable, func(ctx context.Context, c *apiclient.Client, id int64, body io.Reader) (*http.Response, error) {
		return c.UpdateLinkWithBody(ctx, id, jsonType, body)
	})
	return cmd
}
