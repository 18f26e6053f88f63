package web

import (
	"net/url"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// commissionsPageSize is how many commissions a page of the partner's
// commissions lists.
const commissionsPageSize = 25

// partnerCommissions is GET /partner/commissions: the partner's
// commissions in every program, newest first, filtered by program and
// status (a GET form, so a filtered page can be bookmarked) and paged.
func (p *Pages) partnerCommissions(c *fiber.Ctx) error {
	f := &form{Name: "filter", Values: map[string]string{
		"program_id": c.Query("program_id"), "status": c.Query("status"),
	}, Errors: map[string]string{}}
	ctx, auth := p.as(c)
	progs, err := p.api.PartnerProgramsWithResponse(ctx, auth)
	if err = apiCheck(progs, err); err != nil {
		return err
	}
	params := &apiclient.PartnerCommissionsParams{PageSize: apiclient.Ptr(commissionsPageSize)}
	// A value that does not parse is sent as 0, which the API refuses with
	// its own message, so that the page says what the API says.
	if v := f.Value("program_id"); v != "" {
		id, _ := strconv.ParseInt(v, 10, 64)
		params.ProgramId = &id
	}
	if v := f.Value("status"); v != "" {
		params.Status = apiclient.Ptr(apiclient.PartnerCommissionsParamsStatus(v))
	}
	page := 1
	if v := c.Query("page"); v != "" {
		page, _ = strconv.Atoi(v)
		params.Page = &page
	}
	status := fiber.StatusOK
	data := map[string]any{"Programs": progs.JSON200.Data, "Statuses": commissionStatuses}
	resp, err := p.api.PartnerCommissionsWithResponse(ctx, params, auth)
	if err = apiCheck(resp, err); err != nil {
		var shown bool
		if status, shown = f.refuse(err); !shown {
			return err
		}
	} else {
		pg := resp.JSON200.Meta.Pagination
		data["Commissions"] = resp.JSON200.Data
		data["Pagination"] = pg
		if pg.Page > 1 {
			data["PrevURL"] = commissionsURL(f, pg.Page-1)
		}
		if pg.Page < pg.PageCount {
			data["NextURL"] = commissionsURL(f, pg.Page+1)
		}
	}
	return p.render(c, status, "partner_commissions", view{Title: "Your commissions", Tab: "commissions", Form: f, Data: data})
}

// commissionsURL is the link to another page of the same filtered list.
func commissionsURL(f *form, page int) string {
	q := url.Values{}
	for _, k := range []string{"program_id", "status"} {
		if v := f.Value(k); v != "" {
			q.Set(k, v)
		}
	}
	q.Set("page", strconv.Itoa(page))
	return "/partner/commissions?" + q.Encode()
}
