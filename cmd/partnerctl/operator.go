package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// The operator commands (workspace, user, program, partner, link,
// agent-key, customer, commission, withdrawal) call the edge's operator
// API over HTTP with the client generated from the OpenAPI document; they
// never open the database. This file holds what they share: the
// connection, request bodies built from the flags that were set, output
// and the exit code of a failure.

// Exit codes of partnerctl.
const (
	exitFailure = 1 // a local failure (migrate, dev, secrets)
	exitUser    = 2 // bad usage, OPERATOR_TOKEN unset, or a request the edge refused (4xx)
	exitServer  = 3 // the edge failed (5xx), could not be reached, or answered something not the API
)

// defaultURL is the edge the operator commands call without --url,
// PARTNERTRACK_URL or PUBLIC_BASE_URL.
const defaultURL = "http://localhost:8080"

// exitError ends a command with an exit code and a one-line message.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func usageError(format string, args ...any) error {
	return &exitError{code: exitUser, msg: fmt.Sprintf(format, args...)}
}

// exitCode is the exit code of a command's failure.
func exitCode(err error) int {
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		return ee.code
	case isUsage(err):
		return exitUser
	}
	return exitFailure
}

// cobraUsage matches cobra's errors about commands, flags and arguments.
var cobraUsage = regexp.MustCompile(`^(unknown command "|unknown (shorthand )?flag: |flag needs an argument: |` +
	`invalid argument "|accepts \d+ arg|accepts at most |requires at least |required flag\(s\) |if any flags in the group )`)

// isUsage tells cobra's errors about commands, flags and arguments.
func isUsage(err error) bool { return cobraUsage.MatchString(err.Error()) }

// operator is the state of one operator command line: its surroundings
// and the connection flags.
type operator struct {
	getenv func(string) string
	http   *http.Client // nil: a client with a 30 s timeout
	url    string       // --url
	json   bool         // --json
}

// noun makes a command group whose subcommands call the edge; every one
// takes --url and --json.
func (o *operator) noun(use, short string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short,
		// Without a subcommand: the help; with an unknown one, a usage
		// error (cobra would print the help and succeed).
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError("unknown command %q for %q", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		},
	}
	cmd.PersistentFlags().StringVar(&o.url, "url", "",
		"base URL of the edge (default $PARTNERTRACK_URL, else $PUBLIC_BASE_URL, else "+defaultURL+")")
	cmd.PersistentFlags().BoolVar(&o.json, "json", false, "print the answer's data as JSON")
	cmd.AddCommand(subs...)
	return cmd
}

// baseURL is where the edge is: --url, else PARTNERTRACK_URL, else
// PUBLIC_BASE_URL, else the laptop default.
func (o *operator) baseURL() string {
	for _, u := range []string{o.url, o.getenv("PARTNERTRACK_URL"), o.getenv("PUBLIC_BASE_URL")} {
		if u != "" {
			return u
		}
	}
	return defaultURL
}

// client is the generated API client, sending OPERATOR_TOKEN on every
// call. The token comes only from the environment: on a command line it
// would leak into shell history and the process list.
func (o *operator) client() (*apiclient.Client, error) {
	token := o.getenv("OPERATOR_TOKEN")
	if token == "" {
		return nil, usageError("OPERATOR_TOKEN is not set: export the operator token the edge runs with " +
			"(its OPERATOR_TOKEN) before running operator commands")
	}
	hc := o.http
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	return apiclient.NewClient(o.baseURL(), apiclient.WithHTTPClient(hc),
		apiclient.WithRequestEditorFn(apiclient.Bearer(token)), apiclient.UserAgent("partnerctl"))
}

// call runs one operation of the operator API and prints its answer:
// --json prints the answer's data exactly as the edge sent it, otherwise
// table prints it for people, decoded as T.
func call[T any](o *operator, cmd *cobra.Command, table func(io.Writer, T),
	send func(context.Context, *apiclient.Client) (*http.Response, error)) error {
	c, err := o.client()
	if err != nil {
		return err
	}
	resp, err := send(cmd.Context(), c)
	if err != nil {
		return &exitError{code: exitServer, msg: fmt.Sprintf("cannot reach the edge at %s (%v); set --url or PARTNERTRACK_URL",
			o.baseURL(), unwrapURLError(err))}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return &exitError{code: exitServer, msg: fmt.Sprintf("reading the answer of %s: %v", o.baseURL(), err)}
	}
	var refused *apiclient.ResponseError
	if err := apiclient.CheckResponse(resp, body); errors.As(err, &refused) {
		return answerError(refused)
	}
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	var data T
	if err := json.Unmarshal(body, &env); err != nil || len(env.Data) == 0 || json.Unmarshal(env.Data, &data) != nil {
		return &exitError{code: exitServer, msg: fmt.Sprintf("the answer of %s (HTTP %d) is not the operator API's; check --url",
			o.baseURL(), resp.StatusCode)}
	}
	w := cmd.OutOrStdout()
	if o.json {
		var out bytes.Buffer
		json.Indent(&out, env.Data, "", "  ")
		out.WriteByte('\n')
		_, err := w.Write(out.Bytes())
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	table(tw, data)
	return tw.Flush()
}

// unwrapURLError drops the method and URL that *url.Error repeats.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// answerError is a refused or failed answer as one line: the edge's
// message, its code, the status and the request id.
func answerError(e *apiclient.ResponseError) error {
	parts := []string{}
	if e.Code != "" {
		parts = append(parts, e.Code)
	}
	parts = append(parts, fmt.Sprintf("HTTP %d", e.Status))
	if e.RequestID != "" {
		parts = append(parts, "request id "+e.RequestID)
	}
	code := exitUser
	if e.Status >= 500 {
		code = exitServer
	}
	return &exitError{code: code, msg: fmt.Sprintf("%s (%s)", e.Message, strings.Join(parts, ", "))}
}

// id reads a positional id argument.
func id(args []string, i int, what string) (int64, error) {
	n, err := strconv.ParseInt(args[i], 10, 64)
	if err != nil || n <= 0 {
		return 0, usageError("the %s id must be a positive integer, not %q", what, args[i])
	}
	return n, nil
}

// idCommand is a command whose only input is the id of what it acts on.
func idCommand[T any](o *operator, use, short, what string, table func(io.Writer, T),
	op func(*apiclient.Client, context.Context, int64, ...apiclient.RequestEditorFn) (*http.Response, error)) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := id(args, 0, what)
			if err != nil {
				return err
			}
			return call(o, cmd, table, func(ctx context.Context, c *apiclient.Client) (*http.Response, error) {
				return op(c, ctx, n)
			})
		},
	}
}

