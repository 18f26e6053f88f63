package web

import (
	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// brandRoutes are the brand's pages under /app/.
func (p *Pages) brandRoutes(r fiber.Router) {
	// ==== brand pages ====
	// -- commissions, payouts, events and settings (helper B2) --
	r.Get("/programs/:id/commissions", p.brandCommissions)
	r.Get("/programs/:id/commissions/csv", p.brandCommissionsCSV)
	r.Post("/programs/:id/commissions/:cid/approve", p.brandApproveCommission)
	r.Post("/programs/:id/commissions/:cid/reject", p.brandRejectCommission)
	r.Get("/programs/:id/payouts", p.brandPayouts)
	r.Get("/programs/:id/payouts/csv", p.brandPayoutsCSV)
	r.Post("/programs/:id/payouts", p.brandCreatePayouts)
	for _, next := range []string{"processing", "paid", "failed"} {
		r.Post("/programs/:id/payouts/:payoutId/mark-"+next, p.brandMarkPayout(next))
	}
	r.Get("/programs/:id/events", p.brandEvents)
	r.Get("/programs/:id/settings", p.brandSettings)
	r.Post("/programs/:id/settings", p.brandUpdateSettings)
	r.Post("/programs/:id/settings/key", p.brandRegenerateKey)
	r.Post("/programs/:id/settings/webhooks", p.brandCreateWebhook)
	r.Post("/programs/:id/settings/webhooks/:webhookId/delete", p.brandDeleteWebhook)
	r.Get("/programs/:id/settings/webhooks/:webhookId", p.brandWebhookLog)
	r.Post("/programs/:id/settings/webhooks/:webhookId/test", p.brandTestWebhook)
	// -- end of helper B2's pages --
}

// brandProgram reads the program a brand page is about, for its title and
// tabs; a program the person cannot see is the API's 404, shown as such.
func (p *Pages) brandProgram(c *fiber.Ctx, tab string) (*apiclient.DashProgramSettings, *programNav, error) {
	id, err := pathID(c, "id")
	if err != nil {
		return nil, nil, err
	}
	ctx, auth := p.as(c)
	resp, err := p.api.GetProgramSettingsWithResponse(ctx, id, auth)
	if err = apiError(resp.HTTPResponse, resp.Body, err); err != nil {
		return nil, nil, err
	}
	prog := &resp.JSON200.Data
	return prog, &programNav{ID: id, Name: prog.Name, Tab: tab}, nil
}
