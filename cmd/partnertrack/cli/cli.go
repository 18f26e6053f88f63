// Package cli is the partnertrack command-line tool for brands: login
// (browser sign-in, the token kept in the user's config directory), init,
// programs, status, readiness and test-event (one flagged test event, or
// the synthetic click → lead → sale chain). Run executes one command line
// and returns its exit code, so tests drive the real commands in process.
//
// Exit codes:
//
//	0  success
//	1  a local failure (the credentials file cannot be read or written)
//	2  a user error: bad usage, missing credentials, or a request the
//	   server refused (4xx, including 429)
//	3  a server error: 5xx, the server could not be reached, or answered
//	   something that is not the API
//	4  test-event --chain ran but not every step reached the test partner
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/partnertrack/partnertrack/cmd/partnertrack/api"
)

// Exit codes.
const (
	ExitOK            = 0
	ExitFailure       = 1
	ExitUser          = 2
	ExitServer        = 3
	ExitNotAttributed = 4
)

// DefaultAPIURL is the edge a command talks to without --api-url or
// PARTNERTRACK_API_URL.
const DefaultAPIURL = "http://localhost:8080"

// Environment variables the CLI reads.
const (
	EnvAPIURL    = "PARTNERTRACK_API_URL"
	EnvAPIKey    = "PARTNERTRACK_API_KEY"
	EnvToken     = "PARTNERTRACK_TOKEN"      // a login token, instead of the stored one
	EnvConfigDir = "PARTNERTRACK_CONFIG_DIR" // instead of the user's config directory
)

// Env is what a run of the CLI uses from its surroundings.
type Env struct {
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// ConfigDir is the user's configuration directory (os.UserConfigDir);
	// the credentials live in its partnertrack folder.
	ConfigDir func() (string, error)
	// OpenBrowser opens the login link; nil only prints it.
	OpenBrowser func(url string) error
	// PollInterval is the wait between login polls (2 s).
	PollInterval time.Duration
	// HTTP is the client of the edge (default: 30 s timeout).
	HTTP *http.Client
	Now  func() time.Time
}

func (e *Env) defaults() {
	if e.Stdout == nil {
		e.Stdout = io.Discard
	}
	if e.Stderr == nil {
		e.Stderr = io.Discard
	}
	if e.Getenv == nil {
		e.Getenv = func(string) string { return "" }
	}
	if e.ConfigDir == nil {
		e.ConfigDir = os.UserConfigDir
	}
	if e.PollInterval == 0 {
		e.PollInterval = 2 * time.Second
	}
	if e.Now == nil {
		e.Now = time.Now
	}
}

// exitError ends a command with a code and a message.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func userError(format string, args ...any) error {
	return &exitError{code: ExitUser, msg: fmt.Sprintf(format, args...)}
}

// app holds a run's flags and surroundings.
type app struct {
	env    Env
	apiURL string
	apiKey string
	json   bool
}

func (a *app) client() *api.Client {
	c := api.New(a.apiURL)
	if a.env.HTTP != nil {
		c.HTTP = a.env.HTTP
	}
	return c
}

// printJSON writes v to stdout as indented JSON.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.env.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Run executes one command line and returns its exit code.
func Run(ctx context.Context, args []string, env Env) int {
	env.defaults()
	a := &app{env: env}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	return a.report(err)
}

// report prints a failure and returns its exit code.
func (a *app) report(err error) int {
	code, msg := ExitFailure, err.Error()
	var ee *exitError
	switch apiErr, isAPI := api.AsError(err); {
	case isAPI:
		code = ExitUser
		if apiErr.ServerSide() {
			code = ExitServer
		}
		msg = apiMessage(apiErr)
		if a.json {
			a.printJSON(map[string]any{"error": map[string]any{
				"status": apiErr.Status, "code": apiErr.Code, "message": apiErr.Message,
				"request_id": apiErr.RequestID, "retry_after_seconds": apiErr.RetryAfter,
			}})
		}
	case errors.As(err, &ee):
		code = ee.code
		if a.json && code != ExitNotAttributed {
			a.printJSON(map[string]any{"error": map[string]any{"message": ee.msg}})
		}
	case isUsage(err):
		code = ExitUser
	}
	if msg != "" {
		fmt.Fprintln(a.env.Stderr, "partnertrack: "+msg)
	}
	return code
}

// isUsage tells cobra's errors about flags and arguments.
func isUsage(err error) bool {
	s := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "flag needs", "invalid argument", "accepts ", "requires "} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// apiMessage says what went wrong in a sentence.
func apiMessage(e *api.Error) string {
	msg := e.Message
	switch {
	case e.Status == 0:
		return e.Error()
	case e.Status == http.StatusTooManyRequests && e.RetryAfter > 0:
		msg += fmt.Sprintf(" (retry in %d s)", e.RetryAfter)
	case e.Status >= 500 && e.RequestID != "" && !strings.Contains(msg, e.RequestID):
		msg += " (request id: " + e.RequestID + ")"
	}
	return fmt.Sprintf("%s (HTTP %d)", msg, e.Status)
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "partnertrack",
		Short:         "Set up and check a partnertrack affiliate program from the terminal",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("api-url") {
				if v := strings.TrimSpace(a.env.Getenv(EnvAPIURL)); v != "" {
					a.apiURL = v
				}
			}
			a.apiURL = strings.TrimRight(a.apiURL, "/")
			if !cmd.Flags().Changed("api-key") {
				a.apiKey = strings.TrimSpace(a.env.Getenv(EnvAPIKey))
			}
			return nil
		},
	}
	root.PersistentFlags().StringVar(&a.apiURL, "api-url", DefaultAPIURL, "the partnertrack API (env "+EnvAPIURL+")")
	root.PersistentFlags().StringVar(&a.apiKey, "api-key", "", "the program's API key for status, readiness and test-event (env "+EnvAPIKey+")")
	root.PersistentFlags().BoolVar(&a.json, "json", false, "print JSON for scripts instead of tables")
	root.AddCommand(a.loginCommand(), a.logoutCommand(), a.initCommand(), a.programsCommand(),
		a.statusCommand(), a.readinessCommand(), a.testEventCommand())
	return root
}

// requireKey returns the program key of a key command.
func (a *app) requireKey() (string, error) {
	if a.apiKey == "" {
		return "", userError("no API key: pass --api-key or set %s (the workspace owner generates the key)", EnvAPIKey)
	}
	return a.apiKey, nil
}
