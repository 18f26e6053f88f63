// Package api is the partnertrack CLI's client of the edge's
// /api/v1/cli/* endpoints and readiness: one method per endpoint over the
// client generated from the API document (ingest/apiclient), so a wrong
// document breaks the CLI's own tests first. Answers are the document's
// types; every failure is an *Error that says whether the caller or the
// server is at fault.
package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// UserAgent identifies the CLI to the edge.
const UserAgent = "partnertrack-cli/1"

// Client calls one edge.
type Client struct {
	BaseURL string       // e.g. http://localhost:8080
	HTTP    *http.Client // default: a client with a 30 s timeout
}

// New returns a client of the edge at baseURL.
func New(baseURL string) *Client {
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), HTTP: &http.Client{Timeout: 30 * time.Second}}
}

// Error is a failed call: an answer of the edge with an error status, or
// no usable answer at all (Status 0: the edge could not be reached, or
// answered something that is not the API).
type Error struct {
	Status     int    // HTTP status; 0 when there was no usable answer
	Code       string // error.code when the edge sent one (typed envelope, sale codes)
	Message    string
	Details    map[string]any
	RequestID  string // X-Request-ID, else error.details.request_id
	RetryAfter int    // seconds, on 429
	Err        error  // the transport failure when Status is 0
}

