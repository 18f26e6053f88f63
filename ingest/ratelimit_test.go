package ingest

import (
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
)

func TestRateLimitSaleRefundBucket(t *testing.T) {
	b := setup(t)
	mountKeyRoutes(b.srv)
	w := MustWorld(t, b.app)
	// Pin the clock to the start of a window so all requests share it.
	start := b.clock.Now().Truncate(time.Minute).Add(time.Second)
	b.clock.Set(start)
	reset := strconv.FormatInt(start.Truncate(time.Minute).Add(time.Minute).Unix(), 10)

	for i := 1; i <= 120; i++ {
		path := "/test/sale"
		if i%2 == 0 {
			path = "/test/refund" // sale and refund share one bucket
		}
		r := do(t, b.app, req{"POST", path, map[string]any{}, bearer(w.liveKey)})
		if r.Status != 200 {
			t.Fatalf("request %d: %d %s", i, r.Status, r.Raw)
		}
		if r.Header.Get("X-RateLimit-Limit") != "120" || r.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(120-i) ||
			r.Header.Get("X-RateLimit-Reset") != reset {
			t.Fatalf("request %d headers: %v", i, r.Header)
		}
		if r.Header.Get("Retry-After") != "" {
			t.Fatalf("Retry-After on a 200")
		}
	}
	r := do(t, b.app, req{"POST", "/test/refund", map[string]any{}, bearer(w.liveKey)})
	if r.Status != 429 {
		t.Fatalf("121st request: %d", r.Status)
	}
	if r.Header.Get("Retry-After") != "59" || r.Header.Get("X-RateLimit-Remaining") != "0" || r.Header.Get("X-RateLimit-Reset") != reset {
		t.Fatalf("429 headers: %v", r.Header)
	}
	if _, ok := r.Body["data"]; ok {
		t.Fatalf("429 is a typed envelope: %s", r.Raw)
	}
	e := r.Body["error"].(map[string]any)
	if e["code"] != "rate_limited" || e["status"] != float64(429) || e["retry_after_seconds"] != float64(59) || e["message"] == "" {
		t.Fatalf("429 body: %s", r.Raw)
	}

	// Another key, and callers without a token, have their own buckets.
	other := MustWorld(t, b.app)
	if r := do(t, b.app, req{"POST", "/test/sale", map[string]any{}, bearer(other.liveKey)}); r.Status != 200 || r.Header.Get("X-RateLimit-Remaining") != "119" {
		t.Fatalf("other key: %d %v", r.Status, r.Header)
	}
	if r := do(t, b.app, req{"POST", "/test/sale", map[string]any{}, nil}); r.Status != 401 || r.Header.Get("X-RateLimit-Remaining") != "119" {
		t.Fatalf("no token falls back to the IP bucket: %d %v", r.Status, r.Header)
	}

	// The next window starts afresh.
	b.clock.Set(start.Add(time.Minute))
	if r := do(t, b.app, req{"POST", "/test/sale", map[string]any{}, bearer(w.liveKey)}); r.Status != 200 {
		t.Fatalf("next window: %d", r.Status)
	}
}

func TestRateLimitRefusedBeforeHandler(t *testing.T) {
	b := setup(t)
	calls := 0
	b.app.Post("/test/click", b.srv.rateLimit("click", limitClick, byIP), func(c *fiber.Ctx) error {
		calls++
		return c.JSON(fiber.Map{"success": true})
	})
	b.clock.Set(b.clock.Now().Truncate(time.Minute))
	ip := map[string]string{"X-Forwarded-For": "203.0.113.7"}
	for i := 0; i < 60; i++ {
		if r := do(t, b.app, req{"POST", "/test/click", map[string]any{}, ip}); r.Status != 200 {
			t.Fatalf("click %d: %d", i, r.Status)
		}
	}
	if r := do(t, b.app, req{"POST", "/test/click", map[string]any{}, ip}); r.Status != 429 {
		t.Fatalf("61st click: %d", r.Status)
	}
	if calls != 60 {
		t.Fatalf("handler ran %d times, want 60: a refused request reached it", calls)
	}
	// Per IP: another client is unaffected, and a token does not change an
	// IP-counted bucket.
	if r := do(t, b.app, req{"POST", "/test/click", map[string]any{}, map[string]string{"X-Forwarded-For": "203.0.113.8"}}); r.Status != 200 {
		t.Fatalf("other IP: %d", r.Status)
	}
	h := map[string]string{"X-Forwarded-For": "203.0.113.7", "Authorization": "Bearer aff_x"}
	if r := do(t, b.app, req{"POST", "/test/click", map[string]any{}, h}); r.Status != 429 {
		t.Fatalf("token on an IP bucket: %d", r.Status)
	}
}

func TestClientIP(t *testing.T) {
	b := setup(t)
	b.app.Get("/test/ip", func(c *fiber.Ctx) error { return c.SendString(b.srv.clientIP(c)) })
	for _, tc := range []struct {
		desc, xff, want string
	}{
		{"no header: the peer", "", "0.0.0.0"},
		{"one hop", "198.51.100.4", "198.51.100.4"},
		{"forged left part ignored", "6.6.6.6, 198.51.100.4", "198.51.100.4"},
		{"garbage hop stops the walk", "198.51.100.4, not-an-ip", "0.0.0.0"},
		{"ipv6", "2001:db8::1", "2001:db8::1"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			h := map[string]string{}
			if tc.xff != "" {
				h["X-Forwarded-For"] = tc.xff
			}
			r := do(t, b.app, req{"GET", "/test/ip", nil, h})
			if string(r.Raw) != tc.want {
				t.Fatalf("client IP = %q, want %q", r.Raw, tc.want)
			}
		})
	}

	t.Run("untrusted peer's header ignored", func(t *testing.T) {
		s := newTestServer(b.db, b.clock)
		s.cfg.TrustedProxies = nil
		s.app.Get("/test/ip", func(c *fiber.Ctx) error { return c.SendString(s.clientIP(c)) })
		r := do(t, s.App(), req{"GET", "/test/ip", nil, map[string]string{"X-Forwarded-For": "198.51.100.4"}})
		if string(r.Raw) != "0.0.0.0" {
			t.Fatalf("client IP = %q", r.Raw)
		}
	})

	t.Run("trusted hops skipped from the right", func(t *testing.T) {
		s := newTestServer(b.db, b.clock)
		s.cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("0.0.0.0/32"), netip.MustParsePrefix("10.0.0.0/8")}
		s.app.Get("/test/ip", func(c *fiber.Ctx) error { return c.SendString(s.clientIP(c)) })
		r := do(t, s.App(), req{"GET", "/test/ip", nil, map[string]string{"X-Forwarded-For": "6.6.6.6, 198.51.100.4, 10.1.2.3"}})
		if string(r.Raw) != "198.51.100.4" {
			t.Fatalf("client IP = %q", r.Raw)
		}
	})
}
