package ingest

import (
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// Operating the service: Prometheus metrics and the asynq dashboard.

// RequestObserver records answered requests (Prometheus, in cmd).
type RequestObserver interface {
	ObserveRequest(method, route string, status int, d time.Duration)
}

// queuesPath is where the asynq dashboard is mounted.
const queuesPath = "/ops/queues"

// Messages of the dashboard's guard.
const (
	msgOpsToken    = "The queue dashboard requires the operator token (Bearer, or HTTP basic auth with the token as password)"
	msgOpsReadOnly = "The queue dashboard is read-only (OPS_QUEUES_READONLY=true)"
)

// withMetrics records every request once its response is final: by method,
// route pattern (never the raw path) and status, with its duration.
func (s *Server) withMetrics(c *fiber.Ctx) error {
	if s.requests == nil {
		return c.Next()
	}
	start := time.Now()
	if err := c.Next(); err != nil {
		// An error that reached here (a recovered panic) is rendered now,
		// so that the status recorded is the one the client gets.
		if herr := s.app.Config().ErrorHandler(c, err); herr != nil {
			c.Status(fiber.StatusInternalServerError)
		}
	}
	status := c.Response().StatusCode()
	route := c.Route().Path
	if status == fiber.StatusNotFound && route == "/" {
		route = "unmatched" // only the global middleware ran
	}
	s.requests.ObserveRequest(methodLabel(c.Method()), route, status, time.Since(start))
	return nil
}

// methodLabel names a request method with a constant string: fiber's
// c.Method() points into a buffer reused by the next request, and an
// unknown method must not make a series of its own.
func methodLabel(m string) string {
	for _, known := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
		http.MethodPatch, http.MethodDelete, http.MethodOptions} {
		if m == known {
			return known
		}
	}
	return "OTHER"
}

// requireOpsToken guards the asynq dashboard with the operator token, as a
// bearer token or as the password of HTTP basic auth (any user name), so
// that a browser can open it. Without it: 401 with WWW-Authenticate: Basic.
// Without OPERATOR_TOKEN the dashboard does not exist (404), like the
// operator API.
func (s *Server) requireOpsToken(c *fiber.Ctx) error {
	if p := c.Path(); p != queuesPath && !strings.HasPrefix(p, queuesPath+"/") {
		return fiber.ErrNotFound
	}
	if s.cfg.OperatorToken == "" {
		return fiber.ErrNotFound
	}
	if s.opsTokenOK(c.Get(fiber.HeaderAuthorization)) {
		return c.Next()
	}
	c.Set(fiber.HeaderWWWAuthenticate, `Basic realm="partnertrack operations", charset="UTF-8"`)
	return ledger.NewError(ledger.EUnauthorized, msgOpsToken)
}

func (s *Server) opsTokenOK(header string) bool {
	var given string
	if tok, st := bearerToken(header); st == bearerOK {
		given = tok
	} else if raw, found := strings.CutPrefix(header, "Basic "); found {
		decoded, err := base64.StdEncoding.DecodeString(strings.TrimSpace(raw))
		if err != nil {
			return false
		}
		_, password, ok := strings.Cut(string(decoded), ":")
		if !ok {
			return false
		}
		given = password
	} else {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(given), []byte(s.cfg.OperatorToken)) == 1
}

// opsReadOnly refuses every change through the dashboard's API unless
// OPS_QUEUES_READONLY=false (asynqmon's own ReadOnly, set too, hides the
// buttons).
func (s *Server) opsReadOnly(c *fiber.Ctx) error {
	if s.cfg.OpsQueuesWritable {
		return c.Next()
	}
	switch c.Method() {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return c.Next()
	}
	return ledger.NewError(ledger.EForbidden, msgOpsReadOnly)
}
