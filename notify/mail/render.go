package mail

import (
	"bytes"
	"embed"
	"fmt"
	htmltemplate "html/template"
	"strings"
	texttemplate "text/template"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
)

// templates holds, per email kind, <kind>.txt (the "subject" template and
// the text part) and <kind>.html (the HTML part).
//
//go:embed templates/*.txt templates/*.html
var templates embed.FS

// funcs are the helpers both template sets use.
var funcs = map[string]any{
	// date renders an instant for people, in UTC.
	"date": func(t time.Time) string { return t.UTC().Format("2 January 2006 at 15:04 UTC") },
}

var (
	textTemplates = texttemplate.Must(texttemplate.New("").Funcs(funcs).ParseFS(templates, "templates/*.txt"))
	htmlTemplates = htmltemplate.Must(htmltemplate.New("").Funcs(funcs).ParseFS(templates, "templates/*.html"))
)

// Render renders an email from the outbox: its kind's subject, text and
// HTML parts over its data, which is decoded and validated first. The
// returned message has no Message-ID; the sender sets it.
func Render(e ledger.Email) (Message, error) {
	data, err := ledger.DecodeEmailData(e.Kind, e.Data)
	if err != nil {
		return Message{}, err
	}
	to, err := ledger.ParseEmailAddress(e.To)
	if err != nil {
		return Message{}, err
	}
	var subject, text, html bytes.Buffer
	if err := textTemplates.ExecuteTemplate(&subject, e.Kind+".subject", data); err != nil {
		return Message{}, fmt.Errorf("render %s subject: %v", e.Kind, err)
	}
	if err := textTemplates.ExecuteTemplate(&text, e.Kind+".txt", data); err != nil {
		return Message{}, fmt.Errorf("render %s text: %v", e.Kind, err)
	}
	if err := htmlTemplates.ExecuteTemplate(&html, e.Kind+".html", data); err != nil {
		return Message{}, fmt.Errorf("render %s html: %v", e.Kind, err)
	}
	return Message{To: to, Subject: oneLine(subject.String()), Text: text.String(), HTML: html.String()}, nil
}

// oneLine joins a subject's lines: data with a line break must not start
// a header of its own.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
