package ingest

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/tidwall/gjson"

	"github.com/partnertrack/partnertrack/ledger"
)

// leanFields is what fields is, for the click and visit hot path: the
// same accessors with the same meaning, read without building a map of
// raw messages and without reflection for plain strings, which together
// cost most of a click's CPU. The body is checked by a strict validator
// (validJSON), then one pass notes where each member's value lies; each
// accessor reads its value exactly as fields reads the same bytes
// (encoding/json decodes any string holding an escape).
// TestLeanFieldsMatchFields and FuzzLeanFieldsMatchFields hold the two to
// the same answers.
type leanFields struct {
	body    []byte // the object's JSON text; members index into it
	members []member
}

// member is one key of an object and its value, both as JSON text, as
// offsets into the body (it is the request's buffer: a leanFields lives
// no longer than its handler, and every value it returns is a copy).
// Offsets rather than slices make the list a third of the size, and
// it is allocated on every click.
type member struct {
	keyStart, keyEnd, valStart, valEnd uint32
}

// key is the i-th member's key, with its quotes.
func (f *leanFields) key(i int) []byte {
	return f.body[f.members[i].keyStart:f.members[i].keyEnd]
}

// val is the i-th member's value.
func (f *leanFields) val(i int) []byte {
	return f.body[f.members[i].valStart:f.members[i].valEnd]
}

// keyIs reports whether a key (with its quotes) is name.
func keyIs(key []byte, name string) bool {
	if bytes.IndexByte(key, '\\') < 0 {
		return string(key[1:len(key)-1]) == name
	}
	return unquote(key) == name
}

// parseLean reads the request body as parseFields does: an empty body is
// an empty object, anything that is not a JSON object (or not UTF-8) is a
// 400.
func parseLean(c *fiber.Ctx) (leanFields, error) {
	body := bytes.TrimSpace(c.Body())
	if len(body) == 0 {
		return leanFields{}, nil
	}
	if !utf8.Valid(body) {
		return leanFields{}, ledger.NewError(ledger.EInvalid, msgNotUTF8)
	}
	if body[0] != '{' || !validJSON(body) {
		return leanFields{}, ledger.NewError(ledger.EInvalid, msgNotJSON)
	}
	return scanObject(body), nil
}

// stdDepthBytes is the shortest body that can nest deeper than the
// standard decoder's limit of 10000 levels (an opening and a closing
// byte per level).
const stdDepthBytes = 2 * 10001

// validJSON reports whether body is valid JSON exactly as json.Valid
// does. gjson's validator agrees with it on every input except nesting
// past the standard's depth limit, which gjson does not have, and takes
// a quarter of its time on a click (the largest single cost of the
// handler with the standard's); a body long enough to nest that deep is
// left to the standard. TestValidJSONMatchesStandard and
// FuzzValidJSONMatchesStandard hold the two to the same answers.
func validJSON(body []byte) bool {
	if len(body) < stdDepthBytes {
		return gjson.ValidBytes(body)
	}
	return json.Valid(body)
}

// scanObject lists the members of a valid JSON object.
func scanObject(b []byte) leanFields {
	f := leanFields{body: b, members: make([]member, 0, 16)}
	i := skipSpace(b, 1)
	for i < len(b) && b[i] == '"' {
		end := skipString(b, i)
		m := member{keyStart: uint32(i), keyEnd: uint32(end)}
		i = skipSpace(b, end)
		i = skipSpace(b, i+1) // past ':'
		end = skipValue(b, i)
		m.valStart, m.valEnd = uint32(i), uint32(end)
		f.members = append(f.members, m)
		i = skipSpace(b, end)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	return f
}

// unquote returns the text of a JSON string (valid JSON).
func unquote(q []byte) string {
	if bytes.IndexByte(q, '\\') < 0 {
		if utf8.Valid(q) {
			return string(q[1 : len(q)-1])
		}
		return replaceInvalid(q[1 : len(q)-1])
	}
	var s string
	json.Unmarshal(q, &s) // cannot fail on valid JSON
	return s
}

// replaceInvalid replaces each byte that is not part of valid UTF-8 with
// U+FFFD, as encoding/json does.
func replaceInvalid(b []byte) string {
	out := make([]byte, 0, len(b)+8)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, b[:size]...)
		}
		b = b[size:]
	}
	return string(out)
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string that starts at b[i].
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the index after the value that starts at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i
}

// raw returns the JSON text of the last member called name, or nil when
// it is absent or null (the last of duplicate keys wins, as in a map).
func (f leanFields) raw(name string) []byte {
	for i := len(f.members) - 1; i >= 0; i-- {
		if keyIs(f.key(i), name) {
			if v := f.val(i); string(v) != "null" {
				return v
			}
			return nil
		}
	}
	return nil
}

// String reads a JSON string; one holding NUL or a lone surrogate escape
// is of the wrong shape, as in fields.String. Both need an escape, so a
// string without one is taken as it is.
func (f leanFields) String(name string) ledger.Input[string] {
	v := f.raw(name)
	if v == nil {
		return ledger.Input[string]{}
	}
	if v[0] != '"' {
		return ledger.BadInput[string]()
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return ledger.Some(unquote(v))
	}
	if ledger.HasLoneSurrogate(v) {
		return ledger.BadInput[string]()
	}
	s := unquote(v)
	if containsNUL(s) {
		return ledger.BadInput[string]()
	}
	return ledger.Some(s)
}

func containsNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}

// Int reads a JSON integer that fits in 64 bits; fractions, exponents,
// strings and overflowing numbers are of the wrong shape.
func (f leanFields) Int(name string) ledger.Input[int64] {
	v := f.raw(name)
	if v == nil {
		return ledger.Input[int64]{}
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return ledger.BadInput[int64]()
	}
	return ledger.Some(n)
}

// Bool reads a JSON boolean.
func (f leanFields) Bool(name string) ledger.Input[bool] {
	switch v := f.raw(name); {
	case v == nil:
		return ledger.Input[bool]{}
	case string(v) == "true":
		return ledger.Some(true)
	case string(v) == "false":
		return ledger.Some(false)
	}
	return ledger.BadInput[bool]()
}

// Object reads a nested JSON object.
func (f leanFields) Object(name string) ledger.Input[leanFields] {
	v := f.raw(name)
	if v == nil {
		return ledger.Input[leanFields]{}
	}
	if v[0] != '{' {
		return ledger.BadInput[leanFields]()
	}
	return ledger.Some(scanObject(v))
}