// form is a request body made of flags: only the flags the user set are
// sent, so the edge names what is missing in its own words.
type form struct {
	flags  *pflag.FlagSet
	fields []formField
}

type formField struct {
	flag, key string
	kind      fieldKind
	text      *string
	on        *bool
}

type fieldKind int

const (
	textField    fieldKind = iota // a JSON string
	numberField                   // a JSON number, sent exactly as typed (never through float)
	listField                     // comma-separated values, a JSON array of strings
	boolField                     // a JSON boolean
	negatedField                  // a JSON boolean, the flag's opposite (--inactive sends active: false)
)

func newForm(cmd *cobra.Command) *form { return &form{flags: cmd.Flags()} }

func (f *form) add(kind fieldKind, flag, key, usage string) {
	ff := formField{flag: flag, key: key, kind: kind}
	if kind == boolField || kind == negatedField {
		ff.on = f.flags.Bool(flag, false, usage)
	} else {
		ff.text = f.flags.String(flag, "", usage)
	}
	f.fields = append(f.fields, ff)
}

func (f *form) text(flag, key, usage string)    { f.add(textField, flag, key, usage) }
func (f *form) number(flag, key, usage string)  { f.add(numberField, flag, key, usage) }
func (f *form) list(flag, key, usage string)    { f.add(listField, flag, key, usage) }
func (f *form) boolean(flag, key, usage string) { f.add(boolField, flag, key, usage) }
func (f *form) negated(flag, key, usage string) { f.add(negatedField, flag, key, usage) }

// body is the JSON object of the set flags.
func (f *form) body() (io.Reader, error) {
	obj := map[string]any{}
	for _, ff := range f.fields {
		if !f.flags.Changed(ff.flag) {
			continue
		}
		switch ff.kind {
		case textField:
			obj[ff.key] = *ff.text
		case numberField:
			if !isNumber(*ff.text) {
				return nil, usageError("--%s must be a number, not %q", ff.flag, *ff.text)
			}
			obj[ff.key] = json.Number(*ff.text)
		case listField:
			list := []string{}
			for _, s := range strings.Split(*ff.text, ",") {
				if s = strings.TrimSpace(s); s != "" {
					list = append(list, s)
				}
			}
			obj[ff.key] = list
		case boolField:
			obj[ff.key] = *ff.on
		case negatedField:
			obj[ff.key] = !*ff.on
		}
	}
	b, err := json.Marshal(obj)
	return bytes.NewReader(b), err
}

// isNumber tells a JSON number literal (12, 12.5, -1, 1e3).
func isNumber(s string) bool {
	return s != "" && (s[0] == '-' || s[0] >= '0' && s[0] <= '9') && json.Valid([]byte(s))
}

// jsonType is the content type of every request body.
const jsonType = "application/json"

// row writes one tab-separated line.
func row(w io.Writer, cells ...any) {
	s := make([]string, len(cells))
	for i, c := range cells {
		s[i] = text(c)
	}
	fmt.Fprintln(w, strings.Join(s, "\t"))
}

// text renders a value of an answer for people; absent values are "-".
func text(v any) string {
	switch v := v.(type) {
	case nil:
		return "-"
	case string:
		if v == "" {
			return "-"
		}
		return v
	case *string:
		if v == nil {
			return "-"
		}
		return text(*v)
	case *int64:
		if v == nil {
			return "-"
		}
		return strconv.FormatInt(*v, 10)
	case time.Time:
		return v.UTC().Format(time.RFC3339)
	case *time.Time:
		if v == nil {
			return "-"
		}
		return text(*v)
	case bool:
		if v {
			return "yes"
		}
		return "no"
	}
	return fmt.Sprint(v)
}

// sendForm is the RunE of a command that sends the flags set in f as the
// body of one operation; the command's first argument is the id of the
// noun it acts on ("" when it takes none).
func sendForm[T any](o *operator, f *form, noun string, table func(io.Writer, T),
	send func(ctx context.Context, c *apiclient.Client, id int64, body io.Reader) (*http.Response, error)) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		var objID int64
		if noun != "" {
			var err error
			if objID, err = id(args, 0, noun); err != nil {
				return err
			}
		}
		body, err := f.body()
		if err != nil {
			return err
		}
		return call(o, cmd, table, func(ctx context.Context, c *apiclient.Client) (*http.Response, error) {
			return send(ctx, c, objID, body)
		})
	}
}
