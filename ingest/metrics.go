package ingest

import (
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
)

// Request metrics: every answered request is counted by route pattern
// and status (the Prometheus series live in cmd/internal/metrics).

// RequestObserver records answered requests (Prometheus, in cmd).
type RequestObserver interface {
	ObserveRequest(method, route string, status int, d time.Duration)
}

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
