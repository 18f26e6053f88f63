package web

import (
	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// partnerRoutes are the partner's pages under /partner/.
func (p *Pages) partnerRoutes(r fiber.Router) {
	r.Get("/", p.partnerHome)
	r.Post("/invites/:inviteId/accept", p.partnerAcceptInvite)
	r.Post("/invites/:inviteId/decline", p.partnerDeclineInvite)
	r.Get("/programs/:id", p.partnerProgram)
	r.Post("/programs/:id/links", p.partnerCreateLink)
	// Commissions, payouts and the payout method, notifications.
	// Commissions, payouts with the payout method, notifications.
	r.Get("/commissions", p.partnerCommissions)
	r.Get("/payouts", p.partnerPayouts)
	r.Post("/payouts/programs/:id/request", p.partnerRequestPayout)
	r.Post("/payouts/method", p.partnerSetPayoutMethod)
	r.Post("/payouts/method/delete", p.partnerDeletePayoutMethod)
	r.Get("/notifications", p.partnerNotifications)
	r.Post("/notifications/read-all", p.partnerReadAllNotifications)
	r.Post("/notifications/:notificationId/read", p.partnerReadNotification)
}

// partnerMemberships counts the programs a partner belongs to or is
// invited to (where a fresh sign-in lands).
func (p *Pages) partnerMemberships(c *fiber.Ctx, token string) (int, error) {
	ctx, auth := p.asToken(c, token)
	progs, err := p.api.PartnerProgramsWithResponse(ctx, auth)
	if err = apiCheck(progs, err); err != nil {
		return 0, err
	}
	invites, err := p.api.PartnerInvitesWithResponse(ctx, auth)
	if err = apiCheck(invites, err); err != nil {
		return 0, err
	}
	return len(progs.JSON200.Data) + len(invites.JSON200.Data), nil
}

// partnerHome is GET /partner/: the partner's programs and open invites.
func (p *Pages) partnerHome(c *fiber.Ctx) error {
	ctx, auth := p.as(c)
	progs, err := p.api.PartnerProgramsWithResponse(ctx, auth)
	if err = apiCheck(progs, err); err != nil {
		return err
	}
	invites, err := p.api.PartnerInvitesWithResponse(ctx, auth)
	if err = apiCheck(invites, err); err != nil {
		return err
	}
	return p.render(c, fiber.StatusOK, "partner_home", view{Title: "Your programs", Tab: "programs", Data: map[string]any{
		"Programs": progs.JSON200.Data, "Invites": invites.JSON200.Data,
	}})
}

func (p *Pages) partnerAcceptInvite(c *fiber.Ctx) error {
	id, err := pathID(c, "inviteId")
	if err != nil {
		return err
	}
	ctx, auth := p.as(c)
	resp, err := p.api.AcceptPartnerInviteWithResponse(ctx, id, auth)
	if err = apiCheck(resp, err); err != nil {
		return err
	}
	return p.flash(c, "Invite accepted: you are in the program.", "/partner/")
}

func (p *Pages) partnerDeclineInvite(c *fiber.Ctx) error {
	id, err := pathID(c, "inviteId")
	if err != nil {
		return err
	}
	ctx, auth := p.as(c)
	resp, err := p.api.DeclinePartnerInviteWithResponse(ctx, id, auth)
	if err = apiCheck(resp, err); err != nil {
		return err
	}
	return p.flash(c, "Invite declined.", "/partner/")
}

// partnerProgram is GET /partner/programs/:id: the program's terms, the
// partner's links to copy, and its numbers per day.
func (p *Pages) partnerProgram(c *fiber.Ctx) error {
	return p.showPartnerProgram(c, fiber.StatusOK, nil)
}

func (p *Pages) showPartnerProgram(c *fiber.Ctx, status int, f *form) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	ctx, auth := p.as(c)
	progs, err := p.api.PartnerProgramsWithResponse(ctx, auth)
	if err = apiCheck(progs, err); err != nil {
		return err
	}
	var prog *apiclient.PartnerProgram
	for i := range progs.JSON200.Data {
		if progs.JSON200.Data[i].Id == id {
			prog = &progs.JSON200.Data[i]
		}
	}
	if prog == nil {
		return fiber.NewError(fiber.StatusNotFound, "You are not in this program.")
	}
	links, err := p.api.PartnerLinksWithResponse(ctx, id, auth)
	if err = apiCheck(links, err); err != nil {
		return err
	}
	period := periodOf(c)
	stats, err := p.api.PartnerStatsWithResponse(ctx, id, &apiclient.PartnerStatsParams{Period: apiclient.Ptr(apiclient.PartnerStatsParamsPeriod(period))}, auth)
	if err = apiCheck(stats, err); err != nil {
		return err
	}
	return p.render(c, status, "partner_program", view{Title: prog.Name, Tab: "programs", Form: f, Data: map[string]any{
		"Program": prog, "Links": links.JSON200.Data, "Stats": stats.JSON200.Data, "Period": period,
		"Chart": partnerChart(stats.JSON200), "Periods": []string{"7d", "30d", "90d"},
	}})
}

// partnerCreateLink is the form of a new link with the partner's own code.
func (p *Pages) partnerCreateLink(c *fiber.Ctx) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	f := readForm(c, "link", "code")
	ctx, auth := p.as(c)
	resp, err := p.api.CreatePartnerLinkWithResponse(ctx, id, apiclient.PartnerLinkCreate{Code: f.Value("code")}, auth)
	if err = apiCheck(resp, err); err != nil {
		if status, shown := f.refuse(err); shown {
			return p.showPartnerProgram(c, status, f)
		}
		return err
	}
	return p.flash(c, "Link "+f.Value("code")+" created.", c.Path()[:len(c.Path())-len("/links")])
}
