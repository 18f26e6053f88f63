package ingest

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// programChanges records the ProgramChanged calls of an edge.
type programChanges struct {
	mu  sync.Mutex
	ids []int64
}

func (c *programChanges) record(_ context.Context, programID int64) {
	c.mu.Lock()
	c.ids = append(c.ids, programID)
	c.mu.Unlock()
}

func (c *programChanges) take() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := c.ids
	c.ids = nil
	return ids
}

// setupSettings returns an edge whose ProgramChanged hook is recorded.
func setupSettings(t *testing.T) (*testBundle, *fiber.App, *programChanges) {
	t.Helper()
	b := setup(t)
	ch := &programChanges{}
	srv := newTestServer(b.db, b.clock, func(_ *Services, opts *Options) { opts.ProgramChanged = ch.record })
	return b, srv.App(), ch
}

func settingsPath(programID int64) string {
	return "/api/v1/programs/" + itoa(programID) + "/settings"
}

func TestGetSettings(t *testing.T) {
	b, app, _ := setupSettings(t)
	w := MustWorld(t, app)
	b.app = app

	for _, role := range []string{"owner", "admin", "member"} {
		t.Run("OK "+role, func(t *testing.T) {
			tok := w.ownerToken
			if role != "owner" {
				tok = dashboardMemberToken(t, b, w, role)
			}
			r := do(t, app, req{"GET", settingsPath(w.programID), nil, bearer(tok)})
			d := mustOK(t, r, 200)
			want := map[string]any{
				"id": float64(w.programID), "workspace_id": float64(w.workspaceID), "name": "Acme Pro",
				"domain": "acme.example", "commission_type": "percent", "commission_rate": float64(30),
				"duration_months": float64(0), "cookie_duration": float64(90), "lead_auth": "server_required",
				"hold_days": float64(30), "currency": "USD", "status": "active",
				"api_token_masked": "aff_****" + w.liveKey[len(w.liveKey)-4:], "stripe_webhook_secret_set": false,
			}
			for k, v := range want {
				if d[k] != v {
					t.Fatalf("%s = %#v, want %#v (%v)", k, d[k], v, d)
				}
			}
			for _, k := range []string{"created_at", "updated_at"} {
				if _, err := time.Parse(time.RFC3339, d[k].(string)); err != nil {
					t.Fatalf("%s = %v", k, d[k])
				}
			}
			if strings.Contains(string(r.Raw), w.liveKey) {
				t.Fatalf("settings expose the key: %s", r.Raw)
			}
			if r.Header.Get("X-RateLimit-Limit") != "30" {
				t.Fatalf("X-RateLimit-Limit = %q", r.Header.Get("X-RateLimit-Limit"))
			}
		})
	}
	t.Run("ErrNotAMember", func(t *testing.T) {
		other := MustWorld(t, app)
		r := do(t, app, req{"GET", settingsPath(w.programID), nil, bearer(other.ownerToken)})
		assertPlatformError(t, r, 403, "ForbiddenError", "you are not a member of this program's workspace", "")
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		r := do(t, app, req{"GET", settingsPath(99999999), nil, bearer(w.ownerToken)})
		assertPlatformError(t, r, 404, "NotFoundError", "program not found", "")
	})
	t.Run("ErrProgramKey", func(t *testing.T) {
		r := do(t, app, req{"GET", settingsPath(w.programID), nil, bearer(w.liveKey)})
		assertPlatformError(t, r, 401, "UnauthorizedError", "invalid or expired token", "")
	})
}

