package web

import "github.com/gofiber/fiber/v2"

// brandRoutes are the brand's pages under /app/.
func (p *Pages) brandRoutes(r fiber.Router) {
	// ==== brand pages ====
}
