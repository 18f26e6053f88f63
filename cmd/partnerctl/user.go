package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// newUserCommand: dashboard sessions, suspension and identity bindings of
// users.
func (o *operator) newUserCommand() *cobra.Command {
	return o.noun("user", "Sign users in, suspend them, unlink their sign-in identity",
		idCommand(o, "session USER_ID", "Print a dashboard sign-in token for the user (like signing in)", "user",
			func(w io.Writer, s apiclient.OpSession) {
				row(w, "token", s.Token)
				row(w, "expires", s.ExpiresAt)
			}, (*apiclient.Client).CreateUserSession),
		idCommand(o, "suspend USER_ID", "Suspend the user: sign-in and CLI login answer 403 ACCOUNT_BLOCKED", "user",
			func(w io.Writer, u apiclient.OpSuspendedUser) {
				row(w, "user", u.Id)
				row(w, "email", u.Email)
				row(w, "suspended", u.SuspendedAt)
			}, (*apiclient.Client).SuspendUser),
		idCommand(o, "unlink-identity USER_ID", "Remove the user's sign-in identity binding; the next sign-in binds anew", "user",
			func(w io.Writer, u apiclient.OpUnlinkedUser) {
				row(w, "user", u.Id)
				row(w, "email", u.Email)
				row(w, "unlinked", bool(u.Unlinked))
			}, (*apiclient.Client).UnlinkUserIdentity),
	)
}
