package main

import (
	"context"
	"io"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// newAgentKeyCommand: agent keys, the credentials of the agent API.
func (o *operator) newAgentKeyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create --workspace ID --scopes programs:read,programs:write",
		Short: "Create an agt_ key confined to a workspace (printed once)",
		Args:  cobra.NoArgs,
	}
	f := newForm(cmd)
	f.number("workspace", "workspace_id", "the workspace's id")
	f.list("scopes", "scopes", "comma-separated scopes: programs:read, programs:write")
	cmd.RunE = sendForm(o, f, "", func(w io.Writer, k apiclient.OpAgentKey) {
		scopes := make([]string, len(k.Scopes))
		for i, s := range k.Scopes {
			scopes[i] = string(s)
		}
		row(w, "agent key", k.Id)
		row(w, "workspace", k.WorkspaceId)
		row(w, "scopes", strings.Join(scopes, ","))
		row(w, "key", k.Key+"  (shown once: keep it now)")
	}, func(ctx context.Context, c *apiclient.Client, _ int64, body io.Reader) (*http.Response, error) {
		return c.CreateAgentKeyWithBody(ctx, jsonType, body)
	})
	return o.noun("agent-key", "Create keys of the agent API", cmd)
}
