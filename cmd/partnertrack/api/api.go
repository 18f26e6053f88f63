// Package api is the partnertrack CLI's client of the edge's
// /api/v1/cli/* endpoints and readiness: one method per endpoint, the
// success body decoded from its data envelope, and every failure returned
// as an *Error that says whether the caller or the server is at fault.
package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
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

// envelope is any answer of the edge: the platform envelope (data, or
// data null and an error object), the typed one (an error object, no
// data), or a bare object (readiness).
type envelope struct {
	Data  json.RawMessage `json:"data"`
	Error json.RawMessage `json:"error"`
}

type errorBody struct {
	Code              string         `json:"code"`
	Message           string         `json:"message"`
	Details           map[string]any `json:"details"`
	RetryAfterSeconds int            `json:"retry_after_seconds"`
}

// call sends one request. A body is sent as JSON; out receives data (or
// the whole body when bare is true).
func (c *Client) call(ctx context.Context, method, path, token string, body, out any, bare bool) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, rd)
	if err != nil {
		return &Error{Message: "invalid API URL " + c.BaseURL, Err: err}
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return &Error{Message: "cannot reach " + c.BaseURL, Err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return &Error{Message: "cannot read the answer of " + c.BaseURL, Err: err}
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		var env envelope
		if err := json.Unmarshal(raw, &env); err != nil {
			return &Error{Message: fmt.Sprintf("unexpected answer from %s (HTTP %d, not JSON)", c.BaseURL, resp.StatusCode), Err: err}
		}
		if out == nil {
			return nil
		}
		src := env.Data
		if bare || len(src) == 0 || string(src) == "null" {
			src = raw
		}
		if err := json.Unmarshal(src, out); err != nil {
			return &Error{Message: fmt.Sprintf("unexpected answer from %s", c.BaseURL), Err: err}
		}
		return nil
	}
	return decodeError(resp, raw)
}

// decodeError reads an error answer in either envelope.
func decodeError(resp *http.Response, raw []byte) *Error {
	e := &Error{Status: resp.StatusCode, RequestID: resp.Header.Get("X-Request-ID")}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
		e.RetryAfter = s
	}
	var env envelope
	var body errorBody
	if json.Unmarshal(raw, &env) == nil && len(env.Error) > 0 {
		if json.Unmarshal(env.Error, &body) != nil {
			// {"error": "text"}, as some servers send
			var text string
			json.Unmarshal(env.Error, &text)
			body.Message = text
		}
	}
	e.Code, e.Message, e.Details = body.Code, body.Message, body.Details
	if body.RetryAfterSeconds > 0 {
		e.RetryAfter = body.RetryAfterSeconds
	}
	if e.RequestID == "" {
		if id, ok := e.Details["request_id"].(string); ok {
			e.RequestID = id
		}
	}
	if e.Message == "" {
		e.Message = fmt.Sprintf("HTTP %d from %s", resp.StatusCode, resp.Request.URL.Host)
	}
	return e
}

// AuthStart is the answer to POST /api/v1/cli/auth/start.
type AuthStart struct {
	State               string    `json:"state"`
	UserCode            string    `json:"user_code"` // shown in the terminal; "" from servers without it`
	AuthURL             string    `json:"auth_url"`
	PollURL             string    `json:"poll_url"`
	ExpiresAt           time.Time `json:"expires_at"`
	PollIntervalSeconds int       `json:"poll_interval_seconds"`
}

// StartLogin starts a browser login. codeChallenge is the S256 challenge
// of a verifier the caller keeps for PollLogin ("" to send none).
func (c *Client) StartLogin(ctx context.Context, codeChallenge string) (*AuthStart, error) {
	var out AuthStart
	var body any
	if codeChallenge != "" {
		body = map[string]string{"code_challenge": codeChallenge, "code_challenge_method": "S256"}
	}
	return &out, c.call(ctx, http.MethodPost, "/api/v1/cli/auth/start", "", body, &out, false)
}

// AuthPoll is the answer to GET /api/v1/cli/auth/poll.
type AuthPoll struct {
	Status       string    `json:"status"` // pending, complete, expired
	Token        string    `json:"token"`
	ExpiresAt    time.Time `json:"expires_at"`
	UserID       int64     `json:"user_id"`
	Email        string    `json:"email"`
	AdvertiserID *int64    `json:"advertiser_id"`
}

// PollLogin polls a login; verifier is the one whose challenge started it
// ("" when none was sent).
func (c *Client) PollLogin(ctx context.Context, state, verifier string) (*AuthPoll, error) {
	var out AuthPoll
	q := "?state=" + url.QueryEscape(state)
	if verifier != "" {
		q += "&code_verifier=" + url.QueryEscape(verifier)
	}
	return &out, c.call(ctx, http.MethodGet, "/api/v1/cli/auth/poll"+q, "", nil, &out, false)
}

// InitRequest is the body of POST /api/v1/cli/init; nil fields are not
// sent. CommissionRate is sent as written (an exact JSON number).
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

