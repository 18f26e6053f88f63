package ingest

import (
	"bytes"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// Messages of a query string or path parameter that is not text.
const (
	msgBadQuery = "Query parameters must be valid UTF-8 text without NUL characters"
	msgBadPath  = "Path parameters must be valid UTF-8 text without NUL characters"
)

// paramsErrKey holds the refusal of a request whose query string or path
// is not text, until the route's error style is known.
type paramsErrKey struct{}

// withTextParams checks, before routing, that every percent-decoded path
// segment and every query key and value is valid UTF-8 without NUL:
// Postgres text refuses both, so a lookup by such a value answered 500,
// and the same value differing only in bad bytes would be another id.
// The route's envelope is not known before routing, so the refusal waits
// in the request's locals for the first handler that sets the route's
// error style (withStyle, or requireOperator for the operator API), which
// returns it to the app's one ErrorHandler. Routes with no error style
// (probes, the tracker script, the error reference, /metrics) read no
// parameter.
func withTextParams(c *fiber.Ctx) error {
	if err := textParams(c); err != nil {
		c.Locals(paramsErrKey{}, err)
	}
	return c.Next()
}

// paramsError is the refusal withTextParams kept for this request, if any.
func paramsError(c *fiber.Ctx) error {
	err, _ := c.Locals(paramsErrKey{}).(error)
	return err
}

// textParams checks the path (as sent: fiber routes on the raw path) and
// the query string (fasthttp decodes its keys and values).
func textParams(c *fiber.Ctx) error {
	if !isText(percentDecode(c.Request().URI().PathOriginal())) {
		return ledger.NewError(ledger.EInvalid, msgBadPath)
	}
	ok := true
	c.Context().QueryArgs().VisitAll(func(k, v []byte) {
		ok = ok && isText(k) && isText(v)
	})
	if !ok {
		return ledger.NewError(ledger.EInvalid, msgBadQuery)
	}
	return nil
}

// isText reports whether b is valid UTF-8 without NUL.
func isText(b []byte) bool {
	return bytes.IndexByte(b, 0) < 0 && utf8.Valid(b)
}

// percentDecode decodes each %XX of a path; a % not followed by two hex
// digits stays as it is, as fasthttp leaves it. A decoded '/' only joins
// two segments, which are checked together.
func percentDecode(p []byte) []byte {
	if bytes.IndexByte(p, '%') < 0 {
		return p
	}
	out := make([]byte, 0, len(p))
	for i := 0; i < len(p); i++ {
		if p[i] == '%' && i+2 < len(p) {
			hi, ok1 := unhex(p[i+1])
			lo, ok2 := unhex(p[i+2])
			if ok1 && ok2 {
				out = append(out, hi<<4|lo)
				i += 2
				continue
			}
		}
		out = append(out, p[i])
	}
	return out
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
