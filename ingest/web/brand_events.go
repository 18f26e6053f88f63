package web

import (
	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// eventFilters are the query parameters of the spec's event listing
// (GET /api/tracking/events/:programId) the page passes on as sent.
var eventFilters = []string{"eventType", "dateFrom", "dateTo", "page", "pageSize"}

var eventTypes = []string{"click", "lead", "conversion"}

// brandEvents is GET /app/programs/:id/events: the program's clicks, leads
// and conversions, newest first, filtered and paged by the API; a refused
// filter is shown next to its field.
func (p *Pages) brandEvents(c *fiber.Ctx) error {
	prog, nav, err := p.brandProgram(c, "events")
	if err != nil {
		return err
	}
	filter := filterForm(c, eventFilters...)
	base := programPath(prog.Id, "events")
	data := map[string]any{"Filter": filter, "Types": eventTypes, "Base": base}
	status := fiber.StatusOK
	ctx, auth := p.as(c)
	resp, err := p.api.ListTrackingEventsWithResponse(ctx, prog.Id, &apiclient.ListTrackingEventsParams{}, auth, rawQuery(filter.Values))
	if err = apiCheck(resp, err); err != nil {
		st, shown := refuseField(filter, err)
		if !shown {
			return err
		}
		status = st
	} else {
		data["Events"] = resp.JSON200.Data
		pg := resp.JSON200.Meta.Pagination
		data["Pager"] = newPager(base, filter, pg.Page, pg.PageCount, pg.Total)
	}
	return p.render(c, status, "brand_events", view{Title: "Events · " + prog.Name, Program: nav, Data: data})
}
