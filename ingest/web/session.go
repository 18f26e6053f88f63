package web

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
)

// The cookies of a browser session. Each holds the bearer token of one
// API session (a dashboard token, a partner token): the session lives on
// the server, where sign-out revokes it, and the cookie is only its key.
const (
	brandCookie   = "pt_session"
	partnerCookie = "pt_partner_session"
	loginCookie   = "pt_login" // state, nonce and PKCE verifier of a sign-in under way
)

// sessionTTL bounds the cookies' lifetime; the API sessions they name
// expire on their own schedule (and the page then asks to sign in again).
const sessionTTL = 30 * 24 * time.Hour

// area is one half of the dashboard: the brand's or the partner's.
type area struct {
	name   string // "app" or "partner"
	cookie string
	home   string
}

var (
	brandArea   = area{name: "app", cookie: brandCookie, home: "/app/"}
	partnerArea = area{name: "partner", cookie: partnerCookie, home: "/partner/"}
)

// setCookie writes an HttpOnly, SameSite=Lax cookie, Secure when the
// dashboard is served over HTTPS.
func (p *Pages) setCookie(c *fiber.Ctx, name, value, path string, ttl time.Duration) {
	c.Cookie(&fiber.Cookie{
		Name: name, Value: value, Path: path, MaxAge: int(ttl.Seconds()),
		Expires: p.now().Add(ttl), HTTPOnly: true, Secure: p.secure, SameSite: fiber.CookieSameSiteLaxMode,
	})
}

func (p *Pages) clearCookie(c *fiber.Ctx, name, path string) {
	c.Cookie(&fiber.Cookie{
		Name: name, Value: "", Path: path, MaxAge: -1, Expires: time.Unix(0, 0),
		HTTPOnly: true, Secure: p.secure, SameSite: fiber.CookieSameSiteLaxMode,
	})
}

// csrfToken is the form token of a session: derived from its secret
// token, so every edge instance computes the same one without storing it,
// and showing it in a page reveals nothing of the token.
func csrfToken(sessionToken string) string {
	sum := sha256.Sum256([]byte("partnertrack dashboard csrf\x00" + sessionToken))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// checkCSRF refuses a state-changing request whose form token does not
// match the session's, or that a browser says came from another site.
func checkCSRF(c *fiber.Ctx, sessionToken string) bool {
	switch c.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return false
	}
	// The token is read from the form body only: a token in a URL would
	// leak through logs and Referer.
	got := string(c.Request().PostArgs().Peek("csrf"))
	want := csrfToken(sessionToken)
	return sessionToken != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// requireArea sends a request without the area's session cookie to the
// sign-in page, which brings the person back afterwards; with one, it
// keeps the token for the handlers and checks the form token of every
// request that changes something.
func (p *Pages) requireArea(a area) fiber.Handler {
	return func(c *fiber.Ctx) error {
		tok := c.Cookies(a.cookie)
		if tok == "" {
			return redirectToLogin(c)
		}
		c.Locals(tokenKey{}, tok)
		c.Locals(areaKey{}, a)
		if c.Method() != fiber.MethodGet && c.Method() != fiber.MethodHead && !checkCSRF(c, tok) {
			return p.renderError(c, fiber.StatusForbidden, "This form has expired or did not come from this site. Go back, reload the page and try again.")
		}
		return c.Next()
	}
}

type tokenKey struct{}
type areaKey struct{}

func tokenOf(c *fiber.Ctx) string {
	t, _ := c.Locals(tokenKey{}).(string)
	return t
}

func areaOf(c *fiber.Ctx) area {
	a, _ := c.Locals(areaKey{}).(area)
	return a
}

// redirectToLogin answers 303 to the sign-in page, remembering where the
// person was going (a GET page only: a form's target is not a page).
func redirectToLogin(c *fiber.Ctx) error {
	target := "/login"
	if c.Method() == fiber.MethodGet {
		target += "?next=" + url.QueryEscape(c.OriginalURL())
	}
	return c.Redirect(target, fiber.StatusSeeOther)
}

// safeNext keeps a return path only when it is a page of this dashboard:
// never another site, never a protocol-relative or backslash trick.
func safeNext(next string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return ""
	}
	// A dot segment (also percent-encoded, which browsers decode) would
	// climb out of the dashboard's paths once resolved.
	pathPart, _, _ := strings.Cut(next, "?")
	if lower := strings.ToLower(pathPart); strings.Contains(lower, "/.") || strings.Contains(lower, "%2e") {
		return ""
	}
	if next == "/app" || next == "/partner" || strings.HasPrefix(next, "/app/") || strings.HasPrefix(next, "/partner/") {
		return next
	}
	return ""
}
