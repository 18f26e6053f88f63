package web

import (
	"fmt"

	"github.com/gofiber/fiber/v2"
)

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
