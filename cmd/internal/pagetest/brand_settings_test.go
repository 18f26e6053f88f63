package pagetest

import (
	"fmt"
	"html"
	"net/url"
	"strings"
	"testing"
)

// settingsForm is the settings form as the page fills it, with changes.
func settingsForm(t *testing.T, p page, change map[string]string) url.Values {
	t.Helper()
	v := url.Values{"csrf": {p.csrf(t)}}
	for _, name := range []string{"name", "domain", "slug", "commission_rate", "duration_months", "hold_days", "cookie_duration", "minimum_payout", "timezone"} {
		v.Set(name, html.UnescapeString(regexpFind(t, p.Body, `id="`+name+`" name="`+name+`" value="([^"]*)"`)))
	}
	for _, name := range []string{"currency", "commission_type", "lead_auth", "partner_approval"} {
		v.Set(name, regexpFind(t, p.Body, `(?s)<select id="`+name+`".*?<option value="([^"]+)" selected>`))
	}
	for k, x := range change {
		v.Set(k, x)
	}
	return v
}

// TestBrandSettingsPage: the form shows and changes what the settings API
// holds; a refused value shows the API's message next to its field and
// stores nothing; a regenerated key is shown once and works; webhooks are
// made (their secret shown once) and deleted; the tracker snippet is the
// contract's; another brand can neither see nor post.
func TestBrandSettingsPage(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	w := s.brand(t)
	b := s.browser(t).withCookie("pt_session", w.Owner)
	path := fmt.Sprintf("/app/programs/%d/settings", w.ProgramID)

	page := b.get(path)
	if page.Status != 200 {
		t.Fatalf("settings: %d %s", page.Status, page.Body)
	}
	page.mustContain(t, "<h1>Settings</h1>", `aria-current="page">Settings`,
		`id="commission_rate" name="commission_rate" value="20"`, `<option value="percent" selected>`,
		html.EscapeString(fmt.Sprintf(`<script src="%s/tracker.js" data-program-id="%d" defer></script>`, s.URL, w.ProgramID)),
		`data-copy="#snippet"`, "Regenerate live key", "Regenerate test key", "No webhook yet.")

	t.Run("ErrRateOver100", func(t *testing.T) {
		p := b.post(path, settingsForm(t, page, map[string]string{"commission_rate": "101", "name": "Renamed"}))
		if p.Status != 400 {
			t.Fatalf("rate 101: %d", p.Status)
		}
		p.mustContain(t, `<p class="field-error" id="commission_rate-err">commission_rate is a percentage for this type and cannot exceed 100</p>`,
			`id="commission_rate" name="commission_rate" value="101" aria-invalid="true" aria-describedby="commission_rate-err"`,
			`id="name" name="name" value="Renamed"`)
		got := s.api(t, 200, "GET", fmt.Sprintf("/api/v1/programs/%d/settings", w.ProgramID), w.Owner, nil)
		if got["commission_rate"] != float64(20) || got["name"] == "Renamed" {
			t.Fatalf("a refused form stored something: %v", got)
		}
	})
	t.Run("ErrDomainGoesToDomain", func(t *testing.T) {
		p := b.post(path, settingsForm(t, page, map[string]string{"domain": "not a host"}))
		p.mustContain(t, `<p class="field-error" id="domain-err">domain must be a host name such as example.com</p>`)
		if strings.Contains(p.Body, `id="name-err"`) {
			t.Fatal("the domain's refusal went to the name field")
		}
	})
	t.Run("OK save", func(t *testing.T) {
		p := b.post(path, settingsForm(t, page, map[string]string{"name": "Brand Partners Plus", "hold_days": "14", "partner_links": "on"}))
		if p.Status != 303 || p.Location != path {
			t.Fatalf("save: %d %q %s", p.Status, p.Location, p.Body)
		}
		got := s.api(t, 200, "GET", fmt.Sprintf("/api/v1/programs/%d/settings", w.ProgramID), w.Owner, nil)
		if got["name"] != "Brand Partners Plus" || got["hold_days"] != float64(14) || got["partner_links"] != true || got["commission_rate"] != float64(20) {
			t.Fatalf("saved: %v", got)
		}
		b.get(path).mustContain(t, "Settings saved.", `id="hold_days" name="hold_days" value="14"`, `name="partner_links" value="on" checked`)
	})
	t.Run("OK regenerate the live key", func(t *testing.T) {
		p := b.post(path+"/key", url.Values{"csrf": {page.csrf(t)}, "mode": {"live"}})
		if p.Status != 200 || p.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("regenerate: %d %v", p.Status, p.Header)
		}
		key := regexpFind(t, p.Body, `id="secret-once" value="(aff_[^"]+)" readonly`)
		p.mustContain(t, "it will not be shown again", `data-copy="#secret-once"`)
		s.api(t, 200, "GET", "/api/v1/programs/me/readiness", key, nil)
		if again := b.get(path); strings.Contains(again.Body, key) || !strings.Contains(again.Body, key[len(key)-4:]) {
			t.Fatalf("the settings page after regenerating: key shown %v, masked tail missing", strings.Contains(again.Body, key))
		}
	})
	t.Run("ErrRegenerateAsAdmin", func(t *testing.T) {
		ab := s.browser(t).withCookie("pt_session", s.member(t, w, "admin"))
		ap := ab.get(path)
		p := ab.post(path+"/key", url.Values{"csrf": {ap.csrf(t)}, "mode": {"test"}})
		if p.Status != 403 || strings.Contains(p.Body, "secret-once") {
			t.Fatalf("admin regenerate: %d", p.Status)
		}
		p.mustContain(t, `<p class="form-error" role="alert">Only a workspace owner can generate or regenerate the program&#39;s API key</p>`)
	})
	t.Run("OK webhook created, listed and deleted", func(t *testing.T) {
		p := b.post(path+"/webhooks", url.Values{"csrf": {page.csrf(t)}, "url": {"https://93.184.215.14/hooks"}, "events": {"payout.paid", "commission.created"}})
		if p.Status != 200 {
			t.Fatalf("create webhook: %d %s", p.Status, p.Body)
		}
		secret := regexpFind(t, p.Body, `id="secret-once" value="(whsec_[^"]+)" readonly`)
		list := b.get(path)
		list.mustContain(t, "https://93.184.215.14/hooks", "commission.created, payout.paid", "Recent deliveries (0)")
		if strings.Contains(list.Body, secret) {
			t.Fatal("the webhook's secret is shown again")
		}
		action := regexpFind(t, list.Body, `action="(/app/programs/\d+/settings/webhooks/\d+/delete)"`)
		if d := b.post(action, url.Values{"csrf": {page.csrf(t)}}); d.Status != 303 {
			t.Fatalf("delete webhook: %d %s", d.Status, d.Body)
		}
		b.get(path).mustContain(t, "deleted.", "No webhook yet.")
	})
	t.Run("ErrWebhookURL", func(t *testing.T) {
		p := b.post(path+"/webhooks", url.Values{"csrf": {page.csrf(t)}, "url": {"ftp://x"}, "events": {"payout.paid"}})
		if p.Status != 400 {
			t.Fatalf("bad url: %d", p.Status)
		}
		p.mustContain(t, `<p class="field-error" id="webhook-url-err">url must be an absolute http or https URL`,
			`value="payout.paid" checked`, "No webhook yet.")
		if strings.Contains(p.Body, `value="lead.created" checked`) {
			t.Fatal("the refused form lost which events were ticked")
		}
	})
	t.Run("ErrOtherBrand", func(t *testing.T) {
		other := s.brand(t)
		ob := s.browser(t).withCookie("pt_session", other.Owner)
		ob.get(path).mustBeRefused(t, "Brand Partners Plus")
		oc := ob.get(fmt.Sprintf("/app/programs/%d/settings", other.ProgramID)).csrf(t)
		ob.post(path, url.Values{"csrf": {oc}, "name": {"Taken over"}}).mustBeRefused(t)
		ob.post(path+"/key", url.Values{"csrf": {oc}, "mode": {"live"}}).mustBeRefused(t, "aff_")
		ob.post(path+"/webhooks", url.Values{"csrf": {oc}, "url": {"https://93.184.215.14/x"}, "events": {"payout.paid"}}).mustBeRefused(t, "whsec_")
		got := s.api(t, 200, "GET", fmt.Sprintf("/api/v1/programs/%d/settings", w.ProgramID), w.Owner, nil)
		if got["name"] != "Brand Partners Plus" {
			t.Fatalf("another brand renamed the program: %v", got["name"])
		}
		if hooks := s.apiBody(t, 200, "GET", fmt.Sprintf("/api/v1/programs/%d/webhooks", w.ProgramID), w.Owner, nil)["data"].([]any); len(hooks) != 0 {
			t.Fatalf("another brand added a webhook: %v", hooks)
		}
	})
}

