package cli

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/partnertrack/partnertrack/cmd/partnertrack/api"
)

// maxPollFailures is how many polls in a row may fail on the server's side
// before login gives up.
const maxPollFailures = 3

func (a *app) loginCommand() *cobra.Command {
	var force, noBrowser bool
	cmd := &cobra.Command{
		Use:   "login",
		Short: "Sign in through the browser and keep the login token in your config directory",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.login(cmd.Context(), force, noBrowser)
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "sign in again even when already logged in")
	cmd.Flags().BoolVar(&noBrowser, "no-browser", false, "only print the link, do not open a browser")
	return cmd
}

func (a *app) login(ctx context.Context, force, noBrowser bool) error {
	if !force {
		c, err := a.readCredentials()
		if err != nil {
			return err
		}
		if c != nil && c.APIURL == a.apiURL && c.Token != "" && a.env.Now().Before(c.ExpiresAt) {
			if a.json {
				return a.printJSON(map[string]any{"logged_in": true, "already": true, "email": c.Email, "advertiser_id": c.AdvertiserID})
			}
			fmt.Fprintf(a.env.Stdout, "Already logged in to %s as %s. Run partnertrack login --force to sign in again.\n", a.apiURL, c.Email)
			return nil
		}
	}
	client := a.client()
	// The verifier stays in this process: only a poll that presents it
	// gets the token, so the login link alone is of no use to anyone.
	verifier := newCodeVerifier()
	start, err := client.StartLogin(ctx, codeChallengeS256(verifier))
	if err != nil {
		return err
	}
	fmt.Fprintf(a.env.Stderr, "Open this link to sign in (it works until %s):\n\n  %s\n\n",
		start.ExpiresAt.Local().Format("15:04:05"), start.AuthUrl)
	if start.UserCode != "" {
		fmt.Fprintf(a.env.Stderr, "Your code: %s\nConfirm on the sign-in page that it shows this code. "+
			"If the page shows another code, do not sign in.\n\n", start.UserCode)
	}
	if a.env.OpenBrowser != nil && !noBrowser {
		if err := a.env.OpenBrowser(start.AuthUrl); err != nil {
			fmt.Fprintln(a.env.Stderr, "(Could not open a browser: open the link yourself.)")
		}
	}
	spin := startSpinner(a.env.Stderr, "Waiting for you to sign in in the browser…", !a.json)
	poll, err := a.pollLogin(ctx, client, start, verifier)
	spin.stop()
	if err != nil {
		return err
	}
	creds := &Credentials{
		APIURL: a.apiURL, Token: deref(poll.Token), Email: deref(poll.Email), UserID: deref(poll.UserId),
		AdvertiserID: poll.AdvertiserId, ExpiresAt: deref(poll.ExpiresAt).UTC(), CreatedAt: a.env.Now().UTC(),
	}
	path, err := a.writeCredentials(creds)
	if err != nil {
		return err
	}
	if a.json {
		return a.printJSON(map[string]any{"logged_in": true, "email": creds.Email, "advertiser_id": poll.AdvertiserId,
			"expires_at": creds.ExpiresAt, "credentials": path})
	}
	fmt.Fprintf(a.env.Stdout, "Logged in as %s.\n", creds.Email)
	if poll.AdvertiserId != nil {
		fmt.Fprintf(a.env.Stdout, "Advertiser (workspace): %d\n", *poll.AdvertiserId)
	} else {
		fmt.Fprintln(a.env.Stdout, "You own or administer no workspace yet: ask the operator to create one for your email before partnertrack init.")
	}
	fmt.Fprintf(a.env.Stdout, "Login saved to %s (valid until %s).\n", path, creds.ExpiresAt.Format("2006-01-02"))
	return nil
}

// pollLogin polls until the person signs in, the link expires, or ctx
// ends. A server-side failure is retried a few times in a row.
func (a *app) pollLogin(ctx context.Context, client *api.Client, start *api.AuthStart, verifier string) (*api.AuthPoll, error) {
	interval := a.env.PollInterval
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(interval):
		}
		p, err := client.PollLogin(ctx, start.State, verifier)
		if e, ok := api.AsError(err); ok && e.ServerSide() && failures+1 < maxPollFailures {
			failures++
			continue
		} else if err != nil {
			return nil, err
		}
		failures = 0
		switch p.Status {
		case "complete":
			if deref(p.Token) == "" {
				return nil, &api.Error{Message: "the server completed the login without a token"}
			}
			return p, nil
		case "expired":
			return nil, userError("the login link expired before you signed in: run partnertrack login again")
		case "pending":
		default:
			return nil, &api.Error{Message: "unexpected login status " + string(p.Status)}
		}
		if !start.ExpiresAt.IsZero() && a.env.Now().After(start.ExpiresAt.Add(interval)) {
			return nil, userError("the login link expired before you signed in: run partnertrack login again")
		}
	}
}

func (a *app) logoutCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "logout",
		Short: "Forget the stored login",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, err := a.credentialsPath()
			if err != nil {
				return err
			}
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return &exitError{code: ExitFailure, msg: "cannot remove " + path + ": " + err.Error()}
			}
			if a.json {
				return a.printJSON(map[string]any{"logged_in": false})
			}
			fmt.Fprintln(a.env.Stdout, "Logged out.")
			return nil
		},
	}
}

// newCodeVerifier returns a fresh PKCE code verifier (RFC 7636: 43
// base64url characters of 32 random bytes).
func newCodeVerifier() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("partnertrack: crypto/rand failed: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// codeChallengeS256 is the S256 challenge of a verifier.
func codeChallengeS256(verifier string) string {
	h := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// deref is *p, or the zero value when the answer left the field out.
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}