func TestPatchSettings(t *testing.T) {
	b, app, ch := setupSettings(t)
	w := MustWorld(t, app)
	b.app = app
	path := settingsPath(w.programID)
	patch := func(t *testing.T, tok string, body any) response {
		t.Helper()
		return do(t, app, req{"PATCH", path, body, bearer(tok)})
	}
	// current reads the settings as the owner sees them.
	current := func(t *testing.T) map[string]any {
		t.Helper()
		return mustOK(t, do(t, app, req{"GET", path, nil, bearer(w.ownerToken)}), 200)
	}

	t.Run("OK owner programChanges every field", func(t *testing.T) {
		d := mustOK(t, patch(t, w.ownerToken, map[string]any{
			"name": "Acme Plus", "domain": "https://Shop.Acme.example/", "commission_type": "recurring_fixed",
			"commission_rate": 12.5, "duration_months": 12, "cookie_duration": 45, "lead_auth": "browser_allowed",
			"hold_days": 14, "currency": "EUR", "id": 5, "api_token_masked": "ignored", "status": "paused",
		}), 200)
		want := map[string]any{
			"id": float64(w.programID), "name": "Acme Plus", "domain": "shop.acme.example",
			"commission_type": "recurring_fixed", "commission_rate": 12.5, "duration_months": float64(12),
			"cookie_duration": float64(45), "lead_auth": "browser_allowed", "hold_days": float64(14),
			"currency": "EUR", "status": "active", "api_token_masked": "aff_****" + w.liveKey[len(w.liveKey)-4:],
		}
		got := current(t)
		for k, v := range want {
			if d[k] != v || got[k] != v {
				t.Fatalf("%s = %#v (read back %#v), want %#v", k, d[k], got[k], v)
			}
		}
		if ids := ch.take(); len(ids) != 1 || ids[0] != w.programID {
			t.Fatalf("ProgramChanged calls = %v", ids)
		}
	})
	t.Run("OK admin", func(t *testing.T) {
		tok := dashboardMemberToken(t, b, w, "admin")
		d := mustOK(t, patch(t, tok, map[string]any{"cookie_duration": 30}), 200)
		if d["cookie_duration"] != float64(30) || d["hold_days"] != float64(14) {
			t.Fatalf("settings = %v", d)
		}
		if ids := ch.take(); len(ids) != 1 {
			t.Fatalf("ProgramChanged calls = %v", ids)
		}
	})
	t.Run("OK null is absent", func(t *testing.T) {
		d := mustOK(t, patch(t, w.ownerToken, map[string]any{"cookie_duration": nil, "lead_auth": nil}), 200)
		if d["cookie_duration"] != float64(30) || d["lead_auth"] != "browser_allowed" {
			t.Fatalf("settings = %v", d)
		}
		ch.take()
	})
	t.Run("OK fixed rate above 100", func(t *testing.T) {
		d := mustOK(t, patch(t, w.ownerToken, map[string]any{"commission_type": "fixed", "commission_rate": 150}), 200)
		if d["commission_rate"] != float64(150) {
			t.Fatalf("settings = %v", d)
		}
		ch.take()
	})
	t.Run("OK webhook secret is write-only", func(t *testing.T) {
		secret := "whsec_" + strings.Repeat("s3cr3t", 5)
		r := patch(t, w.ownerToken, map[string]any{"stripe_webhook_secret": secret})
		d := mustOK(t, r, 200)
		if d["stripe_webhook_secret_set"] != true || strings.Contains(string(r.Raw), secret) {
			t.Fatalf("after setting: %s", r.Raw)
		}
		// Stored sealed (ledger/secretbox), read back in clear by the
		// processor webhook.
		var stored string
		if err := b.db.QueryRow(`SELECT stripe_webhook_secret FROM programs WHERE id = $1`, w.programID).Scan(&stored); err != nil ||
			!strings.HasPrefix(stored, "enc:") || strings.Contains(stored, "s3cr3t") {
			t.Fatalf("stored = %q, %v", stored, err)
		}
		if got, err := b.srv.svc.Processor.WebhookSecret(context.Background(), w.programID); err != nil || got != secret {
			t.Fatalf("read back %q, %v", got, err)
		}
		got := do(t, app, req{"GET", path, nil, bearer(w.ownerToken)})
		if strings.Contains(string(got.Raw), secret) || got.Body["data"].(map[string]any)["stripe_webhook_secret_set"] != true {
			t.Fatalf("read: %s", got.Raw)
		}
		d = mustOK(t, patch(t, w.ownerToken, map[string]any{"stripe_webhook_secret": ""}), 200)
		var cleared *string
		b.db.QueryRow(`SELECT stripe_webhook_secret FROM programs WHERE id = $1`, w.programID).Scan(&cleared)
		if d["stripe_webhook_secret_set"] != false || cleared != nil {
			t.Fatalf("after clearing: %v, stored %v", d, cleared)
		}
		ch.take()
	})
	t.Run("ErrMember", func(t *testing.T) {
		tok := dashboardMemberToken(t, b, w, "member")
		r := patch(t, tok, map[string]any{"cookie_duration": 10})
		assertPlatformError(t, r, 403, "ForbiddenError", msgSettingsAdminOnly, "")
		if current(t)["cookie_duration"] != float64(30) || len(ch.take()) != 0 {
			t.Fatal("a member's update was applied")
		}
	})
	t.Run("ErrNotAMember", func(t *testing.T) {
		other := MustWorld(t, app)
		r := patch(t, other.ownerToken, map[string]any{"cookie_duration": 10})
		assertPlatformError(t, r, 403, "ForbiddenError", "you are not a member of this program's workspace", "")
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		r := do(t, app, req{"PATCH", settingsPath(99999999), map[string]any{}, bearer(w.ownerToken)})
		assertPlatformError(t, r, 404, "NotFoundError", "program not found", "")
	})
	t.Run("ErrNotJSON", func(t *testing.T) {
		r := patch(t, w.ownerToken, "cookie_duration=5")
		assertPlatformError(t, r, 400, "BadRequestError", msgNotJSON, "")
	})

	// Validation: every message of CLI init, plus the settings-only
	// fields. The program is percent-free here (fixed, 150) unless a case
	// says otherwise; nothing is written when a field is refused.
	mustOK(t, patch(t, w.ownerToken, map[string]any{"commission_type": "percent", "commission_rate": 30}), 200)
	ch.take()
	before := current(t)
	for _, tc := range []struct {
		desc string
		body map[string]any
		want string
	}{
		{"commission_type unknown", map[string]any{"commission_type": "bounty"}, ledger.MsgInvalidCommissionType("bounty")},
		{"commission_type not a string", map[string]any{"commission_type": true}, ledger.MsgInvalidCommissionType("true")},
		{"commission_rate zero", map[string]any{"commission_rate": 0}, ledger.MsgCommissionRate},
		{"commission_rate negative", map[string]any{"commission_rate": -5}, ledger.MsgCommissionRate},
		{"commission_rate a string", map[string]any{"commission_rate": "30"}, ledger.MsgCommissionRate},
		{"commission_rate over 100 for percent", map[string]any{"commission_rate": 100.01}, ledger.MsgCommissionRateCap},
		{"recurring_percent over 100", map[string]any{"commission_type": "recurring_percent", "commission_rate": 101}, ledger.MsgCommissionRateCap},
		{"duration_months negative", map[string]any{"duration_months": -1}, ledger.MsgDurationMonths},
		{"duration_months fraction", map[string]any{"duration_months": 1.5}, ledger.MsgDurationMonths},
		{"cookie_duration zero", map[string]any{"cookie_duration": 0}, ledger.MsgCookieDuration},
		{"cookie_duration 366", map[string]any{"cookie_duration": 366}, ledger.MsgCookieDuration},
		{"cookie_duration a string", map[string]any{"cookie_duration": "30"}, ledger.MsgCookieDuration},
		{"lead_auth unknown", map[string]any{"lead_auth": "maybe"}, ledger.MsgLeadAuth},
		{"hold_days over 365", map[string]any{"hold_days": 400}, ledger.MsgHoldDays},
		{"currency unknown", map[string]any{"currency": "GBP"}, ledger.MsgProgramCurrency},
		{"name empty", map[string]any{"name": " "}, ledger.MsgProgramName},
		{"domain not a host", map[string]any{"domain": "not a domain"}, ledger.MsgProgramDomain},
		{"stripe_webhook_secret without prefix", map[string]any{"stripe_webhook_secret": "abc"}, ledger.MsgStripeWebhookSecret},
		{"stripe_webhook_secret not a string", map[string]any{"stripe_webhook_secret": 12}, ledger.MsgStripeWebhookSecret},
		{"spec order: type before cookie", map[string]any{"cookie_duration": 0, "commission_type": "bounty"}, ledger.MsgInvalidCommissionType("bounty")},
		{"program fields before the secret", map[string]any{"stripe_webhook_secret": "x", "hold_days": -1}, ledger.MsgHoldDays},
		{"a refused field writes nothing", map[string]any{"cookie_duration": 5, "lead_auth": "maybe"}, ledger.MsgLeadAuth},
	} {
		t.Run("ErrValidation "+tc.desc, func(t *testing.T) {
			r := patch(t, w.ownerToken, tc.body)
			assertPlatformError(t, r, 400, "BadRequestError", tc.want, "")
			after := current(t)
			for k, v := range before {
				if after[k] != v {
					t.Fatalf("%s changed from %v to %v", k, v, after[k])
				}
			}
			if ids := ch.take(); len(ids) != 0 {
				t.Fatalf("ProgramChanged called on a refused update: %v", ids)
			}
		})
	}
}

