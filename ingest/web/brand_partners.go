package web

import (
	"fmt"

	"github.com/gofiber/fiber/v2"
	"golang.org/x/sync/errgroup"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// brandPartners is GET /app/programs/:id/partners: the partners with
// their numbers, and how partners join and are grouped: invites,
// applications and groups.
func (p *Pages) brandPartners(c *fiber.Ctx) error {
	return p.showBrandPartners(c, fiber.StatusOK, nil)
}

func (p *Pages) showBrandPartners(c *fiber.Ctx, status int, f *form) error {
	prog, nav, err := p.brandProgram(c, "partners")
	if err != nil {
		return err
	}
	ctx, auth := p.as(c)
	page := pageOf(c)
	// The four lists are independent: read at once.
	var (
		partners *apiclient.ListProgramPartnersResponse
		groups   *apiclient.ListPartnerGroupsResponse
		invites  *apiclient.ListInvitesResponse
		apps     *apiclient.ListApplicationsResponse
		g        errgroup.Group
	)
	g.Go(func() (err error) {
		partners, err = p.api.ListProgramPartnersWithResponse(ctx, nav.ID, &apiclient.ListProgramPartnersParams{Page: &page}, auth)
		return apiCheck(partners, err)
	})
	g.Go(func() (err error) {
		groups, err = p.api.ListPartnerGroupsWithResponse(ctx, nav.ID, auth)
		return apiCheck(groups, err)
	})
	g.Go(func() (err error) {
		invites, err = p.api.ListInvitesWithResponse(ctx, nav.ID, &apiclient.ListInvitesParams{
			Status: apiclient.Ptr(apiclient.ListInvitesParamsStatusPending), PageSize: apiclient.Ptr(100)}, auth)
		return apiCheck(invites, err)
	})
	g.Go(func() (err error) {
		apps, err = p.api.ListApplicationsWithResponse(ctx, nav.ID, &apiclient.ListApplicationsParams{
			Status: apiclient.Ptr(apiclient.ListApplicationsParamsStatusPending), PageSize: apiclient.Ptr(100)}, auth)
		return apiCheck(apps, err)
	})
	if err := g.Wait(); err != nil {
		return err
	}
	pg := partners.JSON200.Meta.Pagination
	edit, create := groupForms(groups.JSON200.Data, f, string(prog.Currency))
	return p.render(c, status, "brand_partners", view{Title: "Partners · " + prog.Name, Program: nav, Form: f, Data: map[string]any{
		"Program": prog, "Partners": partners.JSON200.Data, "Groups": groups.JSON200.Data,
		"GroupNames": groupNames(groups.JSON200.Data),
		"Invites":    invites.JSON200.Data, "InvitesTotal": invites.JSON200.Meta.Pagination.Total,
		"Applications": apps.JSON200.Data, "ApplicationsTotal": apps.JSON200.Meta.Pagination.Total,
		"Pager":      newPager(programPath(nav.ID, "partners"), &form{}, pg.Page, pg.PageCount, pg.Total),
		"GroupForms": edit, "NewGroup": create,
	}})
}

// groupTypes are the types a group's terms may have, as the API
// names them, with their labels.
var groupTypes = []tab{
	{"percent", "", "Percent of the first sale"},
	{"recurring_percent", "", "Percent of every sale"},
	{"fixed", "", "Fixed amount for the first sale"},
	{"recurring_fixed", "", "Fixed amount for every sale"},
}

func groupNames(gs []apiclient.PartnerGroup) map[int64]string {
	out := make(map[int64]string, len(gs))
	for _, g := range gs {
		out[g.Id] = g.Name
	}
	return out
}

// brandPartnerStatus suspends or reactivates a partner of the program.
func (p *Pages) brandPartnerStatus(c *fiber.Ctx) error {
	return p.updatePartner(c, "status", func(d *apiclient.ProgramPartnerDetail) string {
		if d.Status == "suspended" {
			return "Partner " + d.Name + " suspended."
		}
		return "Partner " + d.Name + " is " + string(d.Status) + "."
	})
}

// brandPartnerGroup moves a partner to another group of the program.
func (p *Pages) brandPartnerGroup(c *fiber.Ctx) error {
	return p.updatePartner(c, "group_id", func(d *apiclient.ProgramPartnerDetail) string {
		return "Partner " + d.Name + " moved to the group " + d.GroupName + "."
	})
}

// updatePartner sends one change of a partner (a PATCH of one field); a
// refusal is shown in the partner's row, a success names the result.
func (p *Pages) updatePartner(c *fiber.Ctx, field string, done func(*apiclient.ProgramPartnerDetail) string) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	partnerID, err := pathID(c, "partnerId")
	if err != nil {
		return err
	}
	f := readForm(c, fmt.Sprintf("partner-%d", partnerID), field)
	ctx, auth := p.as(c)
	resp, err := p.api.UpdateProgramPartnerWithBodyWithResponse(ctx, id, partnerID, jsonType, f.json("group_id"), auth)
	if err = apiCheck(resp, err); err != nil {
		if status, shown := f.refuse(err); shown {
			return p.showBrandPartners(c, status, f)
		}
		return err
	}
	return p.flash(c, done(&resp.JSON200.Data), programPath(id, "partners"))
}
