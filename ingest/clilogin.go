package ingest

import (
	"bytes"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"html/template"
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

//go:embed static/cli-login.html
var cliLoginHTML string

var cliLoginTemplate = template.Must(template.New("cli-login").Parse(cliLoginHTML))

// cliLoginPage is GET /cli/login?state=: the page the CLI's login link
// opens. It runs the provider's sign-in in the browser (OpenID Connect
// implicit flow: the provider returns an id_token to this page, at
// PUBLIC_BASE_URL/cli/login, which must be registered as a redirect URI
// of OIDC_CLIENT_ID) and posts the CLI's state and the id_token to the
// callback. It loads nothing but itself: one inline script and style
// allowed by a per-response nonce, fetches limited to this origin and the
// provider's discovery document, and no referrer (the address carries the
// login state).
func (s *Server) cliLoginPage(c *fiber.Ctx) error {
	nonce := make([]byte, 16)
	rand.Read(nonce)
	n := base64.StdEncoding.EncodeToString(nonce)
	state := strings.TrimSpace(c.Query("state"))
	if len(state) > 128 {
		state = ""
	}
	issuer := ""
	if s.svc.Identity != nil {
		issuer = s.cfg.OIDCIssuerURL
	}
	// The login's code, starting client and time, for the person to check
	// against their terminal; a login that cannot be signed in shows none.
	var userCode, userAgent, startedAt string
	if state != "" && issuer != "" {
		l, err := s.svc.CLILogin.LoginInfo(c.UserContext(), state)
		if err != nil {
			return err
		}
		if l != nil && l.State == ledger.CLILoginPending && !l.Expired(s.now()) && l.UserCode != "" {
			userCode, userAgent = ledger.FormatUserCode(l.UserCode), l.UserAgent
			startedAt = l.CreatedAt.UTC().Format("2006-01-02 15:04:05 UTC")
			if userAgent == "" {
				userAgent = "an unnamed client"
			}
		}
	}
	var buf bytes.Buffer
	err := cliLoginTemplate.Execute(&buf, map[string]string{
		"UserCode":    userCode,
		"UserAgent":   userAgent,
		"StartedAt":   startedAt,
		"Confirm":     "/api/v1/cli/auth/confirm",
		"Nonce":       n,
		"State":       state,
		"Issuer":      issuer,
		"ClientID":    s.cfg.OIDCClientID,
		"RedirectURI": s.cfg.PublicBaseURL + cliLoginPath,
		"Callback":    "/api/v1/cli/auth/callback",
	})
	if err != nil {
		return err
	}
	connect := "'self'"
	if u, err := url.Parse(issuer); err == nil && u.Scheme != "" && u.Host != "" {
		connect += " " + u.Scheme + "://" + u.Host
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set("Referrer-Policy", "no-referrer")
	c.Set("X-Content-Type-Options", "nosniff")
	c.Set(fiber.HeaderContentSecurityPolicy, "default-src 'none'; script-src 'nonce-"+n+"'; style-src 'nonce-"+n+
		"'; connect-src "+connect+"; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	return c.Send(buf.Bytes())
}
