package ledger

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// StorableJSON re-encodes one JSON value so that a jsonb column holds it
// as sent; numbers keep their text. It reports false for what jsonb cannot
// hold: a number beyond the range of a double (jsonb's numeric refuses the
// largest), and, unless replaceNUL, a NUL character in a string or key or
// a lone surrogate escape (encoding/json would store it as U+FFFD, a value
// other than sent, see HasLoneSurrogate). With replaceNUL both become
// U+FFFD instead (for text the service must store whatever it holds, such
// as a signed processor event). Object keys come out sorted, which jsonb
// does not keep anyway.
func StorableJSON(raw []byte, replaceNUL bool) (json.RawMessage, bool) {
	if !replaceNUL && HasLoneSurrogate(raw) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil, false
	}
	v, ok := storable(v, replaceNUL)
	if !ok {
		return nil, false
	}
	out, err := json.Marshal(v)
	return out, err == nil
}

func storable(v any, replaceNUL bool) (any, bool) {
	switch x := v.(type) {
	case string:
		return noNUL(x, replaceNUL)
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		return x, err == nil && !math.IsInf(f, 0)
	case []any:
		for i, e := range x {
			var ok bool
			if x[i], ok = storable(e, replaceNUL); !ok {
				return nil, false
			}
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			clean, ok := noNUL(k, replaceNUL)
			if !ok {
				return nil, false
			}
			if out[clean], ok = storable(e, replaceNUL); !ok {
				return nil, false
			}
		}
		return out, true
	}
	return v, true
}

func noNUL(s string, replace bool) (string, bool) {
	if strings.IndexByte(s, 0) < 0 {
		return s, true
	}
	if !replace {
		return "", false
	}
	return strings.ReplaceAll(s, "\x00", "\uFFFD"), true
}

// HasLoneSurrogate reports whether JSON text holds a \u escape of a UTF-16
// surrogate (U+D800 to U+DFFF) that is not half of a valid pair (a high
// surrogate followed at once by an escaped low one). encoding/json reads
// each such escape as U+FFFD, so "a\ud800", "a\udfff" and "a\ufffd" would
// be stored as one value: decoders refuse strings that hold one instead.
// It scans escapes only (raw bytes are UTF-8, checked elsewhere), and
// skips an escaped backslash, so `\\ud800` (a backslash, then text) is
// not a surrogate.
func HasLoneSurrogate(raw []byte) bool {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		i++ // the escaped character
		if i >= len(raw) || raw[i] != 'u' {
			continue
		}
		r, ok := hex4(raw, i+1)
		if !ok {
			continue
		}
		i += 4
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return true // a low surrogate without its high half
		case r >= 0xD800 && r <= 0xDBFF:
			if i+6 >= len(raw) || raw[i+1] != '\\' || raw[i+2] != 'u' {
				return true
			}
			low, ok := hex4(raw, i+3)
			if !ok || low < 0xDC00 || low > 0xDFFF {
				return true
			}
			i += 6
		}
	}
	return false
}

// hex4 reads the four hex digits at raw[i:i+4].
func hex4(raw []byte, i int) (rune, bool) {
	if i+4 > len(raw) {
		return 0, false
	}
	var r rune
	for _, c := range raw[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
