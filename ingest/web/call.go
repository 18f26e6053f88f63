package web

import (
	"context"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// as returns what an API call on behalf of the page's person needs: a
// context carrying the browser's address and request id, and their
// session token as the bearer credential.
func (p *Pages) as(c *fiber.Ctx) (context.Context, apiclient.RequestEditorFn) {
	return p.asToken(c, tokenOf(c))
}

func (p *Pages) asToken(c *fiber.Ctx, token string) (context.Context, apiclient.RequestEditorFn) {
	ctx := withPeer(c.UserContext(), peer{
		host:         string(c.Request().Host()),
		addr:         c.Context().RemoteAddr(),
		forwardedFor: c.Get(fiber.HeaderXForwardedFor),
		requestID:    c.GetRespHeader(fiber.HeaderXRequestID),
	})
	return ctx, apiclient.Bearer(token)
}

// pathID reads a positive id from the path; anything else is a 404 page.
func pathID(c *fiber.Ctx, name string) (int64, error) {
	id, err := strconv.ParseInt(c.Params(name), 10, 64)
	if err != nil || id <= 0 {
		return 0, fiber.NewError(fiber.StatusNotFound, "There is no such page.")
	}
	return id, nil
}

// periodOf reads the chart window of a page: 7, 30 or 90 days (default 30).
func periodOf(c *fiber.Ctx) string {
	switch v := c.Query("period"); v {
	case "7d", "30d", "90d":
		return v
	}
	return "30d"
}
