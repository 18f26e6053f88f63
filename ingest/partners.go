package ingest

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// limitPartners is the brand's partner reads per session token and minute
// (bucket "partners", shared by the list, its CSV and the one-partner read).
const limitPartners = 120

const (
	msgNoPartnersRead    = "You do not have access to this program's partners"
	msgPartnersAdminOnly = "Only a workspace owner or admin can change the program's partners"
)

// partnerCSVHeader names the CSV export's columns, in order.
var partnerCSVHeader = []string{
	"id", "name", "email", "status", "joined_at", "currency", "clicks", "leads", "conversions",
	"revenue", "revenue_by_currency", "commissions_pending", "commissions_approved", "commissions_paid",
	"commissions_by_currency", "balance", "group_id", "group_name",
}

// programPartnerRoutes are the brand's reads of a program's partners and
// its change of one (PATCH, owner or admin), all in the "partners" bucket.
func (s *Server) programPartnerRoutes() {
	dashboard := s.requireSession(ledger.DashboardSession)
	limit := s.rateLimit("partners", limitPartners, byToken)
	s.limitedRoute("GET", "/api/v1/programs/:id/partners", withStyle(defaultStyle), limit, dashboard, s.listProgramPartners)
	s.limitedRoute("GET", "/api/v1/programs/:id/partners/:partnerId", withStyle(defaultStyle), limit, dashboard, s.getProgramPartner)
	s.limitedRoute("PATCH", "/api/v1/programs/:id/partners/:partnerId", withStyle(defaultStyle), limit, dashboard, s.patchProgramPartner)
}

// listProgramPartners is GET /api/v1/programs/:id/partners: a page of the
// program's partners with their counts and money, or with ?format=csv
// every matching partner as CSV.
func (s *Server) listProgramPartners(c *fiber.Ctx) error {
	programID, err := s.programWithPermission(c, "id", ledger.PermPartnersRead, msgNoPartnersRead)
	if err != nil {
		return err
	}
	q, err := ledger.ProgramPartnerQueryInput{
		Page:     queryInt(c, "page"),
		PageSize: queryInt(c, "pageSize"),
		Status:   queryString(c, "status"),
		GroupID:  queryInt(c, "group_id"),
		Q:        queryString(c, "q"),
	}.Validate(programID)
	if err != nil {
		return err
	}
	asCSV, err := wantsCSV(c, ledger.MsgPartnerFormat)
	if err != nil {
		return err
	}
	if asCSV {
		return s.exportProgramPartners(c, q)
	}
	page, err := s.svc.ProgramPartners.ProgramPartners(c.UserContext(), q)
	if err != nil {
		return err
	}
	data := make([]fiber.Map, len(page.Partners))
	for i := range page.Partners {
		data[i] = programPartnerJSON(&page.Partners[i])
	}
	return renderPage(c, data, int64(page.Page), int64(page.PageSize), int64(page.PageCount()), int64(page.Total))
}

// getProgramPartner is GET /api/v1/programs/:id/partners/:partnerId: one
// partner of the program, as the listing renders it, with its links there.
func (s *Server) getProgramPartner(c *fiber.Ctx) error {
	programID, err := s.programWithPermission(c, "id", ledger.PermPartnersRead, msgNoPartnersRead)
	if err != nil {
		return err
	}
	partnerID, err := pathID(c, "partnerId", "partner")
	if err != nil {
		return err
	}
	return s.renderProgramPartner(c, programID, partnerID)
}

// patchProgramPartner is PATCH /api/v1/programs/:id/partners/:partnerId
// (owner or admin): status active or suspended and/or group_id, a group of
// this program. A change of status drops the partner's link codes from
// every edge's cache once committed, so its links answer the click 410
// (suspended) or take clicks again (active) at once everywhere. The answer
// is the partner as GET renders it.
func (s *Server) patchProgramPartner(c *fiber.Ctx) error {
	programID, err := s.programWithPermission(c, "id", ledger.PermPartnersWrite, msgPartnersAdminOnly)
	if err != nil {
		return err
	}
	partnerID, f, err := pathIDAndFields(c, "partnerId", "partner")
	if err != nil {
		return err
	}
	ch, err := ledger.PartnerChangeInput{Status: f.String("status"), GroupID: f.Int("group_id")}.Validate()
	if err != nil {
		return err
	}
	done, err := s.svc.ProgramPartners.ChangePartner(c.UserContext(), programID, partnerID, sessionOf(c).UserID, ch)
	if err != nil {
		return err
	}
	if done.StatusChanged {
		for _, code := range done.LinkCodes {
			s.invalidateLink(c, code)
		}
	}
	return s.renderProgramPartner(c, programID, partnerID)
}

