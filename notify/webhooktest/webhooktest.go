// Package webhooktest gives tests what a brand has: a webhook receiver (a
// real HTTP server on 127.0.0.1 answering a script of statuses) and
// Verify, the receiver's check of a Standard Webhooks signature, written
// from the specification and independent of notify.Sign, so that a test
// proves the published algorithm rather than the signing code against
// itself.
package webhooktest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Request is one request a Receiver got.
type Request struct {
	Header http.Header
	Body   []byte
}

// ID is the request's webhook-id.
func (r Request) ID() string { return r.Header.Get("webhook-id") }

// Receiver is a brand's webhook endpoint. It answers the n-th request with
// the n-th status of its script (the last one repeats) and keeps every
// request.
type Receiver struct {
	*httptest.Server
	mu     sync.Mutex
	script []int
	got    []Request
}

// NewReceiver starts a receiver closed when the test ends; without a
// script it answers 200.
func NewReceiver(tb testing.TB, script ...int) *Receiver {
	tb.Helper()
	if len(script) == 0 {
		script = []int{http.StatusOK}
	}
	r := &Receiver{script: script}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		status := r.script[min(len(r.got), len(r.script)-1)]
		r.got = append(r.got, Request{Header: req.Header.Clone(), Body: body})
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	tb.Cleanup(r.Close)
	return r
}

// Requests returns the requests received so far.
func (r *Receiver) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.got...)
}

// IDs returns the webhook-id of every request received so far.
func (r *Receiver) IDs() []string {
	var ids []string
	for _, req := range r.Requests() {
		ids = append(ids, req.ID())
	}
	return ids
}

// Tolerance is how far from now a receiver accepts a webhook-timestamp.
const Tolerance = 5 * time.Minute

// Verify checks a delivery as a receiver does: the three headers present,
// the timestamp within Tolerance of now, and one "v1," signature equal to
// the base64 HMAC-SHA256 of "id.timestamp.body" keyed with the
// base64-decoded part of the secret after "whsec_".
func Verify(secret string, h http.Header, body []byte, now time.Time) error {
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return errors.New("webhooktest: missing webhook headers")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return err
	}
	if d := now.Sub(time.Unix(sec, 0)); d > Tolerance || d < -Tolerance {
		return errors.New("webhooktest: timestamp outside the tolerance")
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "." + string(body)))
	want := mac.Sum(nil)
	for _, s := range strings.Fields(sigs) {
		version, b64, ok := strings.Cut(s, ",")
		if !ok || version != "v1" {
			continue
		}
		if got, err := base64.StdEncoding.DecodeString(b64); err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return errors.New("webhooktest: no valid signature")
}
