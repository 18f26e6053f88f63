package ingest

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// limitSignIn bounds sign-in attempts per client IP a minute. The spec
// names no limit for sign-in; this one keeps a flood of forged tokens
// from making the edge refetch the provider's keys without end.
const limitSignIn = 60

const msgSignInNotConfigured = "Sign-in is not configured on this server (OIDC_ISSUER_URL and OIDC_CLIENT_ID are unset)"

var signInStyle = errorStyle{internalMessage: "Sign-in failed"}

// SignInLimit is the rate limit of API sign-in, for the dashboard's
// browser sign-in routes: one bucket per client IP for both.
func (s *Server) SignInLimit() fiber.Handler {
	limit := s.rateLimit("signin", limitSignIn, byIP)
	return func(c *fiber.Ctx) error {
		c.Locals(styleKey{}, signInStyle)
		return limit(c)
	}
}

// signIn is POST /api/v1/auth/session: it verifies an id_token of the
// sign-in provider, creates or links the user and returns a dashboard
// token.
func (s *Server) signIn(c *fiber.Ctx) error {
	id, err := s.verifiedIdentity(c)
	if err != nil {
		return err
	}
	u, sess, err := s.svc.SignIn.SignIn(c.UserContext(), *id, ledger.DashboardSession)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{
		"token":      sess.Token,
		"expires_at": formatTime(sess.ExpiresAt),
		"user":       fiber.Map{"id": u.ID, "email": u.Email},
	})
}

// signOut is DELETE /api/v1/auth/session: it revokes the presented
// dashboard token at once.
func (s *Server) signOut(c *fiber.Ctx) error {
	tok, _ := bearerToken(c.Get(fiber.HeaderAuthorization))
	if err := s.svc.SignIn.RevokeSession(c.UserContext(), tok); err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"revoked": true})
}

// verifiedIdentity reads the body's id_token and verifies it with the
// sign-in provider: dashboard and partner sign-in accept and refuse the
// same tokens. Errors: 503 without a provider, 400 without an id_token,
// then the verifier's.
func (s *Server) verifiedIdentity(c *fiber.Ctx) (*ledger.Identity, error) {
	if s.svc.Identity == nil {
		return nil, ledger.NewError(eUnavailable, msgSignInNotConfigured)
	}
	f, err := parseFields(c)
	if err != nil {
		return nil, err
	}
	tok := f.String("id_token")
	if !tok.OK() || strings.TrimSpace(tok.Value) == "" {
		return nil, invalid(ledger.MsgIDTokenRequired)
	}
	return s.svc.Identity.VerifyIDToken(c.UserContext(), tok.Value)
}
