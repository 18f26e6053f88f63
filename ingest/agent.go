package ingest

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// The agent API: programs of the agent key's workspace, read and updated
// with agt_ keys the operator issues; one scope per endpoint.

// limitAgent is the agent API's budget per key and minute (the spec names
// none; the CLI's is the model).
const limitAgent = 60

type agentKeyKey struct{}

func agentKeyOf(c *fiber.Ctx) *ledger.AgentKey {
	k, _ := c.Locals(agentKeyKey{}).(*ledger.AgentKey)
	return k
}

// requireAgentKey authenticates an agent key holding scope. Anything but
// a live agt_ key (a program key, a sign-in token, the operator token) is
// 401; a key without the scope is 403 naming the scope.
func (s *Server) requireAgentKey(scope string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		tok, st := bearerToken(c.Get(fiber.HeaderAuthorization))
		if st != bearerOK {
			return ledger.NewError(ledger.EUnauthorized, ledger.MsgAgentKeyRequired)
		}
		if !strings.HasPrefix(tok, ledger.AgentKeyPrefix) {
			if strings.HasPrefix(tok, ledger.ProgramKeyPrefix) {
				return ledger.NewError(ledger.EUnauthorized, ledger.MsgAgentProgramKey)
			}
			return ledger.NewError(ledger.EUnauthorized, ledger.MsgAgentKeyInvalid)
		}
		key, err := s.svc.Agents.AuthenticateAgentKey(c.UserContext(), tok)
		if err != nil {
			return err
		}
		if !key.Has(scope) {
			return ledger.NewError(ledger.EForbidden, ledger.MsgAgentScope(scope))
		}
		c.Locals(agentKeyKey{}, key)
		return c.Next()
	}
}

// agentChain is the middleware of an agent route.
func (s *Server) agentChain(scope string, h fiber.Handler) []fiber.Handler {
	return []fiber.Handler{withStyle(defaultStyle), s.rateLimit("agent", limitAgent, byToken), s.requireAgentKey(scope), h}
}

func (s *Server) agentPrograms(c *fiber.Ctx) error {
	list, err := s.svc.Agents.WorkspacePrograms(c.UserContext(), agentKeyOf(c).WorkspaceID)
	if err != nil {
		return err
	}
	out := make([]fiber.Map, 0, len(list))
	for _, p := range list {
		out = append(out, settingsJSON(p))
	}
	return ok(c, fiber.StatusOK, out)
}

// agentProgramID reads the program of the path, confined to the key's
// workspace: another workspace's program is not found, as if it did not
// exist.
func (s *Server) agentProgramID(c *fiber.Ctx) (*ledger.Program, error) {
	id, err := pathID(c, "id", "program")
	if err != nil {
		return nil, err
	}
	p, err := s.svc.Programs.Program(c.UserContext(), id)
	if err == nil && p.WorkspaceID != agentKeyOf(c).WorkspaceID {
		err = ledger.NewError(ledger.ENotFound, "program not found")
	}
	return p, err
}

func (s *Server) agentProgram(c *fiber.Ctx) error {
	p, err := s.agentProgramID(c)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, settingsJSON(p))
}

// agentUpdateProgram applies the settings fields sent, as the dashboard's
// PATCH /api/v1/programs/:id/settings does: the same validation and
// messages, and the ProgramChanged hook once committed.
func (s *Server) agentUpdateProgram(c *fiber.Ctx) error {
	p, err := s.agentProgramID(c)
	if err != nil {
		return err
	}
	f, err := parseFields(c)
	if err != nil {
		return err
	}
	p, err = s.svc.Settings.UpdateSettings(c.UserContext(), p.ID, settingsInput(f))
	if err != nil {
		return err
	}
	if s.programChanged != nil {
		s.programChanged(c.UserContext(), p.ID)
	}
	return ok(c, fiber.StatusOK, settingsJSON(p))
}
