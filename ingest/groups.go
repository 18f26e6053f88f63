package ingest

import (
	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

const (
	msgNoGroupsRead    = "You do not have access to this program's partner groups"
	msgGroupsAdminOnly = "Only a workspace owner or admin can manage the program's partner groups"
)

// groupRoutes are a program's partner groups under dashboard sign-in
// (issue 24): every member lists them, owners and admins create and
// change them. They share the partner_program bucket of the brand's link
// routes (limitPartnerProgram a minute per dashboard token).
func (s *Server) groupRoutes() {
	dashboard := s.requireSession(ledger.DashboardSession)
	limit := s.rateLimit("partner_program", limitPartnerProgram, byToken)
	s.limitedRoute("GET", "/api/v1/programs/:id/groups", withStyle(defaultStyle), limit, dashboard, s.listGroups)
	s.limitedRoute("POST", "/api/v1/programs/:id/groups", withStyle(defaultStyle), limit, dashboard, s.createGroup)
	s.limitedRoute("PATCH", "/api/v1/programs/:id/groups/:groupId", withStyle(defaultStyle), limit, dashboard, s.patchGroup)
}

// listGroups is GET /api/v1/programs/:id/groups (any member): every group
// of the program, the default one first, with its terms in force and its
// partner count.
func (s *Server) listGroups(c *fiber.Ctx) error {
	programID, err := s.programWithPermission(c, "id", ledger.PermPartnersRead, msgNoGroupsRead)
	if err != nil {
		return err
	}
	gs, err := s.svc.Groups.Groups(c.UserContext(), programID)
	if err != nil {
		return err
	}
	data := make([]fiber.Map, len(gs))
	for i := range gs {
		data[i] = groupJSON(&gs[i])
	}
	return ok(c, fiber.StatusOK, data)
}

// groupInput reads a group's fields with the program's names.
func groupInput(f fields) ledger.GroupInput {
	return ledger.GroupInput{
		Name:           f.String("name"),
		CommissionType: f.Text("commission_type"),
		CommissionRate: f.Decimal("commission_rate"),
		DurationMonths: f.Int("duration_months"),
		HoldDays:       f.Int("hold_days"),
	}
}

// createGroup is POST /api/v1/programs/:id/groups (owner or admin): a
// group with a name and its terms; terms not sent are the program's.
func (s *Server) createGroup(c *fiber.Ctx) error {
	programID, err := s.programWithPermission(c, "id", ledger.PermPartnersWrite, msgGroupsAdminOnly)
	if err != nil {
		return err
	}
	f, err := parseFields(c)
	if err != nil {
		return err
	}
	g, err := s.svc.Groups.CreateGroup(c.UserContext(), programID, sessionOf(c).UserID, groupInput(f))
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusCreated, groupJSON(g))
}

// patchGroup is PATCH /api/v1/programs/:id/groups/:groupId (owner or
// admin): a new name and/or new terms. New terms of the default group are
// the program's fields, so every edge then drops what it cached of the
// program, as a settings change does.
func (s *Server) patchGroup(c *fiber.Ctx) error {
	programID, err := s.programWithPermission(c, "id", ledger.PermPartnersWrite, msgGroupsAdminOnly)
	if err != nil {
		return err
	}
	groupID, f, err := pathIDAndFields(c, "groupId", "group")
	if err != nil {
		return err
	}
	in := groupInput(f)
	g, err := s.svc.Groups.UpdateGroup(c.UserContext(), programID, groupID, sessionOf(c).UserID, in)
	if err != nil {
		return err
	}
	if g.IsDefault && in.ChangesTerms() && s.programChanged != nil {
		s.programChanged(c.UserContext(), programID)
	}
	return ok(c, fiber.StatusOK, groupJSON(g))
}

// groupJSON renders a group with the terms in force (the program's for the
// default group, whose policy_id is null).
func groupJSON(g *ledger.PartnerGroup) fiber.Map {
	return fiber.Map{
		"id":              g.ID,
		"program_id":      g.ProgramID,
		"name":            g.Name,
		"is_default":      g.IsDefault,
		"policy_id":       g.PolicyID,
		"commission_type": string(g.Terms.Type),
		"commission_rate": decimalJSON(g.Terms.Rate.String()),
		"duration_months": g.Terms.DurationMonths,
		"hold_days":       g.Terms.HoldDays,
		"partners":        g.Partners,
		"created_at":      formatTime(g.CreatedAt),
		"updated_at":      formatTime(g.UpdatedAt),
	}
}
