package notify

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// Standard Webhooks headers.
const (
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

// Sign returns the Standard Webhooks signature of a message:
// "v1," and the base64 HMAC-SHA256 of "id.timestamp.body", keyed with the
// base64-decoded part of the secret after "whsec_".
func Sign(secret, id string, timestamp int64, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return "", fmt.Errorf("notify: webhook secret is not base64: %w", err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write([]byte(strconv.FormatInt(timestamp, 10)))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

// Backoff is the retry schedule of a delivery: the first retry after First,
// each next one Factor times later, every delay varied by ±Jitter (a
// fraction) so that messages failed together do not retry together.
type Backoff struct {
	First  time.Duration
	Factor float64
	Jitter float64
}

// DefaultBackoff retries after about 30 s, 1.5 min, 4.5 min, 13.5 min,
// 40 min, 2 h, 6 h and 18 h: with the webhooks queue's 8 retries the last
// attempt comes about 27 hours after the first, and the message is then
// archived (the dashboard's dead-letter list).
var DefaultBackoff = Backoff{First: 30 * time.Second, Factor: 3, Jitter: 0.1}

// Delay is the wait before retry number n+1 (n retries done so far).
func (b Backoff) Delay(n int) time.Duration {
	d := float64(b.First) * math.Pow(b.Factor, float64(n))
	if b.Jitter > 0 {
		d *= 1 + b.Jitter*(2*rand.Float64()-1)
	}
	return time.Duration(d)
}

// BreakerOpenError is the outcome of a delivery that was not attempted
// because its destination's circuit breaker is open: the destination
// failed repeatedly and is left alone for a while. The webhooks worker
// retries such a delivery after RetryAfter without spending one of its
// retries (asynq's IsFailure).
type BreakerOpenError struct {
	Destination string
	RetryAfter  time.Duration
}

func (e *BreakerOpenError) Error() string {
	return "circuit breaker of " + e.Destination + " is open; retry in " + e.RetryAfter.Round(time.Second).String()
}

// IsBreakerOpen reports whether err is (or wraps) a BreakerOpenError.
func IsBreakerOpen(err error) bool {
	var e *BreakerOpenError
	return errors.As(err, &e)
}

// ErrFinal marks a delivery that will never succeed by retrying: a refused
// address, or a message that waited behind an open breaker past its
// maximum age. The worker archives it at once.
var ErrFinal = errors.New("notify: delivery given up")

// StatusError is a receiver's answer other than 2xx.
type StatusError struct{ Code int }

func (e *StatusError) Error() string { return "receiver answered HTTP " + strconv.Itoa(e.Code) }

// Outcomes of a delivery, for metrics.
const (
	OutcomeDelivered = "delivered" // 2xx
	OutcomeFailed    = "failed"    // an answer other than 2xx, or no answer
	OutcomeDeferred  = "deferred"  // breaker open: not attempted
	OutcomeRefused   = "refused"   // address not public
	OutcomeDropped   = "dropped"   // endpoint deleted, or already delivered
	OutcomeExpired   = "expired"   // waited past MaxAge behind an open breaker
)

// SenderConfig configures a Sender. Zero values take the defaults.
type SenderConfig struct {
	Store ledger.WebhookStore
	Guard *Guard // nil refuses every non-public address
	// Timeout bounds one attempt (connect, send, wait for the answer).
	Timeout time.Duration // default 10 s
	// BreakerFailures consecutive failures of one destination open its
	// breaker for BreakerTimeout; one probe then decides.
	BreakerFailures uint32        // default 5
	BreakerTimeout  time.Duration // default 30 s
	// MaxAge is how long a message may wait behind open breakers (which
	// spend none of its retries) before it is given up.
	MaxAge time.Duration // default 72 h
	Now    func() time.Time
	Logger *slog.Logger
	// OnAttempt, when set, is told the outcome and duration of every
	// delivery (metrics).
	OnAttempt func(outcome string, d time.Duration)
	// OnBreakerChange, when set, is told every breaker state change.
	OnBreakerChange func(destination string, from, to gobreaker.State)
}

// Sender delivers brand webhooks: signed POSTs with one circuit breaker
// per destination (scheme, host and port), so that a dead endpoint fails
// fast instead of holding workers, while other destinations are delivered.
type Sender struct {
	cfg    SenderConfig
	client *http.Client

	mu       sync.Mutex
	breakers map[string]*gobreaker.CircuitBreaker[int]
}

// NewSender returns a Sender.
func NewSender(cfg SenderConfig) *Sender {
	if cfg.Guard == nil {
		cfg.Guard = &Guard{}
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.BreakerFailures == 0 {
		cfg.BreakerFailures = 5
	}
	if cfg.BreakerTimeout <= 0 {
		cfg.BreakerTimeout = 30 * time.Second
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = 72 * time.Hour
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	dialer := &net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second, Control: cfg.Guard.Control}
	transport := &http.Transport{
		Proxy:                 nil, // a proxy would make the dialer check the proxy's address, not the receiver's
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   cfg.Timeout,
		ResponseHeaderTimeout: cfg.Timeout,
	}
	return &Sender{
		cfg: cfg,
		client: &http.Client{
			Transport: transport,
			Timeout:   cfg.Timeout,
			// A redirect is the receiver's answer, not a new destination:
			// it counts as a failed delivery and is never followed.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		breakers: make(map[string]*gobreaker.CircuitBreaker[int]),
	}
}

// Deliver sends one message to its endpoint; attempt counts the attempts
// of this message, from 1. It returns nil when the endpoint accepted the
// message, when it had already, and when the endpoint was deleted; a
// *BreakerOpenError when the destination's breaker is open; an error
// wrapping ErrFinal when retrying is pointless; any other error to retry.
// Every attempt that reaches the network is appended to the endpoint's
// delivery log.
func (s *Sender) Deliver(ctx context.Context, m ledger.WebhookMessage, attempt int) error {
	started := s.cfg.Now()
	outcome := OutcomeFailed
	defer func() {
		if s.cfg.OnAttempt != nil {
			s.cfg.OnAttempt(outcome, s.cfg.Now().Sub(started))
		}
	}()
	t, err := s.cfg.Store.WebhookTarget(ctx, m.EndpointID)
	if ledger.ErrorCode(err) == ledger.ENotFound || (err == nil && t.Deleted) {
		outcome = OutcomeDropped
		s.cfg.Logger.Info("webhook endpoint deleted; message dropped", "endpoint_id", m.EndpointID, "message_id", m.MessageID)
		return nil
	} else if err != nil {
		return err
	}
	if done, err := s.cfg.Store.WebhookDelivered(ctx, m.EndpointID, m.MessageID); err != nil {
		return err
	} else if done {
		outcome = OutcomeDropped
		return nil
	}
	dest := Destination(t.URL)
	cb := s.breaker(dest)
	start := s.cfg.Now()
	var status int
	_, err = cb.Execute(func() (int, error) {
		var err error
		status, err = s.post(ctx, t, m)
		return status, err
	})
	if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
		if !m.CreatedAt.IsZero() && s.cfg.Now().Sub(m.CreatedAt) > s.cfg.MaxAge {
			outcome = OutcomeExpired
			return fmt.Errorf("%w: message %s waited more than %s behind the open breaker of %s",
				ErrFinal, m.MessageID, s.cfg.MaxAge, dest)
		}
		outcome = OutcomeDeferred
		// Up to half the breaker's timeout more, so that deferred
		// messages do not all come back at the same instant.
		wait := s.cfg.BreakerTimeout + time.Duration(rand.Int64N(int64(s.cfg.BreakerTimeout)/2+1))
		return &BreakerOpenError{Destination: dest, RetryAfter: wait}
	}
	a := ledger.WebhookAttempt{
		EndpointID: m.EndpointID, MessageID: m.MessageID, EventType: m.EventType, Attempt: attempt,
		LatencyMS: int(s.cfg.Now().Sub(start).Milliseconds()), CreatedAt: start,
	}
	if status != 0 {
		a.StatusCode = &status
	}
	// Brand admins read the log: a generic reason, never the resolved
	// address; the returned error (the worker's log) keeps the details.
	a.Error = Reason(err)
	if lerr := s.cfg.Store.LogWebhookAttempt(context.WithoutCancel(ctx), a); lerr != nil {
		s.cfg.Logger.Warn("webhook delivery not logged", "endpoint_id", m.EndpointID, "message_id", m.MessageID, "err", lerr)
	}
	switch {
	case err == nil:
		outcome = OutcomeDelivered
		return nil
	case errors.Is(err, ErrRefusedTarget):
		outcome = OutcomeRefused
		return fmt.Errorf("%w: endpoint %d: %v", ErrFinal, m.EndpointID, err)
	}
	return fmt.Errorf("webhook %s to endpoint %d (attempt %d): %w", m.MessageID, m.EndpointID, attempt, err)
}

// post sends one signed attempt and returns the receiver's status (0 when
// none arrived).
func (s *Sender) post(ctx context.Context, t *ledger.WebhookTarget, m ledger.WebhookMessage) (int, error) {
	ts := s.cfg.Now().Unix()
	sig, err := Sign(t.Secret, m.MessageID, ts, []byte(m.Body))
	if err != nil {
		return 0, &signError{err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, strings.NewReader(m.Body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "partnertrack-webhooks/1")
	req.Header.Set(HeaderWebhookID, m.MessageID)
	req.Header.Set(HeaderWebhookTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderWebhookSignature, sig)
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp.StatusCode, nil
	}
	return resp.StatusCode, &StatusError{Code: resp.StatusCode}
}

// Destination names what a breaker guards: a URL's scheme, host and port.
func Destination(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return u.Scheme + "://" + net.JoinHostPort(u.Hostname(), port)
}

// breaker returns the destination's breaker, creating it on first use.
func (s *Sender) breaker(dest string) *gobreaker.CircuitBreaker[int] {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cb, ok := s.breakers[dest]; ok {
		return cb
	}
	failures := s.cfg.BreakerFailures
	cb := gobreaker.NewCircuitBreaker[int](gobreaker.Settings{
		Name:        dest,
		MaxRequests: 1,
		Timeout:     s.cfg.BreakerTimeout,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= failures },
		// A receiver that answers 4xx (other than 408 and 429) is alive:
		// the delivery failed, the destination did not.
		IsSuccessful: func(err error) bool {
			var se *StatusError
			if errors.As(err, &se) {
				return se.Code < 500 && se.Code != http.StatusRequestTimeout && se.Code != http.StatusTooManyRequests
			}
			return err == nil
		},
		// A refused address says nothing about the destination's health.
		IsExcluded: func(err error) bool { return errors.Is(err, ErrRefusedTarget) },
		OnStateChange: func(name string, from, to gobreaker.State) {
			s.cfg.Logger.Warn("webhook destination breaker changed state", "destination", name, "from", from.String(), "to", to.String())
			if s.cfg.OnBreakerChange != nil {
				s.cfg.OnBreakerChange(name, from, to)
			}
		},
	})
	s.breakers[dest] = cb
	return cb
}

// BreakerStates returns the state of every destination's breaker.
func (s *Sender) BreakerStates() map[string]gobreaker.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]gobreaker.State, len(s.breakers))
	for d, cb := range s.breakers {
		out[d] = cb.State()
	}
	return out
}
