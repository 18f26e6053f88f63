package ingest

import (
	"bytes"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"html/template"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// Rate limits of the referral widget (issue 26).
const (
	// limitEmbedTokens: token mints, 120 a minute per program key (a
	// brand's server mints one per page render of its users).
	limitEmbedTokens = 120
	// limitEmbedPage: the widget page, 120 a minute per client IP.
	limitEmbedPage = 120
)

//go:embed static/embed-referrals.html
var embedHTML string

var embedTemplate = template.Must(template.New("embed-referrals").Parse(embedHTML))

// embedRoutes are the referral widget: the brand's server mints a token
// for one of its users with the program key, and its app frames the page.
func (s *Server) embedRoutes() {
	s.limitedRoute("POST", "/api/v1/programs/:id/embed-tokens", withStyle(defaultStyle),
		s.rateLimit("embed_tokens", limitEmbedTokens, byToken), s.requireProgramKey(keyAuth{}), s.createEmbedToken)
	s.limitedRoute("GET", ledger.EmbedPath, withStyle(defaultStyle),
		s.rateLimit("embed_page", limitEmbedPage, byIP), s.embedPage)
}

// createEmbedToken is POST /api/v1/programs/:id/embed-tokens: a token for
// the user of `email` in the key's own program. Another program's id is
// 404, as a program the caller cannot see is elsewhere.
func (s *Server) createEmbedToken(c *fiber.Ctx) error {
	programID, err := pathID(c, "id", "program")
	if err != nil {
		return err
	}
	if key := programKeyOf(c); key == nil || key.ProgramID != programID {
		return ledger.NewError(ledger.ENotFound, "program not found")
	}
	f, err := parseFields(c)
	if err != nil {
		return err
	}
	r, err := ledger.EmbedTokenInput{Email: f.String("email"), Name: f.String("name")}.Validate(programID)
	if err != nil {
		return err
	}
	tok, err := s.svc.Embeds.CreateEmbedToken(c.UserContext(), r)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusCreated, fiber.Map{
		"token":      tok.Token,
		"expires_at": formatTime(tok.ExpiresAt),
		"url":        ledger.EmbedURL(s.cfg.PublicBaseURL, tok.Token),
	})
}

// embedPage is GET /embed/referrals?token=: the widget, framable by the
// program's domain only. A missing or malformed token is 401, an unknown
// one 404, an expired one 410, each a small page with no program data.
func (s *Server) embedPage(c *fiber.Ctx) error {
	token := c.Query("token")
	if !ledger.WellFormedEmbedToken(token) {
		return s.renderEmbed(c, fiber.StatusUnauthorized, "'none'", nil,
			"This referral page needs a valid link. Reload the page you opened it from.")
	}
	g, err := s.svc.Embeds.EmbedGrant(c.UserContext(), token)
	if ledger.ErrorCode(err) == ledger.ENotFound {
		return s.renderEmbed(c, fiber.StatusNotFound, "'none'", nil,
			"This referral link is unknown. Reload the page you opened it from.")
	} else if err != nil {
		return err
	}
	ancestors := ledger.FrameAncestors(g.Domain)
	if g.Expired(s.now()) {
		return s.renderEmbed(c, fiber.StatusGone, ancestors, nil,
			"This referral link has expired. Reload the page you opened it from.")
	}
	v, err := s.svc.Embeds.OpenEmbed(c.UserContext(), g)
	if err != nil {
		return err
	}
	return s.renderEmbed(c, fiber.StatusOK, ancestors, v, "")
}

// renderEmbed writes the widget or its error page with a strict policy:
// nothing loads but the page itself (one inline script and style allowed
// by a per-response nonce), and only ancestors may frame it.
func (s *Server) renderEmbed(c *fiber.Ctx, status int, ancestors string, v *ledger.EmbedView, msg string) error {
	raw := make([]byte, 16)
	rand.Read(raw)
	nonce := base64.RawURLEncoding.EncodeToString(raw) // no character html/template escapes
	var buf bytes.Buffer
	if err := embedTemplate.Execute(&buf, map[string]any{"Nonce": nonce, "View": v, "Error": msg}); err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set("Referrer-Policy", "no-referrer")
	c.Set(fiber.HeaderContentSecurityPolicy, "default-src 'none'; script-src 'nonce-"+nonce+"'; style-src 'nonce-"+nonce+
		"'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors "+ancestors)
	return c.Status(status).Send(buf.Bytes())
}
