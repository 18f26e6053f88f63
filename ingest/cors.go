package ingest

import (
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/cors"
)

// browserCORS lets landing pages on any origin call the routes meant for
// direct browser calls (click, browser-mode lead, visit, config) and
// answers their preflights. Those calls carry no credentials (no cookies;
// the tracker sends JSON only), so any origin is allowed. No other route
// answers cross-origin requests.
var browserCORS = cors.New(cors.Config{
	AllowOrigins: "*",
	AllowMethods: "GET,POST,OPTIONS",
	AllowHeaders: "Content-Type, Authorization, X-Request-ID",
	MaxAge:       86400,
})

// browserRoute registers a route meant for direct browser calls together
// with its CORS preflight; each has a rate limit (limitedRoute).
func (s *Server) browserRoute(method, path string, handlers ...fiber.Handler) {
	s.app.Options(path, browserCORS)
	s.limitedRoute(method, path, append([]fiber.Handler{browserCORS}, handlers...)...)
}
