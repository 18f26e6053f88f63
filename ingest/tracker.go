package ingest

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"strings"

	"github.com/gofiber/fiber/v2"
)

//go:embed static/tracker.js
var trackerSource string

// trackerScript is the browser tracker rendered for the brand prefix,
// with its ETag.
type trackerScript struct {
	body []byte
	etag string
}

// renderTracker puts the brand prefix into the tracker: its cookie names
// (<prefix>_click_id), its data-<prefix>-* attributes and its global
// (window.<prefix>).
func renderTracker(prefix string) trackerScript {
	body := []byte(strings.ReplaceAll(trackerSource, "__PREFIX__", prefix))
	sum := sha256.Sum256(body)
	return trackerScript{body: body, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
}

// trackerCacheControl lets browsers and CDNs keep the script for a day and
// serve a stale copy while they revalidate it for a week more; the ETag
// makes revalidation cheap. The URL is not versioned, so a longer
// lifetime would delay fixes.
const trackerCacheControl = "public, max-age=86400, stale-while-revalidate=604800"

// serveTracker is GET /tracker.js and /js/<prefix>-tracker.js.
func (s *Server) serveTracker(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, trackerCacheControl)
	c.Set(fiber.HeaderETag, s.tracker.etag)
	if match := c.Get(fiber.HeaderIfNoneMatch); match != "" && etagMatches(match, s.tracker.etag) {
		return c.SendStatus(fiber.StatusNotModified)
	}
	c.Set(fiber.HeaderContentType, "application/javascript; charset=utf-8")
	return c.Send(s.tracker.body)
}

// etagMatches reads an If-None-Match list (weak validators compare
// equal, as RFC 9110 says for If-None-Match).
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}
