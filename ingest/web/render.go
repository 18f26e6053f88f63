package web

import (
	"bytes"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"errors"
	"html/template"
	"io/fs"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

//go:embed templates/*.html
var templateFiles embed.FS

// views are the page templates, each parsed with the layout (one template
// set per view, so that each defines its own "content").
var views = parseViews()

func parseViews() map[string]*template.Template {
	// The layout and the partials (files named _*.html) are in every set.
	layout := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/_*.html"))
	names, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		panic(err)
	}
	out := map[string]*template.Template{}
	for _, name := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(name, "templates/"), ".html")
		if base == "layout" || strings.HasPrefix(base, "_") {
			continue
		}
		out[base] = template.Must(template.Must(layout.Clone()).ParseFS(templateFiles, name))
	}
	return out
}

// view is what every page template receives.
type view struct {
	Title string
	Nonce string // the CSP nonce of this response's inline script and style
	CSRF  string // the form token of the area's session
	Area  string // "app", "partner" or "" (sign-in pages)
	// Program is the brand program whose pages are open (its tabs show).
	Program *programNav
	// Tab is the partner area's open tab.
	Tab   string
	Flash string
	Form  *form
	Data  any
}

// programNav names the open program and its current tab.
type programNav struct {
	ID   int64
	Name string
	Tab  string
}

// render writes a page with the dashboard's security headers: a strict
// policy (nothing but this origin, inline code only with this response's
// nonce), no framing, no caching of personal pages.
func (p *Pages) render(c *fiber.Ctx, status int, name string, v view) error {
	t, ok := views[name]
	if !ok {
		return errors.New("web: no view " + name)
	}
	raw := make([]byte, 18)
	rand.Read(raw)
	v.Nonce = base64.RawURLEncoding.EncodeToString(raw)
	if a := areaOf(c); a.name != "" {
		v.Area = a.name
		v.CSRF = csrfToken(tokenOf(c))
	}
	if v.Flash == "" {
		v.Flash = p.takeFlash(c)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", v); err != nil {
		return err
	}
	// A refusal the page has no place for (a row's form naming a row the
	// page does not list, such as another program's commission) would be
	// lost: the error page says it instead.
	if msg := v.Form.unshown(buf.Bytes()); msg != "" && status >= 400 {
		return p.renderError(c, status, msg)
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set("Referrer-Policy", "same-origin")
	c.Set(fiber.HeaderXFrameOptions, "DENY")
	c.Set(fiber.HeaderContentSecurityPolicy, "default-src 'none'; script-src 'self' 'nonce-"+v.Nonce+
		"'; style-src 'self' 'nonce-"+v.Nonce+"'; img-src 'self' data:; connect-src 'self'; form-action 'self'; "+
		"frame-ancestors 'none'; base-uri 'none'")
	return c.Status(status).Send(buf.Bytes())
}

// renderError writes the error page: what happened and what to do.
func (p *Pages) renderError(c *fiber.Ctx, status int, msg string) error {
	return p.render(c, status, "error", view{Title: "Something went wrong", Data: msg})
}

// pageErrors turns whatever a page handler could not handle into an HTML
// page: an API refusal shows its message, a session the API no longer
// accepts goes back to sign-in, the edge's own rate limit (the sign-in
// routes') its 429, anything else is a 500 page with the request id
// (logged, never shown in detail). A query or form that is not text is
// refused before the handler (input.go).
func (p *Pages) pageErrors(c *fiber.Ctx) error {
	err := textInput(c)
	if err == nil {
		err = c.Next()
	}
	if err == nil {
		return nil
	}
	var fe *fiber.Error
	if errors.As(err, &fe) {
		return p.renderError(c, fe.Code, fe.Message)
	}
	var le *ledger.Error
	if errors.As(err, &le) && le.Code == ledger.ERateLimited {
		return p.renderError(c, fiber.StatusTooManyRequests, le.Message)
	}
	if re, ok := asResponseError(err); ok {
		switch {
		case re.Status == fiber.StatusUnauthorized:
			if a := areaOf(c); a.name != "" {
				p.clearCookie(c, a.cookie, "/")
			}
			return redirectToLogin(c)
		case re.Status < 500:
			return p.renderError(c, re.Status, re.Message)
		}
	}
	p.log.Error("page failed", "path", c.Path(), "request_id", c.GetRespHeader(fiber.HeaderXRequestID), "err", err)
	return p.renderError(c, fiber.StatusInternalServerError,
		"The page could not be shown. Try again in a moment; if it keeps failing, give the operator this request id: "+
			c.GetRespHeader(fiber.HeaderXRequestID))
}

// maxFlash bounds a confirmation in bytes, so that its cookie stays small.
const maxFlash = 200

// cutText shortens s to at most n bytes on a character boundary, marking
// the cut with an ellipsis.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// flashCookie carries a one-line confirmation across a form's redirect.
const flashCookie = "pt_flash"

// flash sets the confirmation the next page shows, and redirects there
// (POST, redirect, GET: a reload does not send the form again).
func (p *Pages) flash(c *fiber.Ctx, msg, target string) error {
	msg = cutText(msg, maxFlash)
	p.setCookie(c, flashCookie, base64.RawURLEncoding.EncodeToString([]byte(msg)), "/", 60e9)
	return c.Redirect(target, fiber.StatusSeeOther)
}

func (p *Pages) takeFlash(c *fiber.Ctx) string {
	v := c.Cookies(flashCookie)
	if v == "" {
		return ""
	}
	p.clearCookie(c, flashCookie, "/")
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(b) > maxFlash {
		return ""
	}
	return string(b)
}
