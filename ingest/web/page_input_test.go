package web

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// TestPageInputRefusals: a query or form that is not text is a 400 page
// before any handler reads it, and the edge's rate limit of the sign-in
// routes is a 429 page, not a 500 (pageErrors).
func TestPageInputRefusals(t *testing.T) {
	app := fiber.New()
	limited := false
	Mount(app, Config{Limit: func(c *fiber.Ctx) error {
		if limited {
			return ledger.NewError(ledger.ERateLimited, "Too many requests. Retry after 7 seconds.")
		}
		return c.Next()
	}})
	send := func(method, target, form string) (int, string) {
		t.Helper()
		r := httptest.NewRequest(method, target, strings.NewReader(form))
		if form != "" {
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := app.Test(r, -1)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 303 && !strings.HasPrefix(ct, "text/html") {
			t.Errorf("%s %s: content type %q", method, target, ct)
		}
		return resp.StatusCode, string(body)
	}
	for _, c := range []struct{ method, target, form string }{
		{"GET", "/login?next=%00", ""},
		{"GET", "/login?%ff=1", ""},
		{"GET", "/app/?x=%c3%28", ""},
		{"GET", "/partner/commissions?status=%ed%a0%80", ""},
		{"POST", "/logout", "csrf=a%00b"},
		{"POST", "/app/programs", "csrf=x&name=a%ff%feb"},
		{"POST", "/partner/payouts/method", "csrf=x&paypal_email=%00"},
	} {
		if status, body := send(c.method, c.target, c.form); status != 400 || !strings.Contains(body, "must be valid UTF-8 text without NUL") {
			t.Errorf("%s %s %q: %d %s", c.method, c.target, c.form, status, body)
		}
	}
	// Text is let through: no cookie sends the person to sign in.
	if status, _ := send("GET", "/app/?x=caf%C3%A9", ""); status != 303 {
		t.Errorf("GET /app/ with a text query: %d, want 303", status)
	}
	limited = true
	if status, body := send("GET", "/auth/login", ""); status != 429 || !strings.Contains(body, "Retry after 7 seconds") {
		t.Errorf("rate-limited sign-in: %d %s", status, body)
	}
}
