package web

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// commissionFilters are the commission listing's query parameters the
// page passes on to the API.
var commissionFilters = []string{"status", "partner_id", "dateFrom", "dateTo", "page", "pageSize"}

// commissionStatuses are the choices of the status filters (brand and
// partner), in the order a commission goes through them.
var commissionStatuses = []string{"pending", "approved", "paid", "reversed", "refunded", "rejected"}

// brandCommissions is GET /app/programs/:id/commissions: the program's
// commissions to review, filtered and paged as the API does, each with
// its approve and reject forms.
func (p *Pages) brandCommissions(c *fiber.Ctx) error {
	return p.showBrandCommissions(c, fiber.StatusOK, nil)
}

func (p *Pages) showBrandCommissions(c *fiber.Ctx, status int, f *form) error {
	prog, nav, err := p.brandProgram(c, "commissions")
	if err != nil {
		return err
	}
	filter := filterForm(c, commissionFilters...)
	base := programPath(prog.Id, "commissions")
	data := map[string]any{
		"Filter": filter, "Statuses": commissionStatuses, "Base": base,
		"CSV":  programPath(prog.Id, "commissions/csv") + filter.query("page", ""),
		"Back": filter.query(),
	}
	ctx, auth := p.as(c)
	resp, err := p.api.ListProgramCommissionsWithResponse(ctx, prog.Id, &apiclient.ListProgramCommissionsParams{}, auth, rawQuery(filter.Values))
	if err = apiCheck(resp, err); err != nil {
		// A refused filter is shown next to its field, over an empty list.
		st, shown := refuseField(filter, err)
		if !shown {
			return err
		}
		if status == fiber.StatusOK {
			status = st
		}
	} else {
		list := resp.JSON200
		data["Commissions"] = list.Data
		pg := list.Meta.Pagination
		data["Pager"] = newPager(base, filter, pg.Page, pg.PageCount, pg.Total)
	}
	return p.render(c, status, "brand_commissions", view{Title: "Commissions · " + prog.Name, Program: nav, Form: f, Data: data})
}

// brandCommissionsCSV is GET …/commissions/csv: the API's CSV export of
// the commissions the filters match.
func (p *Pages) brandCommissionsCSV(c *fiber.Ctx) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	filter := filterForm(c, "status", "partner_id", "dateFrom", "dateTo")
	ctx, auth := p.as(c)
	format := apiclient.ListProgramCommissionsParamsFormat("csv")
	resp, err := p.api.ListProgramCommissionsWithResponse(ctx, id, &apiclient.ListProgramCommissionsParams{Format: &format}, auth, rawQuery(filter.Values))
	if err = apiCheck(resp, err); err != nil {
		return err
	}
	return sendCSV(c, resp.HTTPResponse, resp.Body, "commissions-"+strconv.FormatInt(id, 10)+".csv")
}

// brandApproveCommission approves a pending commission before its hold
// ends; a refusal (no longer pending) is shown in the commission's row.
func (p *Pages) brandApproveCommission(c *fiber.Ctx) error {
	id, cid, err := commissionIDs(c)
	if err != nil {
		return err
	}
	f := readForm(c, "approve-"+strconv.FormatInt(cid, 10))
	ctx, auth := p.as(c)
	resp, err := p.api.ApproveProgramCommissionWithResponse(ctx, id, cid, auth)
	if err = apiCheck(resp, err); err != nil {
		if status, shown := refuseField(f, err); shown {
			return p.showBrandCommissions(c, status, f)
		}
		return err
	}
	return p.flash(c, "Commission "+strconv.FormatInt(cid, 10)+" approved.", commissionsBack(c, id))
}

// brandRejectCommission rejects a pending commission, or reverses an
// approved one, with the reason the partner will read.
func (p *Pages) brandRejectCommission(c *fiber.Ctx) error {
	id, cid, err := commissionIDs(c)
	if err != nil {
		return err
	}
	f := readForm(c, "reject-"+strconv.FormatInt(cid, 10), "reason")
	ctx, auth := p.as(c)
	resp, err := p.api.RejectProgramCommissionWithResponse(ctx, id, cid, apiclient.ReviewCommissionReject{Reason: c.FormValue("reason")}, auth)
	if err = apiCheck(resp, err); err != nil {
		if status, shown := refuseField(f, err); shown {
			return p.showBrandCommissions(c, status, f)
		}
		return err
	}
	return p.flash(c, "Commission "+strconv.FormatInt(cid, 10)+" "+string(resp.JSON200.Data.Status)+".", commissionsBack(c, id))
}

func commissionIDs(c *fiber.Ctx) (int64, int64, error) {
	id, err := pathID(c, "id")
	if err != nil {
		return 0, 0, err
	}
	cid, err := pathID(c, "cid")
	return id, cid, err
}

// commissionsBack is the listing a review form came from, with its filters.
func commissionsBack(c *fiber.Ctx, id int64) string {
	return programPath(id, "commissions") + filterForm(c, commissionFilters...).query()
}
