package web

import (
	"bytes"
	"mime"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
)

// msgNotText is the refusal of a query string or form that is not text,
// worded as the API words its own (ingest/params.go).
const msgNotText = "Query parameters and form fields must be valid UTF-8 text without NUL characters. Go back and check what was typed."

// textInput refuses a page request whose query string or form holds a
// key or value that is not text: the API refuses such values, but the
// page's JSON encoding would have turned invalid UTF-8 into U+FFFD and
// sent it on, stored as it never was typed; and a query the page does not
// read would have been ignored where the API refuses it.
func textInput(c *fiber.Ctx) error {
	ok := true
	visit := func(k, v []byte) { ok = ok && isText(k) && isText(v) }
	c.Context().QueryArgs().VisitAll(visit)
	ct, _, _ := mime.ParseMediaType(c.Get(fiber.HeaderContentType))
	switch ct {
	case fiber.MIMEApplicationForm:
		c.Request().PostArgs().VisitAll(visit)
	case fiber.MIMEMultipartForm:
		if mf, err := c.MultipartForm(); err == nil {
			for k, vs := range mf.Value {
				for _, v := range vs {
					visit([]byte(k), []byte(v))
				}
			}
		}
	}
	if !ok {
		return fiber.NewError(fiber.StatusBadRequest, msgNotText)
	}
	return nil
}

// isText reports whether b is valid UTF-8 without NUL.
func isText(b []byte) bool {
	return bytes.IndexByte(b, 0) < 0 && utf8.Valid(b)
}
