package ingest

import (
	"context"
	"sort"
	"time"

	"github.com/gofiber/fiber/v2"
)

// healthz answers while the process runs.
func (s *Server) healthz(c *fiber.Ctx) error {
	return c.JSON(fiber.Map{"status": "ok"})
}

// readyz reports each dependency. The edge answers what it can while
// either backend is away (clicks fall back to Postgres while Redis is
// down; clicks still queue while Postgres is down), so it stays in the
// load balancer: 200 "ready" when every check passes, 200 "degraded" when
// some fail, and 503 only when every check fails.
func (s *Server) readyz(c *fiber.Ctx) error {
	names := make([]string, 0, len(s.checks))
	for n := range s.checks {
		names = append(names, n)
	}
	sort.Strings(names)
	results := fiber.Map{}
	failed := 0
	for _, n := range names {
		ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
		err := s.checks[n](ctx)
		cancel()
		if err != nil {
			failed++
			results[n] = "error: " + err.Error()
		} else {
			results[n] = "ok"
		}
	}
	switch {
	case failed > 0 && failed == len(names):
		return c.Status(fiber.StatusServiceUnavailable).JSON(fiber.Map{"status": "unavailable", "checks": results})
	case failed > 0:
		return c.JSON(fiber.Map{"status": "degraded", "checks": results})
	}
	return c.JSON(fiber.Map{"status": "ready", "checks": results})
}
