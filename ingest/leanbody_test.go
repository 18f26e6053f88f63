package ingest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/partnertrack/partnertrack/ledger"
)

// leanCorpus holds bodies of every shape the click and visit handlers
// meet, valid and not.
var leanCorpus = []string{
	``, `   `, `{}`, `[]`, `null`, `"x"`, `{`, `{"a":1-2}`, `{"a":NaN}`, `{"a":"x	y"}`, `{"a":01}`,
	`{"affiliate_url":"https://a.example/?aff=x","program_id":12,"additional_data":{"test_mode":true,"program_id":"12"}}`,
	`{"affiliate_url":null,"program_id":null,"additional_data":null}`,
	`{"affiliate_url":42,"program_id":"abc","additional_data":"x"}`,
	`{"affiliate_url":"x","affiliate_url":"y"}`,
	`{"program_id":1.5}`, `{"program_id":1e3}`, `{"program_id":-0}`, `{"program_id":9223372036854775807}`,
	`{"program_id":9223372036854775808}`, `{"program_id":-9223372036854775809}`, `{"program_id":true}`,
	`{"page_url":"a\u0000b"}`, `{"page_url":"caf\u00e9 \ud83d\ude00"}`, `{"page_url":"\"quoted\" \\ \/"}`,
	`{"aff\u0069liate_url":"escaped key"}`, `{"additional_data":{"test_mode":"yes"}}`, `{"additional_data":[]}`,
	`{"additional_data":{"test_mode":false,"test_mode":true}}`, `{"session_id":["a"]}`, `{"x":{"y":{"z":[1,{}]}}}`,
	"{\"page_url\":\"\xff\xfe\"}", `{"page_url":"\ud800 \udc00x \ud83d"}`, `{"page_url":"\u00ff\u0000"}`,
}

var leanNames = []string{"affiliate_url", "program_id", "additional_data", "page_url", "session_id", "x", "missing"}

func fiberCtx(body string) (*fiber.Ctx, func()) {
	app := fiber.New()
	var rc fasthttp.RequestCtx
	rc.Request.SetBodyString(body)
	c := app.AcquireCtx(&rc)
	return c, func() { app.ReleaseCtx(c) }
}

// describe renders what both decoders say about one field.
func describeFields(get func(string) (ledger.Input[string], ledger.Input[int64], ledger.Input[bool], bool, bool)) string {
	out := ""
	for _, n := range leanNames {
		s, i, b, objPresent, objBad := get(n)
		out += fmt.Sprintf("%s: %+v %+v %+v %v %v\n", n, s, i, b, objPresent, objBad)
	}
	return out
}

func compareDecoders(t *testing.T, body string) {
	c, release := fiberCtx(body)
	defer release()
	f, ferr := parseFields(c)
	lf, lerr := parseLean(c)
	if (ferr == nil) != (lerr == nil) || ledger.ErrorMessage(ferr) != ledger.ErrorMessage(lerr) {
		t.Fatalf("body %q: fields err %v, lean err %v", body, ferr, lerr)
	}
	if ferr != nil {
		return
	}
	want := describeFields(func(n string) (ledger.Input[string], ledger.Input[int64], ledger.Input[bool], bool, bool) {
		o := f.Object(n)
		inner := ""
		if o.OK() {
			inner = fmt.Sprint(o.Value.Bool("test_mode"), o.Value.String("program_id"))
		}
		return f.String(n), f.Int(n), f.Bool(n), o.Present, o.Bad || inner == "never"
	})
	got := describeFields(func(n string) (ledger.Input[string], ledger.Input[int64], ledger.Input[bool], bool, bool) {
		o := lf.Object(n)
		return lf.String(n), lf.Int(n), lf.Bool(n), o.Present, o.Bad
	})
	if got != want {
		t.Fatalf("body %q:\nfields:\n%slean:\n%s", body, want, got)
	}
	fo, lo := f.Object("additional_data"), lf.Object("additional_data")
	if fo.OK() && lo.OK() {
		if a, b := fmt.Sprint(fo.Value.Bool("test_mode"), fo.Value.Int("program_id"), fo.Value.String("program_id")),
			fmt.Sprint(lo.Value.Bool("test_mode"), lo.Value.Int("program_id"), lo.Value.String("program_id")); a != b {
			t.Fatalf("body %q additional_data: fields %s, lean %s", body, a, b)
		}
	}
}

func TestLeanFieldsMatchFields(t *testing.T) {
	for _, body := range leanCorpus {
		compareDecoders(t, body)
	}
}

func FuzzLeanFieldsMatchFields(f *testing.F) {
	for _, body := range leanCorpus {
		f.Add(body)
	}
	f.Fuzz(func(t *testing.T, body string) {
		compareDecoders(t, body)
	})
}

// jsonCorpus adds to leanCorpus the inputs where validators tend to
// differ from the standard: numbers, escapes, control bytes and trailing
// text.
var jsonCorpus = append([]string{`{"a":1.}`, `{"a":.5}`, `{"a":1e}`, `{"a":1e+}`, `{"a":-}`, `{"a":-01}`, `{"a":0x1}`,
	`{"a":"\x"}`, `{"a":"\u00"}`, `{"a":"\u00g0"}`, "{\"a\":\"\x01\"}", "{\"a\":\"\x7f\"}", "{\"a\":\v1}",
	`{"a":[1,2,]}`, `{"a":1,}`, `{,"a":1}`, `{"a" 1}`, `{"a":tru}`, `{"a":nul}`, `{}x`, `{"a":1}{}`, `{} `,
	`{"a":"\ud800"}`, `{"a":-0.0e+1}`, `{'a':1}`, `{a:1}`, "{\"a\":1}\x00"}, leanCorpus...)

func TestValidJSONMatchesStandard(t *testing.T) {
	bodies := append([]string{}, jsonCorpus...)
	// Nesting on both sides of the standard's depth limit.
	for _, depth := range []int{9998, 9999, 10000, 10001, 12000} {
		bodies = append(bodies, `{"a":`+strings.Repeat("[", depth)+strings.Repeat("]", depth)+`}`,
			`{"a":`+strings.Repeat(`{"b":`, depth)+`1`+strings.Repeat("}", depth)+`}`)
	}
	for _, body := range bodies {
		if got, want := validJSON([]byte(body)), json.Valid([]byte(body)); got != want {
			t.Errorf("validJSON = %v, json.Valid = %v, body %.60q (%d bytes)", got, want, body, len(body))
		}
	}
}

func FuzzValidJSONMatchesStandard(f *testing.F) {
	for _, body := range jsonCorpus {
		f.Add(body)
	}
	f.Fuzz(func(t *testing.T, body string) {
		if got, want := validJSON([]byte(body)), json.Valid([]byte(body)); got != want {
			t.Fatalf("validJSON = %v, json.Valid = %v, body %q", got, want, body)
		}
	})
}
