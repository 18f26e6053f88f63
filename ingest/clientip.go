package ingest

import (
	"net/netip"
	"strings"

	"github.com/gofiber/fiber/v2"
)

type clientIPKey struct{}

// clientIP returns the caller's address (see resolveClientIP), worked out
// once a request: the rate limiter, the click's enrichment and the access
// log each ask for it.
func (s *Server) clientIP(c *fiber.Ctx) string {
	if ip, ok := c.Locals(clientIPKey{}).(string); ok {
		return ip
	}
	ip := s.resolveClientIP(c)
	c.Locals(clientIPKey{}, ip)
	return ip
}

// resolveClientIP returns the caller's address. X-Forwarded-For is
// believed only when the connection comes from a trusted proxy, and is
// read from the right: each hop appends the address it saw, so the
// rightmost address that is not a trusted proxy is the client (everything
// left of it may be forged).
func (s *Server) resolveClientIP(c *fiber.Ctx) string {
	remote, ok := netip.AddrFromSlice(c.Context().RemoteIP())
	if !ok {
		return c.Context().RemoteIP().String()
	}
	remote = remote.Unmap()
	if !s.trusted(remote) {
		return remote.String()
	}
	client := remote
	headers := c.Request().Header.PeekAll(fiber.HeaderXForwardedFor)
	for h := len(headers) - 1; h >= 0; h-- {
		hops := strings.Split(string(headers[h]), ",")
		for i := len(hops) - 1; i >= 0; i-- {
			addr, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
			if err != nil {
				return client.String() // a garbled hop: stop at the last good one
			}
			client = addr.Unmap()
			if !s.trusted(client) {
				return client.String()
			}
		}
	}
	return client.String()
}

func (s *Server) trusted(a netip.Addr) bool {
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