// TestBrandWebhookLogAndTestEvent: the send-test-event button queues a
// webhook.test for that endpoint; the delivery log page shows what the
// API's log holds once the message is attempted; another brand can
// neither read the log nor send.
func TestBrandWebhookLogAndTestEvent(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	w := s.brand(t)
	hook := s.api(t, 201, "POST", fmt.Sprintf("/api/v1/programs/%d/webhooks", w.ProgramID), w.Owner,
		map[string]any{"url": "https://93.184.215.14/hooks", "events": []string{"payout.paid"}})
	hookID := jsonInt(hook["id"])
	b := s.browser(t).withCookie("pt_session", w.Owner)
	settings := b.get(fmt.Sprintf("/app/programs/%d/settings", w.ProgramID))
	logPath := fmt.Sprintf("/app/programs/%d/settings/webhooks/%d", w.ProgramID, hookID)
	settings.mustContain(t, `href="`+logPath+`"`, fmt.Sprintf("Send test event to webhook %d", hookID))

	page := b.get(logPath)
	if page.Status != 200 {
		t.Fatalf("log: %d %s", page.Status, page.Body)
	}
	page.mustContain(t, fmt.Sprintf("<h1>Webhook %d</h1>", hookID), "https://93.184.215.14/hooks", "Nothing attempted yet")

	p := b.post(logPath+"/test", url.Values{"csrf": {page.csrf(t)}})
	if p.Status != 303 || p.Location != logPath {
		t.Fatalf("send test: %d %q %s", p.Status, p.Location, p.Body)
	}
	page = b.get(logPath)
	msgID := regexpFind(t, page.Body, `Test event (msg_[A-Za-z0-9_]+) queued`)
	var queued int
	if err := s.DB.QueryRow(`SELECT count(*) FROM outbox WHERE task_type = 'webhook:deliver' AND payload->>'event_type' = 'webhook.test'`).Scan(&queued); err != nil || queued != 1 {
		t.Fatalf("webhook.test events queued: %d (%v)", queued, err)
	}
	// The worker's attempt, as notify.Sender logs it.
	if _, err := s.DB.Exec(`INSERT INTO webhook_deliveries (endpoint_id, message_id, event_type, attempt, status_code, latency_ms) VALUES ($1, $2, 'webhook.test', 1, 204, 37)`,
		hookID, msgID); err != nil {
		t.Fatal(err)
	}
	b.get(logPath).mustContain(t, "webhook.test", msgID, `<span class="status ok">succeeded (204)</span>`, "37 ms")

	other := s.brand(t)
	ob := s.browser(t).withCookie("pt_session", other.Owner)
	ob.get(logPath).mustBeRefused(t, msgID, "93.184.215.14")
	oc := ob.get(fmt.Sprintf("/app/programs/%d/settings", other.ProgramID)).csrf(t)
	ob.post(logPath+"/test", url.Values{"csrf": {oc}}).mustBeRefused(t)
	if err := s.DB.QueryRow(`SELECT count(*) FROM outbox WHERE task_type = 'webhook:deliver' AND payload->>'event_type' = 'webhook.test'`).Scan(&queued); err != nil || queued != 1 {
		t.Fatalf("another brand queued a test event: %d (%v)", queued, err)
	}
}
