package main

import (
	"context"
	"io"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// newProgramCommand: programs, their key rotation marks and processor
// accounts.
func (o *operator) newProgramCommand() *cobra.Command {
	return o.noun("program", "Create programs, mark key rotations, connect processor accounts",
		o.programCreate(), o.programRotateKey(), o.programConnectProcessor())
}

func (o *operator) programCreate() *cobra.Command {
	cmd := &cobra.Command{
		Use: "create --workspace ID --name NAME --domain DOMAIN --commission-type percent|fixed --commission-rate N",
		Short: "Create a program in a workspace (its keys are made by the owner: " +
			"POST /api/v1/programs/:id/api-key)",
		Args: cobra.NoArgs,
	}
	f := newForm(cmd)
	f.number("workspace", "workspace_id", "the workspace's id")
	f.text("name", "name", "the program's name")
	f.text("domain", "domain", "the brand's domain")
	f.text("commission-type", "commission_type", "percent or fixed")
	f.number("commission-rate", "commission_rate", "percent of a sale, or the fixed amount in major units (sent exactly)")
	f.number("duration-months", "duration_months", "months a referral earns commissions (0: forever)")
	f.number("cookie-duration", "cookie_duration", "days a click attributes (default 90)")
	f.text("lead-auth", "lead_auth", "server_required (default) or browser_allowed")
	f.number("hold-days", "hold_days", "days before a commission is approved (default 30)")
	f.text("currency", "currency", "the program's currency (default USD)")
	cmd.RunE = sendForm(o, f, "", programTable, func(ctx context.Context, c *apiclient.Client, _ int64, body io.Reader) (*http.Response, error) {
		return c.CreateProgramWithBody(ctx, jsonType, body)
	})
	return cmd
}

func programTable(w io.Writer, p apiclient.OpProgram) {
	row(w, "program", p.Id)
	row(w, "workspace", p.WorkspaceId)
	row(w, "name", p.Name)
	row(w, "domain", p.Domain)
	row(w, "status", string(p.Status))
	row(w, "commission", string(p.CommissionType)+" "+p.CommissionRate.String())
	row(w, "currency", string(p.Currency))
	row(w, "duration months", p.DurationMonths)
	row(w, "cookie days", p.CookieDuration)
	row(w, "hold days", p.HoldDays)
	row(w, "lead auth", string(p.LeadAuth))
	row(w, "api key", p.ApiTokenMasked)
}

func (o *operator) programRotateKey() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rotate-key PROGRAM_ID --deadline RFC3339",
		Short: "Mark the program's key for rotation by a deadline (the owner regenerates it)",
		Args:  cobra.ExactArgs(1),
	}
	f := newForm(cmd)
	f.text("deadline", "deadline", "when the key must be rotated, RFC 3339 (2026-12-31T00:00:00Z)")
	cmd.RunE = sendForm(o, f, "program", func(w io.Writer, r apiclient.OpKeyRotation) {
		row(w, "program", r.ProgramId)
		row(w, "marked", r.MarkedAt)
		row(w, "deadline", r.Deadline)
	}, func(ctx context.Context, c *apiclient.Client, id int64, body io.Reader) (*http.Response, error) {
		return c.MarkKeyRotationWithBody(ctx, id, jsonType, body)
	})
	return cmd
}

func (o *operator) programConnectProcessor() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "connect-processor PROGRAM_ID --account acct_…",
		Short: "Connect the program to its Stripe Connect account (events of that account are the program's)",
		Args:  cobra.ExactArgs(1),
	}
	f := newForm(cmd)
	f.text("account", "account_id", "the connected account's id (acct_…)")
	cmd.RunE = sendForm(o, f, "program", func(w io.Writer, a apiclient.OpProcessorAccount) {
		row(w, "program", a.ProgramId)
		row(w, "account", a.AccountId)
	}, func(ctx context.Context, c *apiclient.Client, id int64, body io.Reader) (*http.Response, error) {
		return c.ConnectProcessorAccountWithBody(ctx, id, jsonType, body)
	})
	return cmd
}
