package ingest

import (
	"net"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// msgHostRefused refuses a request for a host name the edge does not
// serve (Options.AllowedHosts).
const msgHostRefused = "This server does not answer for that host name"

// withAllowedHosts refuses requests whose Host header names none of the
// hosts (compared without the port, case-insensitively). With the
// development sign-in on, the edge listens on loopback only, but a page
// a developer opens could re-point its own name at 127.0.0.1 (DNS
// rebinding) and drive the edge as its own origin; the Host header it
// must send names that page's domain, not ours.
func withAllowedHosts(hosts []string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		host := string(c.Request().Host())
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.Trim(strings.ToLower(host), "[]")
		if !slices.Contains(hosts, host) {
			c.Set(fiber.HeaderContentType, fiber.MIMETextPlainCharsetUTF8)
			return c.Status(fiber.StatusMisdirectedRequest).SendString(msgHostRefused)
		}
		return c.Next()
	}
}
