package web

import (
	"bytes"
	"html/template"
	"testing"
)

// TestFormUnshown: a refusal is "unshown" when the rendered page lacks its
// message as the templates escape it; render then shows the error page.
func TestFormUnshown(t *testing.T) {
	var page bytes.Buffer
	tpl := template.Must(template.New("p").Parse(`<p class="field-error">{{.}}</p>`))
	const shown = `reason must be at most 500 characters ("x" & 'y' + <z>)`
	if err := tpl.Execute(&page, shown); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		f    *form
		want string
	}{
		{nil, ""},
		{&form{Errors: map[string]string{}}, ""},
		{&form{Errors: map[string]string{"reason": shown}}, ""},
		{&form{Error: shown, Errors: map[string]string{}}, ""},
		{&form{Error: "Commission not found", Errors: map[string]string{}}, "Commission not found"},
		{&form{Errors: map[string]string{"reason": shown, "amount": "amount must be positive"}}, "amount must be positive"},
	} {
		if got := c.f.unshown(page.Bytes()); got != c.want {
			t.Errorf("unshown(%+v) = %q, want %q", c.f, got, c.want)
		}
	}
}
