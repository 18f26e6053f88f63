package drive

// The load generator's HTTP client: a fasthttp host client with one
// keep-alive connection per worker, and small JSON helpers for the calls
// that provision a run.

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/valyala/fasthttp"
)

// Client calls one host.
type Client struct {
	hc      *fasthttp.HostClient
	timeout time.Duration
}

// New returns a client of addr (host:port) with at most conns connections.
func NewClient(addr string, conns int) *Client {
	return &Client{
		hc: &fasthttp.HostClient{
			Addr:                          addr,
			MaxConns:                      conns,
			MaxIdleConnDuration:           time.Minute,
			ReadTimeout:                   30 * time.Second,
			WriteTimeout:                  30 * time.Second,
			NoDefaultUserAgentHeader:      true,
			DisableHeaderNamesNormalizing: true,
			MaxConnWaitTimeout:            30 * time.Second,
		},
		timeout: 30 * time.Second,
	}
}

// Request is one call.
type Request struct {
	Method string
	Path   string
	Token  string      // sent as Authorization: Bearer
	Header [][2]string // extra headers
	Body   []byte      // sent as application/json when not nil
}

// Do sends r and returns the status; when out is not nil the body is
// appended to it.
func (c *Client) Do(r *Request, out *[]byte) (int, error) {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(r.Method)
	req.SetRequestURI("http://" + c.hc.Addr + r.Path)
	req.Header.Set("User-Agent", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36")
	if r.Token != "" {
		req.Header.Set("Authorization", "Bearer "+r.Token)
	}
	for _, h := range r.Header {
		req.Header.Set(h[0], h[1])
	}
	if r.Body != nil {
		req.Header.SetContentType("application/json")
		req.SetBodyRaw(r.Body)
	}
	if err := c.hc.DoTimeout(req, resp, c.timeout); err != nil {
		return 0, err
	}
	if out != nil {
		*out = append(*out, resp.Body()...)
	}
	return resp.StatusCode(), nil
}

// JSON sends body (encoded as JSON unless nil) and decodes the answer
// into out; any status but want is an error naming the answer.
func (c *Client) JSON(method, path, token string, body any, want int, out any) error {
	return c.JSONWith(method, path, token, nil, body, want, out)
}

// JSONWith is JSON with extra headers.
func (c *Client) JSONWith(method, path, token string, header [][2]string, body any, want int, out any) error {
	r := &Request{Method: method, Path: path, Token: token, Header: header}
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r.Body = b
	}
	var raw []byte
	status, err := c.Do(r, &raw)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if status != want {
		return fmt.Errorf("%s %s: %d %s (want %d)", method, path, status, truncate(raw, 300), want)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("%s %s: decode %s: %w", method, path, truncate(raw, 300), err)
		}
	}
	return nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
