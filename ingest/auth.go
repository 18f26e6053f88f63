package ingest

import (
	"bytes"
	"crypto/subtle"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

type bearerState int

const (
	bearerMissing bearerState = iota // header absent, or not starting with "Bearer "
	bearerEmpty                      // "Bearer" with nothing after it but spaces
	bearerOK
)

// bearerToken parses an Authorization header as the spec reads it: a
// header not starting with "Bearer " is missing or malformed, a token
// empty after trimming is empty.
func bearerToken(h string) (string, bearerState) {
	if h == "Bearer" || strings.TrimSpace(h) == "Bearer" {
		return "", bearerEmpty
	}
	if !strings.HasPrefix(h, "Bearer ") {
		return "", bearerMissing
	}
	tok := strings.TrimSpace(h[len("Bearer "):])
	if tok == "" {
		return "", bearerEmpty
	}
	return tok, bearerOK
}

// The spec's 401 messages for program-key routes.
const (
	msgMalformedAuth = "Missing or malformed Authorization header; expected Bearer token"
	msgMissingToken  = "Missing API token"  // sale (and every other program-key route)
	msgEmptyBearer   = "Empty Bearer token" // refund
	msgInvalidToken  = "Invalid API token"
)

// keyAuth configures program-key authentication of one route.
type keyAuth struct {
	emptyMessage string // message for an empty token
	optional     bool   // a missing or empty token means no key (browser-mode lead)
	typed        bool   // readiness: code invalid_key, messages end with a period
}

type programKeyKey struct{}

// programKeyOf returns the authenticated program key of the request, or nil
// on an optional route called without one.
func programKeyOf(c *fiber.Ctx) *ledger.ProgramKey {
	k, _ := c.Locals(programKeyKey{}).(*ledger.ProgramKey)
	return k
}

func (a keyAuth) unauthorized(message string) error {
	if a.typed {
		return ledger.NewError(ledger.EInvalidKey, message+".")
	}
	return ledger.NewError(ledger.EUnauthorized, message)
}

// requireProgramKey authenticates the program key of a route. A key marked
// for rotation still authenticates before its deadline, and every response
// then carries the Deprecation, Sunset and Link headers and a top-level
// warnings array; at the deadline the key is refused with
// api_key_rotation_required, the headers still present.
func (s *Server) requireProgramKey(a keyAuth) fiber.Handler {
	if a.emptyMessage == "" {
		a.emptyMessage = msgMissingToken
	}
	return func(c *fiber.Ctx) error {
		tok, st := bearerToken(c.Get(fiber.HeaderAuthorization))
		switch {
		case st != bearerOK && a.optional:
			return c.Next()
		case st == bearerMissing:
			return a.unauthorized(msgMalformedAuth)
		case st == bearerEmpty:
			return a.unauthorized(a.emptyMessage)
		}
		key, err := s.svc.Keys.AuthenticateProgramKey(c.UserContext(), tok)
		if ledger.ErrorCode(err) == ledger.ENotFound {
			return a.unauthorized(msgInvalidToken)
		} else if err != nil {
			return err
		}
		if !key.Marked() {
			c.Locals(programKeyKey{}, key)
			return c.Next()
		}
		s.setDeprecationHeaders(c, key)
		if key.Retired(s.now()) {
			return &ledger.Error{
				Code:    ledger.EKeyRotationRequired,
				Message: "This API key was retired on " + formatTime(*key.Deadline) + " and no longer authenticates.",
				Details: map[string]any{"hint": rotationHint, "docs_url": s.rotationDocsURL()},
			}
		}
		c.Locals(programKeyKey{}, key)
		if err := c.Next(); err != nil {
			if herr := s.app.Config().ErrorHandler(c, err); herr != nil {
				return herr
			}
		}
		s.addWarning(c, key)
		return nil
	}
}

const rotationHint = "Generate a new key (POST /api/v1/programs/:id/api-key as the workspace owner) and deploy it; the old key stops working at once."

func (s *Server) rotationDocsURL() string {
	return s.cfg.PublicBaseURL + "/docs/errors#" + ledger.EKeyRotationRequired
}

func (s *Server) setDeprecationHeaders(c *fiber.Ctx, key *ledger.ProgramKey) {
	c.Set("Deprecation", "@"+strconv.FormatInt(key.MarkedAt.Unix(), 10))
	c.Set("Sunset", key.Deadline.UTC().Format(http.TimeFormat))
	c.Set("Link", "<"+s.rotationDocsURL()+`>; rel="deprecation"`)
}

// addWarning adds the rotation warning to a JSON object body as a
// top-level warnings array, leaving every other byte of the body as it is.
func (s *Server) addWarning(c *fiber.Ctx, key *ledger.ProgramKey) {
	if !bytes.HasPrefix(c.Response().Header.ContentType(), []byte(fiber.MIMEApplicationJSON)) {
		return
	}
	body := bytes.TrimSpace(c.Response().Body())
	if len(body) < 2 || body[0] != '{' || body[len(body)-1] != '}' {
		return
	}
	warning, err := s.app.Config().JSONEncoder([]fiber.Map{{
		"code":      ledger.EKeyRotationRequired,
		"message":   "This API key is marked for rotation and stops working at " + formatTime(*key.Deadline) + ".",
		"hint":      rotationHint,
		"rotate_by": formatTime(*key.Deadline),
		"docs_url":  s.rotationDocsURL(),
	}})
	if err != nil {
		return
	}
	out := make([]byte, 0, len(body)+len(warning)+16)
	out = append(out, body[:len(body)-1]...)
	if len(bytes.TrimSpace(body[1:len(body)-1])) > 0 {
		out = append(out, ',')
	}
	out = append(out, `"warnings":`...)
	out = append(out, warning...)
	out = append(out, '}')
	c.Response().SetBodyRaw(out)
}

type sessionKey struct{}

// requireSession authenticates a sign-in token of one of the given kinds
// (any kind when none is given).
func (s *Server) requireSession(kinds ...ledger.SessionKind) fiber.Handler {
	return func(c *fiber.Ctx) error {
		tok, st := bearerToken(c.Get(fiber.HeaderAuthorization))
		if st != bearerOK {
			return ledger.NewError(ledger.EUnauthorized, "Authentication required")
		}
		sess, err := s.svc.Accounts.AuthenticateSession(c.UserContext(), tok)
		if err != nil {
			return err
		}
		allowed := len(kinds) == 0
		for _, k := range kinds {
			allowed = allowed || sess.Kind == k
		}
		if !allowed {
			return ledger.NewError(ledger.EUnauthorized, "invalid or expired token")
		}
		c.Locals(sessionKey{}, sess)
		return c.Next()
	}
}

func sessionOf(c *fiber.Ctx) *ledger.Session {
	sess, _ := c.Locals(sessionKey{}).(*ledger.Session)
	return sess
}

// requireOperator guards the operator API. Without OPERATOR_TOKEN the API
// does not exist (404); otherwise the bearer token is compared in constant
// time.
func (s *Server) requireOperator(c *fiber.Ctx) error {
	if s.cfg.OperatorToken == "" {
		return fiber.ErrNotFound
	}
	if err := paramsError(c); err != nil {
		return err // the operator API's envelope is the default style
	}
	tok, st := bearerToken(c.Get(fiber.HeaderAuthorization))
	if st != bearerOK || subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.OperatorToken)) != 1 {
		return ledger.NewError(ledger.EUnauthorized, "Invalid or missing operator token")
	}
	return c.Next()
}

// formatTime renders times as the API does: ISO 8601 in UTC, milliseconds.
func formatTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}
