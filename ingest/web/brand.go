package web

import (
	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// brandRoutes are the brand's pages under /app/.
func (p *Pages) brandRoutes(r fiber.Router) {
	r.Get("/", p.brandPrograms)
	r.Post("/programs", p.brandCreateProgram)
	// Commissions, payouts, events and settings.
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
	// Overview, partners and links.
	r.Get("/programs/:id", p.brandOverview)
	r.Get("/programs/:id/", p.brandOverview)
	r.Get("/programs/:id/partners", p.brandPartners)
	r.Post("/programs/:id/partners/:partnerId/status", p.brandPartnerStatus)
	r.Post("/programs/:id/partners/:partnerId/group", p.brandPartnerGroup)
	r.Post("/programs/:id/invites", p.brandInvite)
	r.Post("/programs/:id/invites/:inviteId/resend", p.brandResendInvite)
	r.Post("/programs/:id/invites/:inviteId/cancel", p.brandCancelInvite)
	r.Post("/programs/:id/applications/:applicationId/approve", p.brandApproveApplication)
	r.Post("/programs/:id/applications/:applicationId/reject", p.brandRejectApplication)
	r.Post("/programs/:id/groups", p.brandCreateGroup)
	r.Post("/programs/:id/groups/:groupId", p.brandUpdateGroup)
	r.Get("/programs/:id/links", p.brandLinks)
	r.Post("/programs/:id/links", p.brandCreateLink)
	r.Post("/programs/:id/links/:linkId/status", p.brandLinkStatus)
}

// brandProgram reads the program a brand page is about, for its title and
// tabs; one the person cannot see is the API's 404, a 404 page, whoever
// owns it.
func (p *Pages) brandProgram(c *fiber.Ctx, tab string) (*apiclient.DashMyProgram, *programNav, error) {
	id, err := pathID(c, "id")
	if err != nil {
		return nil, nil, err
	}
	ctx, auth := p.as(c)
	resp, err := p.api.GetMyProgramWithResponse(ctx, id, auth)
	if err = apiCheck(resp, err); err != nil {
		return nil, nil, err
	}
	prog := &resp.JSON200.Data
	return prog, &programNav{ID: id, Name: prog.Name, Tab: tab}, nil
}