// Program is a program as init answers it.
type Program struct {
	ProgramID      int64       `json:"program_id"`
	AdvertiserID   int64       `json:"advertiser_id"`
	Name           string      `json:"name"`
	Domain         string      `json:"domain"`
	CommissionType string      `json:"commission_type"`
	CommissionRate json.Number `json:"commission_rate"`
	DurationMonths int         `json:"duration_months"`
	CookieDuration int         `json:"cookie_duration"`
	Currency       string      `json:"currency"`
	Status         string      `json:"status"`
	APITokenMasked string      `json:"api_token_masked"`
	CreatedAt      time.Time   `json:"created_at"`
	Message        string      `json:"message"`
}

// Init creates a program with the login token.
func (c *Client) Init(ctx context.Context, token string, req InitRequest) (*Program, error) {
	var out Program
	return &out, c.call(ctx, http.MethodPost, "/api/v1/cli/init", token, req, &out, false)
}

// ProgramSummary is one item of GET /api/v1/cli/programs.
type ProgramSummary struct {
	ID         int64     `json:"id"`
	Name       string    `json:"name"`
	Domain     string    `json:"domain"`
	Status     string    `json:"status"`
	Commission string    `json:"commission"`
	Partners   int64     `json:"partners"`
	CreatedAt  time.Time `json:"created_at"`
}

// Programs lists the login's programs.
func (c *Client) Programs(ctx context.Context, token string) ([]ProgramSummary, error) {
	var out []ProgramSummary
	return out, c.call(ctx, http.MethodGet, "/api/v1/cli/programs", token, nil, &out, false)
}

// Status is the answer to GET /api/v1/cli/status.
type Status struct {
	ProgramID            int64  `json:"program_id"`
	Name                 string `json:"name"`
	Domain               string `json:"domain"`
	DNSVerified          bool   `json:"dns_verified"`
	StripeConnected      bool   `json:"stripe_connected"`
	StripeChargesEnabled bool   `json:"stripe_charges_enabled"`
	RecentEvents         struct {
		Clicks24h int64 `json:"clicks_24h"`
		Leads24h  int64 `json:"leads_24h"`
		Sales24h  int64 `json:"sales_24h"`
	} `json:"recent_events"`
	ActivePartners     int64 `json:"active_partners"`
	PendingCommissions int64 `json:"pending_commissions"`
}

// Status reads the key's program status; programID "" sends none.
func (c *Client) Status(ctx context.Context, key, programID string) (*Status, error) {
	path := "/api/v1/cli/status"
	if programID != "" {
		path += "?program_id=" + url.QueryEscape(programID)
	}
	var out Status
	return &out, c.call(ctx, http.MethodGet, path, key, nil, &out, false)
}

// TestEvent is the answer to a single test event.
type TestEvent struct {
	EventType  string `json:"event_type"`
	EventID    string `json:"event_id"`
	Received   bool   `json:"received"`
	Attributed bool   `json:"attributed"`
	Message    string `json:"message"`
}

// SendTestEvent records one flagged test event (click, lead or sale).
func (c *Client) SendTestEvent(ctx context.Context, key, eventType string) (*TestEvent, error) {
	var out TestEvent
	return &out, c.call(ctx, http.MethodPost, "/api/v1/cli/test-event", key, map[string]string{"event_type": eventType}, &out, false)
}

// Verdict is the synthetic chain's verdict per step.
type Verdict struct {
	Click string `json:"click"`
	Lead  string `json:"lead"`
	Sale  string `json:"sale"`
}

// Chain is the answer to a synthetic chain.
type Chain struct {
	Type        string    `json:"type"`
	ChainID     int64     `json:"chain_id"`
	ShortCode   string    `json:"short_code"`
	CustomerKey string    `json:"customer_key"`
	ClickID     string    `json:"click_id"`
	Verdict     Verdict   `json:"verdict"`
	Attributed  bool      `json:"attributed"`
	CreatedAt   time.Time `json:"created_at"`
}

// RunChain runs the synthetic click → lead → sale chain.
func (c *Client) RunChain(ctx context.Context, key string) (*Chain, error) {
	var out Chain
	return &out, c.call(ctx, http.MethodPost, "/api/v1/cli/test-event", key, map[string]string{"type": "chain"}, &out, false)
}

// Gate is one readiness gate.
type Gate struct {
	Status     string   `json:"status"`
	NextAction *string  `json:"next_action"`
	Mode       *string  `json:"mode,omitempty"`
	Endpoint   *string  `json:"endpoint,omitempty"`
	Detail     string   `json:"detail,omitempty"`
	TestChain  *Verdict `json:"test_chain,omitempty"`
}

// Readiness is GET /api/v1/programs/me/readiness.
type Readiness struct {
	ProgramID           int64           `json:"program_id"`
	State               string          `json:"state"`
	IntegrationVerified bool            `json:"integration_verified"`
	Blocker             *string         `json:"blocker"`
	Gates               map[string]Gate `json:"gates"`
	Counts24h           struct {
		Clicks int64 `json:"clicks"`
		Leads  int64 `json:"leads"`
		Sales  int64 `json:"sales"`
	} `json:"counts_24h"`
}

// Readiness reads the key's program readiness.
func (c *Client) Readiness(ctx context.Context, key string) (*Readiness, error) {
	var out Readiness
	return &out, c.call(ctx, http.MethodGet, "/api/v1/programs/me/readiness", key, nil, &out, true)
}
