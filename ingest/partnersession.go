package ingest

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

var partnerSignInStyle = errorStyle{internalMessage: "Partner sign-in failed"}

// partnerSessionRoutes are partner sign-in and sign-out. Every other
// /api/v1/partner route sits behind requirePartner.
func (s *Server) partnerSessionRoutes() {
	s.limitedRoute("POST", "/api/v1/partner/session", withStyle(partnerSignInStyle),
		s.rateLimit("signin", limitSignIn, byIP), s.partnerSignIn)
	s.app.Delete("/api/v1/partner/session", withStyle(defaultStyle), s.requirePartner, s.partnerSignOut)
}

// partnerSignIn is POST /api/v1/partner/session: it verifies an id_token
// of the sign-in provider, binds it to the partner of its email and
// returns a partner token.
func (s *Server) partnerSignIn(c *fiber.Ctx) error {
	if s.svc.PartnerSignIn == nil {
		return ledger.NewError(eUnavailable, msgSignInNotConfigured)
	}
	id, err := s.verifiedIdentity(c)
	if err != nil {
		return err
	}
	sess, err := s.svc.PartnerSignIn.SignInPartner(c.UserContext(), *id)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{
		"token":      sess.Token,
		"expires_at": formatTime(sess.ExpiresAt),
		"partner":    fiber.Map{"id": sess.PartnerID, "email": sess.Email, "name": sess.Name},
	})
}

// partnerSignOut is DELETE /api/v1/partner/session.
func (s *Server) partnerSignOut(c *fiber.Ctx) error {
	tok, _ := bearerToken(c.Get(fiber.HeaderAuthorization))
	if err := s.svc.PartnerSignIn.RevokePartnerSession(c.UserContext(), tok); err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"revoked": true})
}

type partnerSessionKey struct{}

// requirePartner authenticates a partner token. A dashboard or CLI token
// is not one: it is refused like any unknown token.
func (s *Server) requirePartner(c *fiber.Ctx) error {
	tok, st := bearerToken(c.Get(fiber.HeaderAuthorization))
	if st != bearerOK {
		return ledger.NewError(ledger.EUnauthorized, ledger.MsgPartnerAuthRequired)
	}
	if s.svc.PartnerSignIn == nil || !strings.HasPrefix(tok, ledger.PartnerTokenPrefix) {
		return ledger.NewError(ledger.EUnauthorized, ledger.MsgPartnerTokenInvalid)
	}
	sess, err := s.svc.PartnerSignIn.AuthenticatePartner(c.UserContext(), tok)
	if err != nil {
		return err
	}
	c.Locals(partnerSessionKey{}, sess)
	return c.Next()
}

// partnerOf is the signed-in partner of a route behind requirePartner.
func partnerOf(c *fiber.Ctx) *ledger.PartnerSession {
	sess, _ := c.Locals(partnerSessionKey{}).(*ledger.PartnerSession)
	return sess
}
