package web

import (
	"fmt"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// openProgram reads the program of a brand page like brandProgram, and
// shows a program of another workspace (the API's 403) as no page at all:
// a brand learns nothing of another's programs, not even that one exists.
func (p *Pages) openProgram(c *fiber.Ctx, tab string) (*apiclient.DashProgramSettings, *programNav, error) {
	prog, nav, err := p.brandProgram(c, tab)
	if re, ok := asResponseError(err); ok && re.Status == fiber.StatusForbidden {
		return nil, nil, fiber.NewError(fiber.StatusNotFound, "There is no such program.")
	}
	return prog, nav, err
}

// jsonType is the content type of the API bodies the forms send.
const jsonType = "application/json"

// programPath is the path of a brand program's page (tab "" is the
// overview).
func programPath(id int64, tab string) string {
	return fmt.Sprintf("/app/programs/%d/%s", id, tab)
}

// pager is the page navigation of a paginated list.
type pager struct {
	Page, PageCount, Total int
	Path                   string // the list's page, for ?page= links
}

func (g pager) Prev() int { return g.Page - 1 }
func (g pager) Next() int {
	if g.Page >= g.PageCount {
		return 0
	}
	return g.Page + 1
}

// pageOf reads a list's page number from the query (1 when absent or bad).
func pageOf(c *fiber.Ctx) int {
	n := c.QueryInt("page", 1)
	if n < 1 {
		return 1
	}
	return n
}
