package ingest

import (
	_ "embed"

	"github.com/gofiber/fiber/v2"
)

//go:embed static/errors.html
var errorsPage []byte

// errorReference serves the error reference that docs_url and the
// deprecation Link header point to.
func errorReference(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "public, max-age=3600")
	return c.Send(errorsPage)
}
