package ledger

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// StorableJSON re-encodes one JSON value so that a jsonb column holds it
// as sent: lone surrogate escapes become U+FFFD (as encoding/json reads
// every other string) and numbers keep their text. It reports false for
// what jsonb cannot hold: a number beyond the range of a double (jsonb's
// numeric refuses the largest), and, unless replaceNUL, a NUL character in
// a string or key; with replaceNUL a NUL becomes U+FFFD instead (for text
// the service must store whatever it holds, such as a signed processor
// event). Object keys come out sorted, which jsonb does not keep anyway.
func StorableJSON(raw []byte, replaceNUL bool) (json.RawMessage, bool) {
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
