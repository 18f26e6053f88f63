package web

import (
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
	"github.com/partnertrack/partnertrack/ledger"
)

// eventChoice is one checkbox of the webhook form.
type eventChoice struct {
	Name    string
	Checked bool
}

// webhookEventChoices are the event types a webhook may subscribe to, in
// the contract's order, ticked as the refused form had them (all of them
// for a new form).
func webhookEventChoices(f *form) []eventChoice {
	ticked := map[string]bool{}
	if f.Is("webhook") {
		for _, e := range strings.Split(f.Value("events"), ",") {
			ticked[e] = true
		}
	}
	out := make([]eventChoice, len(ledger.WebhookEventTypes))
	for i, e := range ledger.WebhookEventTypes {
		out[i] = eventChoice{Name: e, Checked: !f.Is("webhook") || ticked[e]}
	}
	return out
}

// brandCreateWebhook is POST …/settings/webhooks: a new endpoint; the
// answer shows its signing secret, the only time the API gives it.
func (p *Pages) brandCreateWebhook(c *fiber.Ctx) error {
	// Read before the change: a failure after it would lose the secret.
	prog, nav, err := p.brandProgram(c, "settings")
	if err != nil {
		return err
	}
	id := nav.ID
	f := readForm(c, "webhook", "url", "events")
	events := []apiclient.DashWebhookEvent{}
	var names []string
	for _, raw := range c.Request().PostArgs().PeekMulti("events") {
		events = append(events, apiclient.DashWebhookEvent(raw))
		names = append(names, string(raw))
	}
	f.Values["events"] = strings.Join(names, ",")
	ctx, auth := p.as(c)
	resp, err := p.api.CreateWebhookWithResponse(ctx, id, apiclient.DashWebhookCreate{Url: f.Value("url"), Events: events}, auth)
	if err = apiCheck(resp, err); err != nil {
		if status, shown := refuseField(f, err); shown {
			return p.showBrandSettings(c, status, f)
		}
		return err
	}
	w := resp.JSON201.Data
	return p.render(c, fiber.StatusOK, "brand_key", view{Title: "Webhook created · " + prog.Name, Program: nav, Data: map[string]any{
		"Heading": "Webhook " + strconv.FormatInt(w.Id, 10) + " created",
		"Intro":   "Events now go to " + w.Url + ", signed with this secret (Standard Webhooks: the webhook-signature header).",
		"Label":   "Signing secret of webhook " + strconv.FormatInt(w.Id, 10),
		"Value":   w.Secret,
		"Warning": "Copy the signing secret now and store it where your endpoint verifies signatures: it will not be shown again.",
		"Back":    programPath(id, "settings") + "#webhooks-h",
	}})
}

// brandDeleteWebhook is POST …/settings/webhooks/:webhookId/delete.
func (p *Pages) brandDeleteWebhook(c *fiber.Ctx) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	wid, err := pathID(c, "webhookId")
	if err != nil {
		return err
	}
	f := readForm(c, "delete-"+strconv.FormatInt(wid, 10))
	ctx, auth := p.as(c)
	resp, err := p.api.DeleteWebhookWithResponse(ctx, id, wid, auth)
	if err = apiCheck(resp, err); err != nil {
		if status, shown := f.refuse(err); shown {
			return p.showBrandSettings(c, status, f)
		}
		return err
	}
	return p.flash(c, "Webhook "+strconv.FormatInt(wid, 10)+" deleted.", programPath(id, "settings"))
}
