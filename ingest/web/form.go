package web

import (
	"bytes"
	"encoding/json"
	"html/template"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// form is a submitted form being shown again: its values, and the API's
// refusal placed next to the field it names.
type form struct {
	Name   string            // which form of the page (a page may have several)
	Values map[string]string // what was sent, to fill the fields again
	Errors map[string]string // field name → the API's message
	Error  string            // a refusal that names no field of the form
	order  []string          // the fields in the form's order
}

// readForm keeps the named fields of the submitted form.
func readForm(c *fiber.Ctx, name string, fields ...string) *form {
	f := &form{Name: name, Values: map[string]string{}, Errors: map[string]string{}, order: fields}
	for _, n := range fields {
		f.Values[n] = strings.TrimSpace(c.FormValue(n))
	}
	return f
}

// Value is the sent value of a field.
func (f *form) Value(name string) string {
	if f == nil {
		return ""
	}
	return f.Values[name]
}

// Err is the message to show next to a field.
func (f *form) Err(name string) string {
	if f == nil {
		return ""
	}
	return f.Errors[name]
}

// unshown is a message of the form's refusal that the rendered page does
// not show ("" when the page shows them all, or there is none).
func (f *form) unshown(page []byte) string {
	if f == nil {
		return ""
	}
	msgs := []string{f.Error}
	for _, name := range slices.Sorted(maps.Keys(f.Errors)) {
		msgs = append(msgs, f.Errors[name])
	}
	for _, m := range msgs {
		var esc bytes.Buffer
		if m != "" && (textEscaper.Execute(&esc, m) != nil || !bytes.Contains(page, esc.Bytes())) {
			return m
		}
	}
	return ""
}

// textEscaper writes a message as the templates do in element text.
var textEscaper = template.Must(template.New("text").Parse(`{{.}}`))

// Is reports whether this is the named form (the one to show errors in).
func (f *form) Is(name string) bool { return f != nil && f.Name == name }

// refuse places an API refusal: on the field its details name, else on the
// first field of the form its message names ("commission_rate must be …"),
// else above the form. It reports whether err was a refusal to show (a 4xx
// answer); any other error is the caller's to return.
func (f *form) refuse(err error) (int, bool) {
	re, ok := asResponseError(err)
	if !ok || re.Status >= 500 || re.Status == fiber.StatusUnauthorized {
		return 0, false
	}
	if field, _ := re.Details["field"].(string); field != "" {
		if _, known := f.Values[field]; known {
			f.Errors[field] = re.Message
			return re.Status, true
		}
	}
	msg := strings.ToLower(re.Message)
	order := f.order
	if len(order) == 0 { // a form built by hand: its fields by name
		order = slices.Sorted(maps.Keys(f.Values))
	}
	for _, name := range order {
		if strings.Contains(msg, name) || strings.Contains(msg, strings.ReplaceAll(name, "_", " ")) {
			f.Errors[name] = re.Message
			return re.Status, true
		}
	}
	f.Error = re.Message
	return re.Status, true
}

// json renders the form as a JSON API body: empty fields are left out
// (the API's default applies); the fields named in numbers go as JSON
// numbers when they read as one, and as text otherwise, so that the API
// refuses them with its own message rather than the page guessing one.
func (f *form) json(numbers ...string) io.Reader {
	body := map[string]any{}
	for name, v := range f.Values {
		if v == "" {
			continue
		}
		body[name] = v
		if slices.Contains(numbers, name) && numberLiteral.MatchString(v) {
			body[name] = json.Number(v)
		}
	}
	b, _ := json.Marshal(body)
	return bytes.NewReader(b)
}

// numberLiteral is a JSON number (RFC 8259 §6).
var numberLiteral = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)
