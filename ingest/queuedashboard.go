package ingest

import (
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// The asynq dashboard at /ops/queues (mounted in routes.go) is guarded by
// the operator token and is read-only unless configured otherwise; its
// security headers are in security.go.

// queuesPath is where the asynq dashboard is mounted.
const queuesPath = "/ops/queues"

// Messages of the dashboard's guard.
const (
	msgOpsToken    = "The queue dashboard requires the operator token (Bearer, or HTTP basic auth with the token as password)"
	msgOpsReadOnly = "The queue dashboard is read-only (OPS_QUEUES_READONLY=true)"
)

// requireOpsToken guards the asynq dashboard with the operator token, as a
// bearer token or as the password of HTTP basic auth (any user name), so
// that a browser can open it. Without it: 401 with WWW-Authenticate: Basic.
// Without OPERATOR_TOKEN the dashboard does not exist (404), like the
// operator API.
func (s *Server) requireOpsToken(c *fiber.Ctx) error {
	if p := c.Path(); p != queuesPath && !strings.HasPrefix(p, queuesPath+"/") {
		return fiber.ErrNotFound
	}
	if s.cfg.OperatorToken == "" {
		return fiber.ErrNotFound
	}
	if s.opsTokenOK(c.Get(fiber.HeaderAuthorization)) {
		return c.Next()
	}
	c.Set(fiber.HeaderWWWAuthenticate, `Basic realm="partnertrack operations", charset="UTF-8"`)
	return ledger.NewError(ledger.EUnauthorized, msgOpsToken)
}

func (s *Server) opsTokenOK(header string) bool {
	var given string
	if tok, st := bearerToken(header); st == bearerOK {
		given = tok
	} else if raw, found := strings.CutPrefix(header, "Basic "); found {
		decoded, err := base64.StdEncoding.DecodeString(strings.TrimSpace(raw))
		if err != nil {
			return false
		}
		_, password, ok := strings.Cut(string(decoded), ":")
		if !ok {
			return false
		}
		given = password
	} else {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(given), []byte(s.cfg.OperatorToken)) == 1
}

// opsReadOnly refuses every change through the dashboard's API unless
// OPS_QUEUES_READONLY=false (asynqmon's own ReadOnly, set too, hides the
// buttons).
func (s *Server) opsReadOnly(c *fiber.Ctx) error {
	if s.cfg.OpsQueuesWritable {
		return c.Next()
	}
	switch c.Method() {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return c.Next()
	}
	return ledger.NewError(ledger.EForbidden, msgOpsReadOnly)
}
