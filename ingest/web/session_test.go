package web

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
)

// TestCookiesAreSecureOnHTTPS: behind an https PUBLIC_BASE_URL every
// cookie is Secure; on plain http (local development) it cannot be.
func TestCookiesAreSecureOnHTTPS(t *testing.T) {
	for base, secure := range map[string]bool{"https://track.example": true, "http://localhost:8080": false} {
		p := &Pages{secure: strings.HasPrefix(base, "https://"), now: time.Now}
		app := fiber.New()
		app.Get("/", func(c *fiber.Ctx) error {
			p.setCookie(c, brandCookie, "tok", "/", time.Hour)
			return nil
		})
		resp, err := app.Test(httptest.NewRequest("GET", "/", nil))
		if err != nil {
			t.Fatal(err)
		}
		got := resp.Header.Get("Set-Cookie")
		if strings.Contains(strings.ToLower(got), "; secure") != secure || !strings.Contains(got, "HttpOnly") || !strings.Contains(got, "SameSite=Lax") {
			t.Errorf("%s: Set-Cookie %q", base, got)
		}
	}
}

func TestCutTextKeepsCharactersWhole(t *testing.T) {
	if got := cutText("héllo wörld", 8); got != "héll…" {
		t.Fatalf("cutText: %q", got)
	}
	if got := cutText(strings.Repeat("é", 150), maxFlash); len(got) > maxFlash || !strings.HasSuffix(got, "…") {
		t.Fatalf("cutText: %d bytes %q", len(got), got[len(got)-6:])
	}
	if got := cutText("short", maxFlash); got != "short" {
		t.Fatalf("cutText: %q", got)
	}
}