func (e *Error) Error() string {
	switch {
	case e.Status == 0 && e.Err != nil:
		return e.Message + ": " + e.Err.Error()
	case e.Status == 0:
		return e.Message
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// ServerSide reports whether the failure is the server's (a 5xx, or no
// usable answer) rather than the caller's (a 4xx).
func (e *Error) ServerSide() bool { return e.Status == 0 || e.Status >= 500 }

// AsError returns err as an *Error when it is one.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// gen is the generated client of the edge, over c's HTTP client.
func (c *Client) gen() *apiclient.ClientWithResponses {
	g, err := apiclient.NewClientWithResponses(c.BaseURL, apiclient.WithHTTPClient(c.HTTP), apiclient.UserAgent(UserAgent))
	if err != nil {
		panic("api: the generated client refused options that cannot fail: " + err.Error())
	}
	return g
}

// failed is a generated call that returned no answer: the request could
// not be sent, or the answer did not decode as the API document says.
func (c *Client) failed(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return &Error{Message: "cannot reach " + c.BaseURL, Err: err}
	}
	return &Error{Message: fmt.Sprintf("unexpected answer from %s", c.BaseURL), Err: err}
}

// check reads an answer's status: a 2xx must carry the data the document
// promises (ok); anything else is an *Error read from whichever envelope
// it came in.
func (c *Client) check(resp *http.Response, body []byte, ok bool) error {
	if err := apiclient.CheckResponse(resp, body); err != nil {
		var re *apiclient.ResponseError
		errors.As(err, &re)
		return &Error{Status: re.Status, Code: re.Code, Message: re.Message, Details: re.Details,
			RequestID: re.RequestID, RetryAfter: re.RetryAfter}
	}
	if !ok {
		return &Error{Message: fmt.Sprintf("unexpected answer from %s (HTTP %d, not the API)", c.BaseURL, resp.StatusCode)}
	}
	return nil
}

// The CLI's types are the API document's (ingest/apidoc/openapi.yaml).
type (
	AuthStart      = apiclient.CliAuthStart
	AuthPoll       = apiclient.CliAuthPoll
	Program        = apiclient.CliProgram
	ProgramSummary = apiclient.CliProgramSummary
	Status         = apiclient.CliStatus
	TestEvent      = apiclient.CliTestEvent
	Chain          = apiclient.CliChain
)

// StartLogin starts a browser login. codeChallenge is the S256 challenge
// of a verifier the caller keeps for PollLogin ("" to send none).
func (c *Client) StartLogin(ctx context.Context, codeChallenge string) (*AuthStart, error) {
	var body apiclient.CliAuthStartJSONRequestBody
	if codeChallenge != "" {
		method := apiclient.CliAuthStartRequestCodeChallengeMethod("S256")
		body = apiclient.CliAuthStartJSONRequestBody{CodeChallenge: &codeChallenge, CodeChallengeMethod: &method}
	}
	r, err := c.gen().CliAuthStartWithResponse(ctx, body)
	if err != nil {
		return nil, c.failed(err)
	}
	if err := c.check(r.HTTPResponse, r.Body, r.JSON200 != nil); err != nil {
		return nil, err
	}
	return &r.JSON200.Data, nil
}

// PollLogin polls a login; verifier is the one whose challenge started it
// ("" when none was sent).
func (c *Client) PollLogin(ctx context.Context, state, verifier string) (*AuthPoll, error) {
	params := &apiclient.CliAuthPollParams{State: state}
	if verifier != "" {
		params.CodeVerifier = &verifier
	}
	r, err := c.gen().CliAuthPollWithResponse(ctx, params)
	if err != nil {
		return nil, c.failed(err)
	}
	if err := c.check(r.HTTPResponse, r.Body, r.JSON200 != nil); err != nil {
		return nil, err
	}
	return &r.JSON200.Data, nil
}

// InitRequest is the body of POST /api/v1/cli/init. Only the fields the
// person gave are sent (nil ones are left out), so that the server, not
// the CLI, names what is missing; the document's request type cannot
// leave out a required field, so this one stands in for it.
// CommissionRate is sent as written (an exact JSON number).
type InitRequest struct {
	Name           *string      `json:"name,omitempty"`
	Domain         *string      `json:"domain,omitempty"`
	CommissionType *string      `json:"commission_type,omitempty"`
	CommissionRate *json.Number `json:"commission_rate,omitempty"`
	DurationMonths *int64       `json:"duration_months,omitempty"`
	CookieDuration *int64       `json:"cookie_duration,omitempty"`
	Currency       *string      `json:"currency,omitempty"`
	AdvertiserID   *int64       `json:"advertiser_id,omitempty"`
}

// Init creates a program with the login token.
func (c *Client) Init(ctx context.Context, token string, req InitRequest) (*Program, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	r, err := c.gen().CliInitWithBodyWithResponse(ctx, "application/json", bytes.NewReader(b), apiclient.Bearer(token))
	if err != nil {
		return nil, c.failed(err)
	}
	if err := c.check(r.HTTPResponse, r.Body, r.JSON201 != nil); err != nil {
		return nil, err
	}
	return &r.JSON201.Data, nil
}

// Programs lists the login's programs.
func (c *Client) Programs(ctx context.Context, token string) ([]ProgramSummary, error) {
	r, err := c.gen().CliProgramsWithResponse(ctx, apiclient.Bearer(token))
	if err != nil {
		return nil, c.failed(err)
	}
	if err := c.check(r.HTTPResponse, r.Body, r.JSON200 != nil); err != nil {
		return nil, err
	}
	return r.JSON200.Data, nil
}

// Status reads the key's program status; programID "" sends none.
func (c *Client) Status(ctx context.Context, key, programID string) (*Status, error) {
	params := &apiclient.CliStatusParams{}
	if programID != "" {
		params.ProgramId = &programID
	}
	r, err := c.gen().CliStatusWithResponse(ctx, params, apiclient.Bearer(key))
	if err != nil {
		return nil, c.failed(err)
	}
	if err := c.check(r.HTTPResponse, r.Body, r.JSON200 != nil); err != nil {
		return nil, err
	}
	return &r.JSON200.Data, nil
}

// SendTestEvent records one flagged test event (click, lead or sale).
func (c *Client) SendTestEvent(ctx context.Context, key, eventType string) (*TestEvent, error) {
	kind := apiclient.CliTestEventRequestEventType(eventType)
	r, err := c.gen().CliTestEventWithResponse(ctx, apiclient.CliTestEventJSONRequestBody{EventType: &kind}, apiclient.Bearer(key))
	if err != nil {
		return nil, c.failed(err)
	}
	if err := c.check(r.HTTPResponse, r.Body, r.JSON200 != nil); err != nil {
		return nil, err
	}
	ev, err := r.JSON200.Data.AsCliTestEvent()
	if err != nil {
		return nil, &Error{Message: fmt.Sprintf("unexpected answer from %s", c.BaseURL), Err: err}
	}
	return &ev, nil
}

// RunChain runs the synthetic click → lead → sale chain.
func (c *Client) RunChain(ctx context.Context, key string) (*Chain, error) {
	chain := "chain"
	r, err := c.gen().CliTestEventWithResponse(ctx, apiclient.CliTestEventJSONRequestBody{Type: &chain}, apiclient.Bearer(key))
	if err != nil {
		return nil, c.failed(err)
	}
	if err := c.check(r.HTTPResponse, r.Body, r.JSON200 != nil); err != nil {
		return nil, err
	}
	ch, err := r.JSON200.Data.AsCliChain()
	if err != nil {
		return nil, &Error{Message: fmt.Sprintf("unexpected answer from %s", c.BaseURL), Err: err}
	}
	return &ch, nil
}

// Readiness is GET /api/v1/programs/me/readiness (a bare body).
type Readiness = apiclient.ProgramMeReadiness

// Gate is one readiness gate as the CLI lists it.
type Gate struct {
	ID, Status string
	NextAction *string
}

// Gates lists r's gates in the order they are checked.
func Gates(r *Readiness) []Gate {
	g := r.Gates
	return []Gate{
		{"profile", string(g.Profile.Status), (*string)(g.Profile.NextAction)},
		{"economics", string(g.Economics.Status), (*string)(g.Economics.NextAction)},
		{"payout", string(g.Payout.Status), (*string)(g.Payout.NextAction)},
		{"tracking", string(g.Tracking.Status), (*string)(g.Tracking.NextAction)},
		{"live", string(g.Live.Status), (*string)(g.Live.NextAction)},
	}
}

// Readiness reads the key's program readiness.
func (c *Client) Readiness(ctx context.Context, key string) (*Readiness, error) {
	r, err := c.gen().GetReadinessWithResponse(ctx, &apiclient.GetReadinessParams{}, apiclient.Bearer(key))
	if err != nil {
		return nil, c.failed(err)
	}
	if err := c.check(r.HTTPResponse, r.Body, r.JSON200 != nil); err != nil {
		return nil, err
	}
	return r.JSON200, nil
}
