package web

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// brandWebhookLog is GET …/settings/webhooks/:webhookId: the endpoint's
// delivery log (its last messages, each with its outcome and attempts)
// and the form that sends it a test event.
func (p *Pages) brandWebhookLog(c *fiber.Ctx) error {
	return p.showBrandWebhookLog(c, fiber.StatusOK, nil)
}

func (p *Pages) showBrandWebhookLog(c *fiber.Ctx, status int, f *form) error {
	prog, nav, err := p.brandProgram(c, "settings")
	if err != nil {
		return err
	}
	wid, err := pathID(c, "webhookId")
	if err != nil {
		return err
	}
	ctx, auth := p.as(c)
	filter := filterForm(c, "limit")
	log, err := p.api.ListWebhookDeliveriesWithResponse(ctx, prog.Id, wid, &apiclient.ListWebhookDeliveriesParams{}, auth, rawQuery(filter.Values))
	if err = apiCheck(log, err); err != nil {
		return err
	}
	hooks, err := p.api.ListWebhooksWithResponse(ctx, prog.Id, auth)
	if err = apiCheck(hooks, err); err != nil {
		return err
	}
	url := ""
	for _, h := range hooks.JSON200.Data {
		if h.Id == wid {
			url = h.Url
		}
	}
	return p.render(c, status, "brand_webhook", view{Title: "Webhook " + strconv.FormatInt(wid, 10) + " · " + prog.Name, Program: nav, Form: f, Data: map[string]any{
		"ID": wid, "URL": url, "Deliveries": log.JSON200.Data, "Base": programPath(prog.Id, "settings"),
	}})
}

// brandTestWebhook is POST …/settings/webhooks/:webhookId/test: a
// webhook.test event for this endpoint, delivered (and logged) like any.
func (p *Pages) brandTestWebhook(c *fiber.Ctx) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	wid, err := pathID(c, "webhookId")
	if err != nil {
		return err
	}
	f := readForm(c, "test")
	ctx, auth := p.as(c)
	resp, err := p.api.SendWebhookTestEventWithResponse(ctx, id, wid, auth)
	if err = apiCheck(resp, err); err != nil {
		if status, shown := f.refuse(err); shown {
			return p.showBrandWebhookLog(c, status, f)
		}
		return err
	}
	return p.flash(c, "Test event "+resp.JSON202.Data.MessageId+" queued: it shows here once attempted.",
		programPath(id, "settings/webhooks/"+strconv.FormatInt(wid, 10)))
}
