package web

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// payoutFilters are the payout listing's query parameters the page passes
// on to the API.
var payoutFilters = []string{"status", "partner_id", "page", "pageSize"}

var payoutStatuses = []string{"pending", "processing", "paid", "failed"}

// brandPayouts is GET /app/programs/:id/payouts: the partners due a
// payout with the form that creates them, and the program's payouts with
// the forms that move each one on.
func (p *Pages) brandPayouts(c *fiber.Ctx) error {
	return p.showBrandPayouts(c, fiber.StatusOK, nil)
}

func (p *Pages) showBrandPayouts(c *fiber.Ctx, status int, f *form) error {
	prog, nav, err := p.brandProgram(c, "payouts")
	if err != nil {
		return err
	}
	ctx, auth := p.as(c)
	due, err := p.api.ListDuePayoutsWithResponse(ctx, prog.Id, auth)
	if err = apiCheck(due, err); err != nil {
		return err
	}
	filter := filterForm(c, payoutFilters...)
	base := programPath(prog.Id, "payouts")
	data := map[string]any{
		"Due": due.JSON200.Data, "Filter": filter, "Statuses": payoutStatuses, "Base": base,
		"CSV": programPath(prog.Id, "payouts/csv") + filter.query("page", ""), "Back": filter.query(),
	}
	list, err := p.api.ListProgramPayoutsWithResponse(ctx, prog.Id, &apiclient.ListProgramPayoutsParams{}, auth, rawQuery(filter.Values))
	if err = apiCheck(list, err); err != nil {
		st, shown := refuseField(filter, err)
		if !shown {
			return err
		}
		if status == fiber.StatusOK {
			status = st
		}
	} else {
		data["Payouts"] = list.JSON200.Data
		pg := list.JSON200.Meta.Pagination
		data["Pager"] = newPager(base, filter, pg.Page, pg.PageCount, pg.Total)
	}
	return p.render(c, status, "brand_payouts", view{Title: "Payouts · " + prog.Name, Program: nav, Form: f, Data: data})
}

// brandPayoutsCSV is GET …/payouts/csv: the API's payout export (owners
// and admins; a member sees the API's refusal).
func (p *Pages) brandPayoutsCSV(c *fiber.Ctx) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	filter := filterForm(c, "status", "partner_id")
	ctx, auth := p.as(c)
	format := apiclient.ListProgramPayoutsParamsFormat("csv")
	resp, err := p.api.ListProgramPayoutsWithResponse(ctx, id, &apiclient.ListProgramPayoutsParams{Format: &format}, auth, rawQuery(filter.Values))
	if err = apiCheck(resp, err); err != nil {
		return err
	}
	return sendCSV(c, resp.HTTPResponse, resp.Body, "payouts-"+strconv.FormatInt(id, 10)+".csv")
}

// brandCreatePayouts creates a payout for every due partner (scope=all)
// or for the partners ticked (partner_ids).
func (p *Pages) brandCreatePayouts(c *fiber.Ctx) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	f := readForm(c, "create", "partner_ids")
	var req apiclient.PayoutRunRequest
	if c.FormValue("scope") != "all" {
		ids := []int64{}
		for _, raw := range c.Request().PostArgs().PeekMulti("partner_ids") {
			n, err := strconv.ParseInt(string(raw), 10, 64)
			if err != nil {
				f.Errors["partner_ids"] = "Tick the partners to pay."
				return p.showBrandPayouts(c, fiber.StatusBadRequest, f)
			}
			ids = append(ids, n)
		}
		if len(ids) == 0 {
			f.Errors["partner_ids"] = "Tick the partners to pay, or pay every due partner."
			return p.showBrandPayouts(c, fiber.StatusBadRequest, f)
		}
		req.PartnerIds = &ids
	}
	ctx, auth := p.as(c)
	resp, err := p.api.CreateProgramPayoutsWithResponse(ctx, id, req, auth)
	if err = apiCheck(resp, err); err != nil {
		if status, shown := refuseField(f, err); shown {
			return p.showBrandPayouts(c, status, f)
		}
		return err
	}
	run := resp.JSON200.Data
	msg := plural(len(run.Created), "payout") + " created"
	if n := len(run.Skipped); n > 0 {
		msg += "; " + plural(n, "partner") + " skipped (" + string(run.Skipped[0].Reason) + ")"
	}
	return p.flash(c, msg+".", programPath(id, "payouts"))
}

// brandMarkPayout is POST …/payouts/:payoutId/mark-<next>: processing,
// paid (with the payment's external_reference) or failed (with a reason).
func (p *Pages) brandMarkPayout(next string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		id, err := pathID(c, "id")
		if err != nil {
			return err
		}
		pid, err := pathID(c, "payoutId")
		if err != nil {
			return err
		}
		name := next + "-" + strconv.FormatInt(pid, 10)
		ctx, auth := p.as(c)
		var f *form
		switch next {
		case "paid":
			f = readForm(c, name, "external_reference")
			r, e := p.api.MarkPayoutPaidWithResponse(ctx, id, pid, apiclient.PayoutMarkPaidRequest{ExternalReference: c.FormValue("external_reference")}, auth)
			err = apiCheck(r, e)
		case "failed":
			f = readForm(c, name, "reason")
			r, e := p.api.MarkPayoutFailedWithResponse(ctx, id, pid, apiclient.PayoutMarkFailedRequest{Reason: c.FormValue("reason")}, auth)
			err = apiCheck(r, e)
		default:
			f = readForm(c, name)
			r, e := p.api.MarkPayoutProcessingWithResponse(ctx, id, pid, auth)
			err = apiCheck(r, e)
		}
		if err != nil {
			if status, shown := refuseField(f, err); shown {
				return p.showBrandPayouts(c, status, f)
			}
			return err
		}
		return p.flash(c, "Payout "+strconv.FormatInt(pid, 10)+" marked "+next+".", programPath(id, "payouts")+filterForm(c, payoutFilters...).query())
	}
}

// plural writes "1 payout", "2 payouts".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