func TestSettingsRateLimit(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	start := b.clock.Now().Truncate(time.Minute).Add(time.Second)
	b.clock.Set(start)
	path := settingsPath(w.programID)

	for i := 1; i <= 30; i++ {
		r := do(t, b.app, req{"GET", path, nil, bearer(w.ownerToken)})
		if r.Status != 200 || r.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(30-i) {
			t.Fatalf("GET %d: %d %v", i, r.Status, r.Header)
		}
	}
	r := do(t, b.app, req{"GET", path, nil, bearer(w.ownerToken)})
	if r.Status != 429 || r.Body["error"].(map[string]any)["code"] != "rate_limited" {
		t.Fatalf("31st GET: %d %s", r.Status, r.Raw)
	}
	// PATCH counts in its own bucket, and another token in its own.
	if r := do(t, b.app, req{"PATCH", path, map[string]any{}, bearer(w.ownerToken)}); r.Status != 200 || r.Header.Get("X-RateLimit-Remaining") != "29" {
		t.Fatalf("PATCH after 31 GETs: %d %v", r.Status, r.Header)
	}
	tok := dashboardMemberToken(t, b, w, "member")
	if r := do(t, b.app, req{"GET", path, nil, bearer(tok)}); r.Status != 200 || r.Header.Get("X-RateLimit-Remaining") != "29" {
		t.Fatalf("another token: %d %v", r.Status, r.Header)
	}
	// The next window starts afresh.
	b.clock.Set(start.Add(time.Minute))
	if r := do(t, b.app, req{"GET", path, nil, bearer(w.ownerToken)}); r.Status != 200 {
		t.Fatalf("next minute: %d", r.Status)
	}
}