// renderProgramPartner answers one partner of the program, as the listing
// renders it, with its links there.
func (s *Server) renderProgramPartner(c *fiber.Ctx, programID, partnerID int64) error {
	d, err := s.svc.ProgramPartners.ProgramPartner(c.UserContext(), programID, partnerID)
	if err != nil {
		return err
	}
	m := programPartnerJSON(&d.ProgramPartner)
	links := make([]fiber.Map, len(d.Links))
	for i, l := range d.Links {
		links[i] = fiber.Map{"id": l.ID, "code": l.Code, "active": l.Active}
	}
	m["links"] = links
	return ok(c, fiber.StatusOK, m)
}

// exportProgramPartners streams every partner q matches as CSV, in the
// listing's order (streamCSV).
func (s *Server) exportProgramPartners(c *fiber.Ctx, q ledger.ProgramPartnerQuery) error {
	return streamCSV(s, c, csvExport[ledger.ProgramPartner]{
		what: "partner", programID: q.ProgramID, header: partnerCSVHeader, row: partnerCSVRow, batch: ledger.PartnerExportBatch,
		next: func(ctx context.Context, after *ledger.ProgramPartner) ([]ledger.ProgramPartner, error) {
			return s.svc.ProgramPartners.ProgramPartnerBatch(ctx, q, after)
		},
	})
}

// programPartnerJSON renders a listed partner. Money is in major units as
// exact decimals; revenue, commissions and balance are in the program's
// currency, and the *_by_currency objects hold every currency the
// partner's sales and commissions in the program were in.
func programPartnerJSON(p *ledger.ProgramPartner) fiber.Map {
	revenue := fiber.Map{}
	for cur, v := range p.Revenue {
		revenue[string(cur)] = moneyJSON(v, cur)
	}
	commissions := fiber.Map{}
	for cur, t := range p.Commissions {
		commissions[string(cur)] = commissionTotalsJSON(t, cur)
	}
	return fiber.Map{
		"id":                      p.PartnerID,
		"name":                    p.Name,
		"email":                   p.Email,
		"status":                  p.Status,
		"group_id":                p.GroupID,
		"group_name":              p.GroupName,
		"joined_at":               formatTime(p.JoinedAt),
		"currency":                string(p.Currency),
		"clicks":                  p.Clicks,
		"leads":                   p.Leads,
		"conversions":             p.Conversions,
		"revenue":                 moneyJSON(p.Revenue[p.Currency], p.Currency),
		"revenue_by_currency":     revenue,
		"commissions":             commissionTotalsJSON(p.Commissions[p.Currency], p.Currency),
		"commissions_by_currency": commissions,
		"balance":                 moneyJSON(p.Balance, p.Currency),
	}
}

func commissionTotalsJSON(t ledger.CommissionTotals, cur ledger.Currency) fiber.Map {
	return fiber.Map{
		"pending":  moneyJSON(t.Pending, cur),
		"approved": moneyJSON(t.Approved, cur),
		"paid":     moneyJSON(t.Paid, cur),
	}
}

// partnerCSVRow is a partner's CSV record, in partnerCSVHeader's order.
// The text cells a person or another system wrote (name, email) are made
// safe for spreadsheets (csvText); the cells this service writes are
// numbers, times, codes and JSON objects.
func partnerCSVRow(p *ledger.ProgramPartner) []string {
	m := programPartnerJSON(p)
	own := p.Commissions[p.Currency]
	return []string{
		strconv.FormatInt(p.PartnerID, 10),
		csvText(p.Name),
		csvText(p.Email),
		p.Status,
		formatTime(p.JoinedAt),
		string(p.Currency),
		strconv.FormatInt(p.Clicks, 10),
		strconv.FormatInt(p.Leads, 10),
		strconv.FormatInt(p.Conversions, 10),
		ledger.MinorToMajor(p.Revenue[p.Currency], p.Currency).String(),
		csvJSON(m["revenue_by_currency"]),
		ledger.MinorToMajor(own.Pending, p.Currency).String(),
		ledger.MinorToMajor(own.Approved, p.Currency).String(),
		ledger.MinorToMajor(own.Paid, p.Currency).String(),
		csvJSON(m["commissions_by_currency"]),
		ledger.MinorToMajor(p.Balance, p.Currency).String(),
		strconv.FormatInt(p.GroupID, 10),
		csvText(p.GroupName),
	}
}

// csvText keeps a spreadsheet from reading a text cell as a formula: a
// cell that starts with =, +, -, @, a tab or a carriage return gets a
// leading single quote (OWASP's advice on CSV injection).
func csvText(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// csvJSON renders an object of the row as compact JSON (keys sorted).
func csvJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}
