package ingest

import (
	"html"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// pagePrefixes are the paths of the dashboard's web pages (ingest/web),
// whose refusals are HTML pages rather than the API's JSON envelope.
var pagePrefixes = []string{"/app", "/partner", "/login", "/logout", "/auth"}

// isPagePath reports whether p is a page of the dashboard.
func isPagePath(p string) bool {
	for _, pre := range pagePrefixes {
		if p == pre || strings.HasPrefix(p, pre+"/") {
			return true
		}
	}
	return false
}

// renderPageError writes an error raised before the pages' own handlers
// (a form over the body limit, a request fasthttp could not read) as a
// small HTML page that says why: the pages render every later error
// themselves, and a browser must never be shown a JSON envelope.
func renderPageError(c *fiber.Ctx, status int, message string) error {
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set(fiber.HeaderXFrameOptions, "DENY")
	c.Set(fiber.HeaderContentSecurityPolicy, "default-src 'none'; frame-ancestors 'none'; base-uri 'none'")
	return c.Status(status).SendString(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Something went wrong · partnertrack</title></head>
<body><main><h1>Something went wrong</h1>
<p class="form-error" role="alert">` + html.EscapeString(message) + `</p>
<p><a href="/login">Back to sign-in</a></p></main></body></html>
`)
}
