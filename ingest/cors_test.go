package ingest

import (
	"testing"

	"github.com/gofiber/fiber/v2"
)

func TestBrowserCORSOnlyOnBrowserRoutes(t *testing.T) {
	b := setup(t)
	b.srv.browserRoute("POST", "/test/browser", func(c *fiber.Ctx) error { return c.JSON(fiber.Map{"success": true}) })
	mountKeyRoutes(b.srv)
	origin := map[string]string{"Origin": "https://landing.example", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}

	pre := do(t, b.app, req{"OPTIONS", "/test/browser", nil, origin})
	if pre.Status != 204 || pre.Header.Get("Access-Control-Allow-Origin") != "*" ||
		pre.Header.Get("Access-Control-Allow-Headers") == "" {
		t.Fatalf("preflight: %d %v", pre.Status, pre.Header)
	}
	r := do(t, b.app, req{"POST", "/test/browser", map[string]any{}, map[string]string{"Origin": "https://landing.example"}})
	if r.Status != 200 || r.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("browser call: %d %v", r.Status, r.Header)
	}
	// A server route answers no cross-origin call.
	r = do(t, b.app, req{"POST", "/test/sale", map[string]any{}, map[string]string{"Origin": "https://landing.example"}})
	if r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("sale route allows cross-origin calls: %v", r.Header)
	}
}
