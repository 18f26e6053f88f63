package devissuer

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"net/http"
)

//go:embed templates/*.html
var templateFS embed.FS

// pages holds one template per page, each with the shared layout.
var pages = map[string]*template.Template{
	"authorize": parsePage("authorize"),
	"refused":   parsePage("refused"),
}

func parsePage(name string) *template.Template {
	return template.Must(template.ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html"))
}

// pageData is what every page gets; each page reads the fields it needs.
type pageData struct {
	Title    string
	CSPNonce string

	// authorize
	ClientID   string
	ReturnTo   string // the redirect_uri's origin and path, to say where the user goes back
	Action     string
	Hidden     []hiddenField
	Email      string
	EmailError string
	Name       string
	NameError  string
	MaxName    int

	// refused
	Reason string
}

type hiddenField struct{ Name, Value string }

// render writes a page with a strict Content-Security-Policy: no script at
// all, the one style block by its nonce, and forms that may post only here
// and follow the redirect to formTarget (browsers check form-action on the
// redirect after a post too); formTarget "" allows no form.
func render(w http.ResponseWriter, status int, page string, d pageData, formTarget string) {
	d.CSPNonce = randomString(18)
	var buf bytes.Buffer
	if err := pages[page].ExecuteTemplate(&buf, page+".html", d); err != nil {
		http.Error(w, "devissuer: "+err.Error(), http.StatusInternalServerError)
		return
	}
	formAction := "'none'"
	if formTarget != "" {
		formAction = "'self' " + formTarget
	}
	h := w.Header()
	h.Set("Content-Security-Policy", fmt.Sprintf(
		"default-src 'none'; style-src 'nonce-%s'; form-action %s; base-uri 'none'; frame-ancestors 'none'",
		d.CSPNonce, formAction))
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer") // the address carries state and challenge
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}
