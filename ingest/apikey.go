package ingest

import (
	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

const (
	msgKeyMode   = "mode must be live or test"
	msgOwnerOnly = "Only a workspace owner can generate or regenerate the program's API key"
)

// generateAPIKey is the owner's generate/regenerate action: it replaces the
// program's live key (or, with {"mode": "test"}, its test key) in place and
// is the only response that shows the full key.
func (s *Server) generateAPIKey(c *fiber.Ctx) error {
	programID, err := s.programWithPermission(c, "id", ledger.PermKeysManage, msgOwnerOnly)
	if err != nil {
		return err
	}
	f, err := parseFields(c)
	if err != nil {
		return err
	}
	mode := ledger.LiveKey
	if m := f.String("mode"); m.Present {
		switch {
		case m.OK() && m.Value == "live":
		case m.OK() && m.Value == "test":
			mode = ledger.TestKey
		default:
			return invalid(msgKeyMode)
		}
	}
	g, err := s.svc.Keys.RegenerateProgramKey(c.UserContext(), programID, mode)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{
		"program_id":       programID,
		"mode":             string(g.Mode),
		"api_key":          g.APIKey,
		"api_token_masked": g.APITokenMasked,
	})
}
