package ledger

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzStorableJSON: what StorableJSON keeps is one valid JSON value with
// no NUL escape and no number jsonb refuses, and keeping it again changes
// nothing.
func FuzzStorableJSON(f *testing.F) {
	for _, s := range []string{`[]`, `{"a":[1,2.5,"x"]}`, `"a\u0000b"`, `"\ud800"`, `1e400`, `12345678901234567890`, `{"a":1}{}`,
		`[` + strings.Repeat(`[`, 200) + strings.Repeat(`]`, 200) + `]`, "\"\xff\"", `{"\u0000":null}`} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, raw []byte, replaceNUL bool) {
		out, ok := StorableJSON(raw, replaceNUL)
		if !ok {
			return
		}
		if !json.Valid(out) || strings.Contains(string(out), `\u0000`) {
			t.Fatalf("%q → %q", raw, out)
		}
		again, ok := StorableJSON(out, replaceNUL)
		if !ok || string(again) != string(out) {
			t.Fatalf("%q → %q → %q, %v", raw, out, again, ok)
		}
	})
}
