package ingest

import (
	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// The dashboard's own program routes (issue 27): the web pages are a
// client of this API, so what a page shows of a user's programs, creates,
// or checks for readiness, a route here answers first.

// Limits of the dashboard's program routes, per minute and token.
const (
	limitMyPrograms    = 120
	limitCreateProgram = 30
)

// dashboardReadinessStyle is readiness's failure message and retry hint
// in the dashboard's platform envelope.
var dashboardReadinessStyle = errorStyle{retryAfter: 10, internalMessage: "Failed to compute readiness. Retry shortly."}

// dashboardAPIRoutes registers the routes the web dashboard needs beyond
// the older dashboard API: the user's programs, program creation,
// readiness by program id, and a webhook endpoint's delivery log and test
// event (webhookdeliveries.go).
func (s *Server) dashboardAPIRoutes() {
	dashboard := s.requireSession(ledger.DashboardSession)
	myPrograms := s.rateLimit("my_programs", limitMyPrograms, byToken)
	s.limitedRoute("GET", "/api/v1/programs", withStyle(defaultStyle), myPrograms, dashboard, s.listMyPrograms)
	s.limitedRoute("GET", "/api/v1/programs/:id", withStyle(defaultStyle), myPrograms, dashboard, s.getMyProgram)
	s.limitedRoute("POST", "/api/v1/programs", withStyle(defaultStyle),
		s.rateLimit("program_create", limitCreateProgram, byToken), dashboard, s.createMyProgram)
	s.limitedRoute("GET", "/api/v1/programs/:id/readiness", withStyle(dashboardReadinessStyle),
		s.rateLimit("readiness", limitReadiness, byToken), dashboard, s.programReadiness)
	webhooks := s.rateLimit("webhook_log", limitWebhookLog, byToken)
	s.limitedRoute("GET", "/api/v1/programs/:id/webhooks/:webhookId/deliveries", withStyle(defaultStyle),
		webhooks, dashboard, s.listWebhookDeliveries)
	s.limitedRoute("POST", "/api/v1/programs/:id/webhooks/:webhookId/test", withStyle(defaultStyle),
		s.rateLimit("webhook_test", limitWebhookTest, byToken), dashboard, s.sendWebhookTestEvent)
}

// memberProgramJSON is a program as every read renders it, with the
// user's role in its workspace and the workspace's name.
func memberProgramJSON(p *ledger.MemberProgram) fiber.Map {
	m := programJSON(&p.Program)
	m["role"] = string(p.Role)
	m["workspace_name"] = p.WorkspaceName
	return m
}

// listMyPrograms is GET /api/v1/programs: the programs of every workspace
// the signed-in user belongs to, by name then id.
func (s *Server) listMyPrograms(c *fiber.Ctx) error {
	list, err := s.svc.MemberPrograms.MemberPrograms(c.UserContext(), sessionOf(c).UserID)
	if err != nil {
		return err
	}
	out := make([]fiber.Map, len(list))
	for i := range list {
		out[i] = memberProgramJSON(&list[i])
	}
	return ok(c, fiber.StatusOK, out)
}

// getMyProgram is GET /api/v1/programs/:id: one program of the signed-in
// user's workspaces; any other is 404.
func (s *Server) getMyProgram(c *fiber.Ctx) error {
	programID, err := pathID(c, "id", "program")
	if err != nil {
		return err
	}
	p, err := s.svc.MemberPrograms.MemberProgram(c.UserContext(), sessionOf(c).UserID, programID)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, memberProgramJSON(p))
}

// createMyProgram is POST /api/v1/programs: the operator's program
// fields (same validation and messages) and an optional workspace_id;
// without it the service picks the user's workspace, or makes the user's
// first one (ledger.ChooseProgramWorkspace).
func (s *Server) createMyProgram(c *fiber.Ctx) error {
	f, err := parseFields(c)
	if err != nil {
		return err
	}
	p, err := s.svc.MemberPrograms.CreateMemberProgram(c.UserContext(), sessionOf(c).UserID,
		f.Int("workspace_id"), programInput(f))
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusCreated, memberProgramJSON(p))
}

// programReadiness is GET /api/v1/programs/:id/readiness: the checklist
// of GET /api/v1/programs/me/readiness, bare as there, for a program the
// signed-in user belongs to (any role).
func (s *Server) programReadiness(c *fiber.Ctx) error {
	programID, err := pathID(c, "id", "program")
	if err != nil {
		return err
	}
	if _, err := s.svc.Accounts.ProgramRole(c.UserContext(), sessionOf(c).UserID, programID); err != nil {
		return err
	}
	return s.renderReadiness(c, programID)
}
