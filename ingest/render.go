package ingest

import (
	"encoding/json"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// ok renders a success in the platform envelope: {"data": v}.
func ok(c *fiber.Ctx, status int, v any) error {
	return c.Status(status).JSON(fiber.Map{"data": v})
}

// pathIDAndFields reads a positive integer path parameter and then the
// JSON body, the prologue of every handler that changes a named resource.
func pathIDAndFields(c *fiber.Ctx, name, what string) (int64, fields, error) {
	id, err := pathID(c, name, what)
	if err != nil {
		return 0, nil, err
	}
	f, err := parseFields(c)
	if err != nil {
		return 0, nil, err
	}
	return id, f, nil
}

// pathID reads a positive integer path parameter; anything else names no
// resource (404).
func pathID(c *fiber.Ctx, name, what string) (int64, error) {
	id, err := strconv.ParseInt(c.Params(name), 10, 64)
	if err != nil || id <= 0 {
		return 0, ledger.NewError(ledger.ENotFound, what+" not found")
	}
	return id, nil
}

// decimalJSON renders an exact decimal as a JSON number.
func decimalJSON(s string) json.Number { return json.Number(s) }

// programJSON renders a program: every spec field, the key only masked.
func programJSON(p *ledger.Program) fiber.Map {
	return fiber.Map{
		"id":               p.ID,
		"workspace_id":     p.WorkspaceID,
		"name":             p.Name,
		"domain":           p.Domain,
		"commission_type":  string(p.CommissionType),
		"commission_rate":  decimalJSON(p.CommissionRate.String()),
		"duration_months":  p.DurationMonths,
		"cookie_duration":  p.CookieDuration,
		"lead_auth":        p.LeadAuth,
		"hold_days":        p.HoldDays,
		"currency":         string(p.Currency),
		"status":           p.Status,
		"api_token_masked": p.APITokenMasked,
		"created_at":       formatTime(p.CreatedAt),
		"updated_at":       formatTime(p.UpdatedAt),
	}
}

func linkJSON(l *ledger.Link) fiber.Map {
	return fiber.Map{
		"id":         l.ID,
		"program_id": l.ProgramID,
		"partner_id": l.PartnerID,
		"code":       l.Code,
		"active":     l.Active,
		"created_at": formatTime(l.CreatedAt),
		"updated_at": formatTime(l.UpdatedAt),
	}
}

// programInput reads the program fields of a request body.
func programInput(f fields) ledger.ProgramInput {
	return ledger.ProgramInput{
		Name:           f.String("name"),
		Domain:         f.String("domain"),
		CommissionType: f.Text("commission_type"),
		CommissionRate: f.Decimal("commission_rate"),
		DurationMonths: f.Int("duration_months"),
		CookieDuration: f.Int("cookie_duration"),
		LeadAuth:       f.String("lead_auth"),
		HoldDays:       f.Int("hold_days"),
		Currency:       f.String("currency"),
	}
}

// renderPage writes one page of a listing: the rows in data (a slice) and
// the pagination in meta, as the spec's event listing shows them.
func renderPage(c *fiber.Ctx, data any, page, pageSize, pageCount, total int64) error {
	return c.JSON(pageJSON{Data: data, Meta: pageMeta{Pagination: pagination{
		Page: page, PageSize: pageSize, PageCount: pageCount, Total: total}}})
}

type pageJSON struct {
	Data any      `json:"data"`
	Meta pageMeta `json:"meta"`
}

type pageMeta struct {
	Pagination pagination `json:"pagination"`
}

type pagination struct {
	Page      int64 `json:"page"`
	PageSize  int64 `json:"pageSize"`
	PageCount int64 `json:"pageCount"`
	Total     int64 `json:"total"`
}
