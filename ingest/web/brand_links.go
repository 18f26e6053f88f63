package web

import (
	"fmt"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// linkPartnerChoices is how many partners the new link form offers
// (the API's largest page; a program with more names the partner by id).
const linkPartnerChoices = 100

// brandLinks is GET /app/programs/:id/links: the program's partner links
// with their clicks and URL to copy, a form for a new one, and a switch
// to disable or enable each.
func (p *Pages) brandLinks(c *fiber.Ctx) error {
	return p.showBrandLinks(c, fiber.StatusOK, nil)
}

func (p *Pages) showBrandLinks(c *fiber.Ctx, status int, f *form) error {
	prog, nav, err := p.brandProgram(c, "links")
	if err != nil {
		return err
	}
	ctx, auth := p.as(c)
	page := pageOf(c)
	links, err := p.api.ListBrandLinksWithResponse(ctx, nav.ID, &apiclient.ListBrandLinksParams{Page: &page}, auth)
	if err = apiCheck(links, err); err != nil {
		return err
	}
	partners, err := p.api.ListProgramPartnersWithResponse(ctx, nav.ID, &apiclient.ListProgramPartnersParams{
		Status: apiclient.Ptr(apiclient.ListProgramPartnersParamsStatusActive), PageSize: apiclient.Ptr(linkPartnerChoices)}, auth)
	if err = apiCheck(partners, err); err != nil {
		return err
	}
	pg := links.JSON200.Meta.Pagination
	return p.render(c, status, "brand_links", view{Title: "Links · " + prog.Name, Program: nav, Form: f, Data: map[string]any{
		"Program": prog, "Links": links.JSON200.Data, "Partners": partners.JSON200.Data,
		"MorePartners": partners.JSON200.Meta.Pagination.Total > len(partners.JSON200.Data),
		"Pager":        newPager(programPath(nav.ID, "links"), &form{}, pg.Page, pg.PageCount, pg.Total),
	}})
}

// brandCreateLink is the form of a new link for a partner, with a code.
func (p *Pages) brandCreateLink(c *fiber.Ctx) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	f := readForm(c, "link", "partner_id", "code")
	ctx, auth := p.as(c)
	resp, err := p.api.CreateBrandLinkWithBodyWithResponse(ctx, id, jsonType, f.json("partner_id"), auth)
	if err = apiCheck(resp, err); err != nil {
		if status, shown := f.refuse(err); shown {
			return p.showBrandLinks(c, status, f)
		}
		return err
	}
	return p.flash(c, "Link "+resp.JSON201.Data.Code+" created.", programPath(id, "links"))
}

// brandLinkStatus disables or enables a link; a disabled link's clicks
// are refused at once.
func (p *Pages) brandLinkStatus(c *fiber.Ctx) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	linkID, err := pathID(c, "linkId")
	if err != nil {
		return err
	}
	f := readForm(c, fmt.Sprintf("link-%d", linkID), "status")
	ctx, auth := p.as(c)
	resp, err := p.api.UpdateBrandLinkWithBodyWithResponse(ctx, id, linkID, jsonType, f.json(), auth)
	if err = apiCheck(resp, err); err != nil {
		if status, shown := f.refuse(err); shown {
			return p.showBrandLinks(c, status, f)
		}
		return err
	}
	l := resp.JSON200.Data
	if l.Status == apiclient.BrandLinkStatusDisabled {
		return p.flash(c, "Link "+l.Code+" disabled.", programPath(id, "links"))
	}
	return p.flash(c, "Link "+l.Code+" enabled.", programPath(id, "links"))
}
