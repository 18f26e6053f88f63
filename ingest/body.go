package ingest

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ledger"
)

// fields is a JSON object body decoded one level deep. Each accessor
// returns a ledger.Input that tells an absent field (missing or null) from
// a present one of the wrong shape, so that handlers report each field's
// own message in the spec's order.
type fields map[string]json.RawMessage

// msgNotJSON is the message of a body that is not a JSON object.
const msgNotJSON = "Request body must be a JSON object"

// msgNotUTF8 is the message of a body that is not valid UTF-8, which JSON
// must be (RFC 8259 §8.1).
const msgNotUTF8 = "Request body must be valid UTF-8"

// parseFields decodes the request body as a JSON object. An empty body is
// an empty object; anything else that is not a JSON object is a 400, and
// so is a body that is not valid UTF-8 (encoding/json would turn each bad
// byte into U+FFFD, storing values other than sent: two ids differing in
// bad bytes only would become one).
func parseFields(c *fiber.Ctx) (fields, error) {
	body := bytes.TrimSpace(c.Body())
	if len(body) == 0 {
		return fields{}, nil
	}
	if !utf8.Valid(body) {
		return nil, ledger.NewError(ledger.EInvalid, msgNotUTF8)
	}
	return decodeFields(body)
}

func decodeFields(body []byte) (fields, error) {
	if len(body) == 0 || body[0] != '{' {
		return nil, ledger.NewError(ledger.EInvalid, msgNotJSON)
	}
	var f fields
	if err := json.Unmarshal(body, &f); err != nil {
		return nil, ledger.NewError(ledger.EInvalid, msgNotJSON)
	}
	if f == nil {
		f = fields{}
	}
	return f, nil
}

func (f fields) raw(name string) (json.RawMessage, bool) {
	v, ok := f[name]
	if !ok || string(v) == "null" {
		return nil, false
	}
	return v, true
}

// Has reports whether a non-null value was sent.
func (f fields) Has(name string) bool {
	_, ok := f.raw(name)
	return ok
}

// String reads a JSON string. A string holding a NUL byte is of the wrong
// shape (Postgres text cannot store it), and so is one holding a lone
// surrogate escape (encoding/json would read it as U+FFFD, merging ids that
// differ there: ledger.HasLoneSurrogate).
func (f fields) String(name string) ledger.Input[string] {
	v, ok := f.raw(name)
	if !ok {
		return ledger.Input[string]{}
	}
	var s string
	if v[0] != '"' || ledger.HasLoneSurrogate(v) || json.Unmarshal(v, &s) != nil || strings.IndexByte(s, 0) >= 0 {
		return ledger.BadInput[string]()
	}
	return ledger.Some(s)
}

// Text reads a JSON string, or any other JSON value as the JSON text sent
// (5, true, {"a":1}): for a field whose refusal repeats the value
// (`Invalid commission_type: <value>`), which then shows what came.
func (f fields) Text(name string) ledger.Input[string] {
	if v, ok := f.raw(name); ok && v[0] != '"' {
		return ledger.Some(string(v))
	}
	return f.String(name)
}

// Int reads a JSON integer that fits in 64 bits. Fractions, exponents,
// strings and overflowing numbers are of the wrong shape.
func (f fields) Int(name string) ledger.Input[int64] {
	v, ok := f.raw(name)
	if !ok {
		return ledger.Input[int64]{}
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return ledger.BadInput[int64]()
	}
	return ledger.Some(n)
}

// Decimal reads a JSON number exactly (no float conversion).
func (f fields) Decimal(name string) ledger.Input[decimal.Decimal] {
	v, ok := f.raw(name)
	if !ok {
		return ledger.Input[decimal.Decimal]{}
	}
	c := v[0]
	if c != '-' && (c < '0' || c > '9') {
		return ledger.BadInput[decimal.Decimal]()
	}
	var num json.Number
	if json.Unmarshal(v, &num) != nil || len(num) > 40 {
		return ledger.BadInput[decimal.Decimal]()
	}
	d, err := decimal.NewFromString(num.String())
	if err != nil {
		return ledger.BadInput[decimal.Decimal]()
	}
	return ledger.Some(d)
}

// Bool reads a JSON boolean.
func (f fields) Bool(name string) ledger.Input[bool] {
	v, ok := f.raw(name)
	if !ok {
		return ledger.Input[bool]{}
	}
	switch string(v) {
	case "true":
		return ledger.Some(true)
	case "false":
		return ledger.Some(false)
	}
	return ledger.BadInput[bool]()
}

// Object reads a nested JSON object; a value that is not an object is of
// the wrong shape.
func (f fields) Object(name string) ledger.Input[fields] {
	v, ok := f.raw(name)
	if !ok {
		return ledger.Input[fields]{}
	}
	obj, err := decodeFields(v)
	if err != nil {
		return ledger.BadInput[fields]()
	}
	return ledger.Some(obj)
}

// Strings reads a JSON array of strings, each read as String reads one.
func (f fields) Strings(name string) ledger.Input[[]string] {
	v, ok := f.raw(name)
	if !ok {
		return ledger.Input[[]string]{}
	}
	var out []string
	if v[0] != '[' || ledger.HasLoneSurrogate(v) || json.Unmarshal(v, &out) != nil {
		return ledger.BadInput[[]string]()
	}
	for _, s := range out {
		if strings.IndexByte(s, 0) >= 0 {
			return ledger.BadInput[[]string]()
		}
	}
	return ledger.Some(out)
}
