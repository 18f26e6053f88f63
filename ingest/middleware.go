package ingest

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
)

type requestIDKey struct{}

const headerRequestID = "X-Request-ID"

var idEncoding = base32.NewEncoding("0123456789abcdefghijklmnopqrstuv").WithPadding(base32.NoPadding)

// newRequestID returns 80 random bits, enough to tell requests apart.
func newRequestID() string {
	b := make([]byte, 10)
	rand.Read(b)
	return "req_" + idEncoding.EncodeToString(b)
}

// validRequestID accepts a caller's id when it is short and plain.
func validRequestID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_' || ch == '.') {
			return false
		}
	}
	return true
}

// withRequestID gives every request an id (the caller's X-Request-ID when
// it is plain, else a new one) and returns it in X-Request-ID.
func withRequestID(c *fiber.Ctx) error {
	id := c.Get(headerRequestID)
	if !validRequestID(id) {
		id = newRequestID()
	} else {
		id = string([]byte(id)) // the header buffer is reused after the request
	}
	c.Locals(requestIDKey{}, id)
	c.Set(headerRequestID, id)
	return c.Next()
}

func requestID(c *fiber.Ctx) string {
	id, _ := c.Locals(requestIDKey{}).(string)
	return id
}

// withRecover turns a panic into a 500 rendered by the error handler.
func (s *Server) withRecover(c *fiber.Ctx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.logger.Error("panic", "request_id", requestID(c), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return c.Next()
}

// withAccessLog logs one line per request after the response is rendered.
// It logs the path without the query string, and never a header: neither
// may carry a secret into the logs.
func (s *Server) withAccessLog(c *fiber.Ctx) error {
	start := time.Now()
	err := c.Next()
	if err != nil {
		if herr := s.app.Config().ErrorHandler(c, err); herr != nil {
			c.Status(fiber.StatusInternalServerError)
		}
	}
	status := c.Response().StatusCode()
	level := accessLogLevel(c.Path(), status)
	if s.logger.Enabled(c.UserContext(), level) {
		s.logger.LogAttrs(c.UserContext(), level, "request",
			slog.String("request_id", requestID(c)),
			slog.String("method", c.Method()),
			slog.String("path", c.Path()),
			slog.Int("status", status),
			slog.Duration("duration", time.Since(start)),
			slog.String("ip", s.clientIP(c)))
	}
	return nil
}

// accessLogLevel is the level of a request's access log line: errors for
// 5xx; debug for the clicks and visits that were taken, the high-volume
// routes whose successes the request metrics count (a line per click
// cost about a tenth of the edge's CPU at full click load); info for
// everything else, refusals of clicks and visits included.
func accessLogLevel(path string, status int) slog.Level {
	switch {
	case status >= 500:
		return slog.LevelError
	case status < 400 && (path == "/api/v1/track/click" || path == "/api/v1/track/visit"):
		return slog.LevelDebug
	default:
		return slog.LevelInfo
	}
}

// withDeadline gives the request a context with a deadline that every
// Postgres and Redis call inherits (fiber's own contexts are never
// cancelled).
func (s *Server) withDeadline(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.RequestTimeout)
	defer cancel()
	c.SetUserContext(ctx)
	return c.Next()
}

// withBodyLimit refuses bodies over 64 KiB, except on the processor
// webhook routes, which take up to 1 MiB (the app-wide limit that the
// server enforces while reading), and on the rate-limited routes, whose
// limiter refuses them itself with the route's headers (limitedRoute).
func (s *Server) withBodyLimit(limit int) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if len(c.Body()) > limit && !isWebhookPath(c.Path()) && !s.isLimitedRoute(c.Method(), c.Path()) {
			return errBodyTooLarge(limit)
		}
		return c.Next()
	}
}

func isWebhookPath(p string) bool {
	return strings.HasPrefix(p, "/api/v1/webhooks/") || strings.HasPrefix(p, "/webhooks/")
}

// withoutRequestIDBelow500 removes X-Request-ID from a route's answers
// below 500: the spec's one exception, CLI status, whose 200, 401 and 429
// carry no request id while its 500 does. It renders the route's errors
// itself so that it sees their status.
func (s *Server) withoutRequestIDBelow500(c *fiber.Ctx) error {
	if err := c.Next(); err != nil {
		if herr := s.app.Config().ErrorHandler(c, err); herr != nil {
			return herr
		}
	}
	if c.Response().StatusCode() < fiber.StatusInternalServerError {
		c.Response().Header.Del(headerRequestID)
	}
	return nil
}
