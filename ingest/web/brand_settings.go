package web

import (
	"bytes"
	"encoding/json"
	"html/template"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// settingsFields are the settings form's fields: the program fields the
// settings API changes (DashSettingsUpdate), in the form's order.
var settingsFields = []string{
	"name", "domain", "slug", "currency", "commission_type", "commission_rate", "duration_months",
	"hold_days", "cookie_duration", "minimum_payout", "lead_auth", "partner_approval", "partner_links",
	"timezone", "stripe_webhook_secret", "remove_stripe_webhook_secret",
}

// settingsNumbers are the fields sent as JSON numbers when they read as
// one; anything else is sent as typed, for the API to refuse in its words.
var settingsNumbers = map[string]bool{
	"commission_rate": true, "minimum_payout": true, "duration_months": true, "hold_days": true, "cookie_duration": true,
}

// The choices of the settings form's selects, as the API names them.
var (
	currencies      = []string{"USD", "EUR", "VND"}
	commissionTypes = []string{"percent", "fixed", "recurring_percent", "recurring_fixed"}
	leadAuths       = []string{"server_required", "browser_allowed"}
	approvals       = []string{"auto", "manual"}
)

// brandSettings is GET /app/programs/:id/settings: the program's fields,
// its API keys, its webhooks with their recent deliveries, and the
// tracker snippet. Only this page reads the settings route (30 a
// minute per token).
func (p *Pages) brandSettings(c *fiber.Ctx) error {
	return p.showBrandSettings(c, fiber.StatusOK, nil)
}

func (p *Pages) showBrandSettings(c *fiber.Ctx, status int, f *form) error {
	_, nav, err := p.brandProgram(c, "settings")
	if err != nil {
		return err
	}
	ctx, auth := p.as(c)
	settings, err := p.api.GetProgramSettingsWithResponse(ctx, nav.ID, auth)
	if err = apiCheck(settings, err); err != nil {
		return err
	}
	prog := &settings.JSON200.Data
	data := map[string]any{
		"Settings": prog, "Fields": settingsValues(prog, f), "Base": programPath(prog.Id, "settings"),
		"Currencies": currencies, "CommissionTypes": commissionTypes, "LeadAuths": leadAuths, "Approvals": approvals,
		"Snippet": trackerSnippet(p.cfg.PublicBaseURL, prog.Id),
	}
	hooks, err := p.api.ListWebhooksWithResponse(ctx, prog.Id, auth)
	if err = apiCheck(hooks, err); err != nil {
		// Members may read the settings but not the webhooks: say so in
		// the webhooks section instead of failing the page.
		re, ok := asResponseError(err)
		if !ok || re.Status != fiber.StatusForbidden {
			return err
		}
		data["WebhooksRefused"] = re.Message
	} else {
		data["Webhooks"] = hooks.JSON200.Data
	}
	data["Events"] = webhookEventChoices(f)
	return p.render(c, status, "brand_settings", view{Title: "Settings · " + prog.Name, Program: nav, Form: f, Data: data})
}

// settingsValues are the values the settings form shows: what was sent
// when the API refused it, else what the program holds.
func settingsValues(s *apiclient.DashProgramSettings, f *form) map[string]string {
	if f.Is("settings") {
		return f.Values
	}
	v := map[string]string{
		"name": s.Name, "domain": s.Domain, "slug": deref(s.Slug), "currency": string(s.Currency),
		"commission_type": string(s.CommissionType), "commission_rate": s.CommissionRate.String(),
		"duration_months": strconv.Itoa(s.DurationMonths), "hold_days": strconv.Itoa(s.HoldDays),
		"cookie_duration": strconv.Itoa(s.CookieDuration), "lead_auth": string(s.LeadAuth),
		"timezone": derefOr(s.Timezone, "UTC"),
	}
	if s.MinimumPayout != nil {
		v["minimum_payout"] = s.MinimumPayout.String()
	}
	if s.PartnerApproval != nil {
		v["partner_approval"] = string(*s.PartnerApproval)
	}
	if s.PartnerLinks != nil && *s.PartnerLinks {
		v["partner_links"] = "on"
	}
	return v
}

// brandUpdateSettings is POST …/settings: every field of the form in one
// PATCH, which the API applies together or refuses as a whole.
func (p *Pages) brandUpdateSettings(c *fiber.Ctx) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	f := readForm(c, "settings", settingsFields...)
	body := map[string]any{"partner_links": f.Value("partner_links") != ""}
	for _, name := range settingsFields {
		v := f.Value(name)
		switch {
		case name == "partner_links" || name == "remove_stripe_webhook_secret":
		case name == "stripe_webhook_secret":
			// Write-only: sent when typed, or "" when asked to remove it.
			if v != "" {
				body[name] = v
			} else if f.Value("remove_stripe_webhook_secret") != "" {
				body[name] = ""
			}
		case settingsNumbers[name] && numberLiteral.MatchString(v):
			body[name] = json.Number(v)
		default:
			body[name] = v
		}
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	ctx, auth := p.as(c)
	resp, err := p.api.UpdateProgramSettingsWithBodyWithResponse(ctx, id, fiber.MIMEApplicationJSON, bytes.NewReader(raw), auth)
	if err = apiCheck(resp, err); err != nil {
		if status, shown := refuseField(f, err); shown {
			f.Values["stripe_webhook_secret"] = "" // never echo a secret into the page
			return p.showBrandSettings(c, status, f)
		}
		return err
	}
	return p.flash(c, "Settings saved.", programPath(id, "settings"))
}

// brandRegenerateKey is POST …/settings/key (owners only): the program's
// live or test key is replaced, and the new one is shown on this answer
// only, never stored in the page's session or shown again.
func (p *Pages) brandRegenerateKey(c *fiber.Ctx) error {
	// The program is read before the key changes: a failure after it
	// would lose the only showing of the new key.
	prog, nav, err := p.brandProgram(c, "settings")
	if err != nil {
		return err
	}
	id := nav.ID
	f := readForm(c, "key", "mode")
	mode := apiclient.DashKeyRequestMode(f.Value("mode"))
	ctx, auth := p.as(c)
	resp, err := p.api.GenerateProgramKeyWithResponse(ctx, id, apiclient.DashKeyRequest{Mode: &mode}, auth)
	if err = apiCheck(resp, err); err != nil {
		if status, shown := f.refuse(err); shown {
			return p.showBrandSettings(c, status, f)
		}
		return err
	}
	k := resp.JSON200.Data
	return p.render(c, fiber.StatusOK, "brand_key", view{Title: "New " + string(k.Mode) + " key · " + prog.Name, Program: nav, Data: map[string]any{
		"Heading": "Your new " + string(k.Mode) + " API key",
		"Label":   string(k.Mode) + " API key of " + prog.Name,
		"Value":   k.ApiKey,
		"Warning": "Copy this key now and store it where your backend reads it: it will not be shown again. The old " + string(k.Mode) + " key stopped working the moment this one was made.",
		"Back":    programPath(id, "settings"),
	}})
}

// trackerSnippet is the script tag a brand puts on its landing pages
// (the contract's browser tracker).
func trackerSnippet(base string, programID int64) string {
	return `<script src="` + template.HTMLEscapeString(base) + `/tracker.js" data-program-id="` +
		strconv.FormatInt(programID, 10) + `" defer></script>`
}
