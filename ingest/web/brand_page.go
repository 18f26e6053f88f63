package web

import (
	"github.com/gofiber/fiber/v2"
)

// jsonType is the content type of the API bodies the forms send.
const jsonType = "application/json"

// pageOf reads a list's page number from the query (1 when absent or bad).
func pageOf(c *fiber.Ctx) int {
	n := c.QueryInt("page", 1)
	if n < 1 {
		return 1
	}
	return n
}
