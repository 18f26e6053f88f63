package main

import (
	"context"
	"io"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// newWorkspaceCommand: workspaces (advertisers) and their members.
func (o *operator) newWorkspaceCommand() *cobra.Command {
	return o.noun("workspace", "Create workspaces (advertisers) and add their members",
		o.workspaceCreate(), o.workspaceAddMember())
}

func (o *operator) workspaceCreate() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create --name NAME --owner-email EMAIL",
		Short: "Create a workspace and its owner (the user is created when new)",
		Args:  cobra.NoArgs,
	}
	f := newForm(cmd)
	f.text("name", "name", "the workspace's name")
	f.text("owner-email", "owner_email", "the owner's email")
	cmd.RunE = sendForm(o, f, "", func(w io.Writer, ws apiclient.OpWorkspace) {
		row(w, "workspace", ws.Id)
		row(w, "name", ws.Name)
		row(w, "owner user", ws.OwnerUserId)
	}, func(ctx context.Context, c *apiclient.Client, _ int64, body io.Reader) (*http.Response, error) {
		return c.CreateWorkspaceWithBody(ctx, jsonType, body)
	})
	return cmd
}

func (o *operator) workspaceAddMember() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "add-member WORKSPACE_ID --email EMAIL --role owner|admin|member",
		Short: "Add a user (created when new) to a workspace with a role",
		Args:  cobra.ExactArgs(1),
	}
	f := newForm(cmd)
	f.text("email", "email", "the member's email")
	f.text("role", "role", "owner, admin or member")
	cmd.RunE = sendForm(o, f, "workspace", func(w io.Writer, m apiclient.OpMember) {
		row(w, "workspace", m.WorkspaceId)
		row(w, "user", m.UserId)
		row(w, "role", string(m.Role))
	}, func(ctx context.Context, c *apiclient.Client, id int64, body io.Reader) (*http.Response, error) {
		return c.AddWorkspaceMemberWithBody(ctx, id, jsonType, body)
	})
	return cmd
}
