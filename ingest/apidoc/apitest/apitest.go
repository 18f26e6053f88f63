// Package apitest checks the HTTP exchanges of tests against the OpenAPI
// document (package apidoc), so that the document cannot drift from what
// the service does. A test harness calls Check for each request it sends,
// or wraps its http.Client's transport with Transport.
//
// The rules, for each exchange:
//   - a request to a path and method the document lacks must be answered
//     404 or 405 (the service does not know it either);
//   - a request the document calls invalid must be refused with a 4xx;
//   - every answer must be one the document describes for that operation:
//     its status, its content type and its body's schema.
//
// Credentials are not checked against the security schemes: tests send
// wrong ones on purpose, and the documented 401s cover them.
package apitest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/partnertrack/partnertrack/ingest/apidoc"
)

// Checker validates exchanges against the document.
type Checker struct {
	router routers.Router
}

var shared = sync.OnceValues(func() (*Checker, error) {
	doc, err := apidoc.Load()
	if err != nil {
		return nil, err
	}
	// Match any host: tests call httptest hosts and random ports.
	anyHost := *doc
	anyHost.Servers = nil
	r, err := gorillamux.NewRouter(&anyHost)
	if err != nil {
		return nil, fmt.Errorf("apitest: route the document: %w", err)
	}
	return &Checker{router: r}, nil
})

// Default returns the checker of the service's document; it fails the test
// when the document does not load.
func Default(t testing.TB) *Checker {
	t.Helper()
	c, err := shared()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func init() {
	// Pages, scripts, metrics and CSV are checked by status and content
	// type; their bodies are opaque to the document.
	for _, ct := range []string{"text/html", "text/javascript", "application/javascript", "text/csv", "text/plain"} {
		openapi3filter.RegisterBodyDecoder(ct, textBody)
	}
}

func textBody(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	b, err := io.ReadAll(body)
	return string(b), err
}

// Check validates one exchange; reqBody and respBody are the bodies as
// sent and received (req's and resp's own bodies are not read).
func (c *Checker) Check(t testing.TB, req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) {
	t.Helper()
	if err := c.check(req, reqBody, resp, respBody); err != nil {
		t.Errorf("OpenAPI: %s %s → %d: %v\nrequest body: %.300s\nanswer: %.500s",
			req.Method, req.URL.RequestURI(), resp.StatusCode, err, reqBody, respBody)
	}
}

func (c *Checker) check(req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) error {
	if strings.HasPrefix(req.URL.Path, queueDashboard+"/") {
		return nil // the asynq dashboard's own pages and API
	}
	if strings.HasPrefix(req.URL.Path, testRoutes) {
		return nil // routes a test mounts on the app for itself
	}
	ctx := context.Background()
	r := req.Clone(ctx)
	r.Body = io.NopCloser(bytes.NewReader(reqBody))
	route, params, err := c.router.FindRoute(r)
	if err != nil {
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
			return nil
		}
		return fmt.Errorf("the document has no %s %s (%v), but the service answered it", req.Method, req.URL.Path, err)
	}
	in := &openapi3filter.RequestValidationInput{
		Request: r, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true},
	}
	reqErr := openapi3filter.ValidateRequest(ctx, in)
	var numErr *strconv.NumError
	if errors.As(reqErr, &numErr) {
		// A JSON number beyond float64 (1e400) is valid JSON that the
		// validator cannot decode: it cannot judge this request.
		reqErr = nil
	}
	if reqErr != nil && (resp.StatusCode < 400 || resp.StatusCode >= 500) {
		return fmt.Errorf("the document calls the request invalid (%v), but the service answered %d", reqErr, resp.StatusCode)
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if req.Method == http.MethodHead {
		out.Options.ExcludeResponseBody = true
	}
	out.SetBodyBytes(respBody)
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		return fmt.Errorf("answer not described: %w", err)
	}
	return nil
}

// queueDashboard is where the edge mounts the asynq dashboard: the
// document describes its entry page, not the pages and API under it.
const queueDashboard = "/ops/queues"

// testRoutes is where tests mount routes of their own (a handler that
// panics, one that fails like a sale): not the service's.
const testRoutes = "/test/"

// Transport returns an http.RoundTripper that sends through base (nil:
// http.DefaultTransport) and checks every exchange.
func (c *Checker) Transport(t testing.TB, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return roundTripper{t: t, c: c, base: base}
}

type roundTripper struct {
	t    testing.TB
	c    *Checker
	base http.RoundTripper
}

func (rt roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		reqBody = b
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	resp, err := rt.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	respBody, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	rt.c.Check(rt.t, req, reqBody, resp, respBody)
	return resp, nil
}
