package ingest

import (
	_ "embed"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ingest/apidoc"
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

// openAPIDocument serves the OpenAPI 3.1 description of every route.
func openAPIDocument(c *fiber.Ctx) error {
	doc, err := apidoc.JSON()
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "public, max-age=300")
	return c.Send(doc)
}

// apiReference serves the API reference page rendered from the document.
func apiReference(c *fiber.Ctx) error {
	page, err := apidoc.Reference()
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "public, max-age=300")
	return c.Send(page)
}
