package web

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"reflect"

	"github.com/valyala/fasthttp"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// inProcess sends API requests straight into the edge's fasthttp handler,
// without a socket: the request goes through the same middleware, rate
// limits and authentication as one from the network.
type inProcess struct {
	handler func() fasthttp.RequestHandler
}

// peerKey carries the browser's address and forwarding header, so that the
// API sees the person's client IP (and rate-limits per person), not ours,
// and the Host it asked for (which the edge may check).
type peerKey struct{}

type peer struct {
	host         string
	addr         net.Addr
	forwardedFor string
	requestID    string
}

func withPeer(ctx context.Context, p peer) context.Context {
	return context.WithValue(ctx, peerKey{}, p)
}

// Do implements apiclient.HttpRequestDoer.
func (d inProcess) Do(r *http.Request) (*http.Response, error) {
	var req fasthttp.Request
	req.Header.SetMethod(r.Method)
	req.SetRequestURI(r.URL.RequestURI())
	p, _ := r.Context().Value(peerKey{}).(peer)
	req.Header.SetHost(p.host)
	if p.host == "" {
		req.Header.SetHost("localhost")
	}
	for name, values := range r.Header {
		for _, v := range values {
			req.Header.Add(name, v)
		}
	}
	if r.Body != nil {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		req.SetBody(body)
	}
	if p.forwardedFor != "" {
		req.Header.Set("X-Forwarded-For", p.forwardedFor)
	}
	if p.requestID != "" {
		req.Header.Set("X-Request-ID", p.requestID)
	}
	addr := p.addr
	if addr == nil {
		addr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}
	}
	var ctx fasthttp.RequestCtx
	ctx.Init(&req, addr, nil)
	d.handler()(&ctx)

	resp := &http.Response{
		StatusCode: ctx.Response.StatusCode(),
		Header:     http.Header{},
		Request:    r,
		Body:       io.NopCloser(bytes.NewReader(append([]byte(nil), ctx.Response.Body()...))),
	}
	resp.Status = http.StatusText(resp.StatusCode)
	ctx.Response.Header.VisitAll(func(k, v []byte) { resp.Header.Add(string(k), string(v)) })
	return resp, nil
}

// client returns the API client of the edge, in process.
func newClient(d inProcess) *apiclient.ClientWithResponses {
	c, err := apiclient.NewClientWithResponses("http://dashboard.internal", apiclient.WithHTTPClient(d))
	if err != nil {
		panic(err) // only a malformed server URL fails, and ours is constant
	}
	return c
}

// apiCheck returns the API's refusal in a generated answer (a
// *XxxResponse of apiclient), nil for a 2xx, or err when the call failed
// before an answer (then resp is nil). The answers share no interface
// with their HTTPResponse and Body, so this reads the two fields by name.
func apiCheck[R any](resp *R, err error) error {
	if err != nil {
		return err
	}
	if resp == nil {
		return errors.New("web: the API call returned no answer")
	}
	v := reflect.ValueOf(resp).Elem()
	hr, _ := v.FieldByName("HTTPResponse").Interface().(*http.Response)
	body, _ := v.FieldByName("Body").Interface().([]byte)
	if hr == nil {
		return errors.New("web: the API answer has no HTTP response")
	}
	return apiclient.CheckResponse(hr, body)
}

// asResponseError reports the API's refusal in err, if it is one.
func asResponseError(err error) (*apiclient.ResponseError, bool) {
	var re *apiclient.ResponseError
	ok := errors.As(err, &re)
	return re, ok
}
