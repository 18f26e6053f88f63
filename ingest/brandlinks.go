package ingest

import (
	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// limitPartnerProgram is the rate limit of the brand's partner-program
// link routes: 120 requests a minute per dashboard token, one bucket
// ("partner_program") shared by the three routes.
const limitPartnerProgram = 120

const (
	msgNoLinksRead    = "You do not have access to this program's partner links"
	msgLinksAdminOnly = "Only a workspace owner or admin can manage the program's partner links"
)

// brandLinkRoutes are the brand's own partner links under dashboard
// sign-in (issue 24): every member lists them, owners and admins create,
// disable and re-enable them.
func (s *Server) brandLinkRoutes() {
	dashboard := s.requireSession(ledger.DashboardSession)
	limit := s.rateLimit("partner_program", limitPartnerProgram, byToken)
	s.limitedRoute("POST", "/api/v1/programs/:id/links", withStyle(defaultStyle), limit, dashboard, s.createBrandLink)
	s.limitedRoute("GET", "/api/v1/programs/:id/links", withStyle(defaultStyle), limit, dashboard, s.listBrandLinks)
	s.limitedRoute("PATCH", "/api/v1/programs/:id/links/:linkId", withStyle(defaultStyle), limit, dashboard, s.patchBrandLink)
}

// createBrandLink is POST /api/v1/programs/:id/links (owner or admin): a
// link of a partner enrolled in the program, with the operator's code
// rules; status (active or disabled) defaults to active.
func (s *Server) createBrandLink(c *fiber.Ctx) error {
	programID, err := s.programWithPermission(c, "id", ledger.PermPartnersWrite, msgLinksAdminOnly)
	if err != nil {
		return err
	}
	f, err := parseFields(c)
	if err != nil {
		return err
	}
	partnerID, code, status := f.Int("partner_id"), f.String("code"), f.String("status")
	if !partnerID.OK() || partnerID.Value < 1 {
		return invalid(ledger.MsgPartnerID)
	}
	if !code.OK() || !ledger.ValidLinkCode(code.Value) {
		return invalid(ledger.MsgLinkCode)
	}
	active := true
	if status.Present {
		if active, err = ledger.ParseLinkStatus(status.Value); status.Bad || err != nil {
			return invalid(ledger.MsgLinkStatus)
		}
	}
	l, err := s.svc.BrandLinks.CreateLink(c.UserContext(), programID, partnerID.Value, code.Value, active)
	if err != nil {
		return err
	}
	s.invalidateLink(c, l.Code) // an edge may remember the code as unknown
	return ok(c, fiber.StatusCreated, brandLinkJSON(l))
}

// listBrandLinks is GET /api/v1/programs/:id/links (any member): a page of
// the program's links, newest first, with the event listing's page
// bounds, filtered by partner_id and status.
func (s *Server) listBrandLinks(c *fiber.Ctx) error {
	programID, err := s.programWithPermission(c, "id", ledger.PermPartnersRead, msgNoLinksRead)
	if err != nil {
		return err
	}
	q, err := ledger.BrandLinkQueryInput{
		Page:      queryInt(c, "page"),
		PageSize:  queryInt(c, "pageSize"),
		PartnerID: queryInt(c, "partner_id"),
		Status:    queryString(c, "status"),
	}.Validate(programID)
	if err != nil {
		return err
	}
	page, err := s.svc.BrandLinks.ListLinks(c.UserContext(), q)
	if err != nil {
		return err
	}
	data := make([]fiber.Map, len(page.Links))
	for i := range page.Links {
		data[i] = brandLinkJSON(&page.Links[i])
	}
	return renderPage(c, data, page.Page, page.PageSize, page.PageCount(), page.Total)
}

// patchBrandLink is PATCH /api/v1/programs/:id/links/:linkId (owner or
// admin): status active or disabled. Once committed, every edge instance
// drops the link from its cache, as the operator's PATCH does, so a
// disabled link answers the click 410 at once everywhere.
func (s *Server) patchBrandLink(c *fiber.Ctx) error {
	programID, err := s.programWithPermission(c, "id", ledger.PermPartnersWrite, msgLinksAdminOnly)
	if err != nil {
		return err
	}
	linkID, f, err := pathIDAndFields(c, "linkId", "link")
	if err != nil {
		return err
	}
	status := f.String("status")
	active, err := ledger.ParseLinkStatus(status.Value)
	if !status.OK() || err != nil {
		return invalid(ledger.MsgLinkStatus)
	}
	l, err := s.svc.BrandLinks.SetLinkStatus(c.UserContext(), programID, linkID, active)
	if err != nil {
		return err
	}
	s.invalidateLink(c, l.Code)
	return ok(c, fiber.StatusOK, brandLinkJSON(l))
}

// brandLinkJSON renders a link as the brand's routes show it; the partner
// fields are null when the partner is gone.
func brandLinkJSON(l *ledger.BrandLink) fiber.Map {
	m := fiber.Map{
		"id":            l.ID,
		"program_id":    l.ProgramID,
		"code":          l.Code,
		"partner_id":    l.PartnerID,
		"partner_name":  nil,
		"partner_email": nil,
		"status":        ledger.LinkStatus(l.Active),
		"url":           l.URL(),
		"clicks":        l.Clicks,
		"created_at":    formatTime(l.CreatedAt),
		"updated_at":    formatTime(l.UpdatedAt),
	}
	if l.PartnerID != nil {
		m["partner_name"], m["partner_email"] = l.PartnerName, l.PartnerEmail
	}
	return m
}
