package ingest

import (
	"net/url"
	"strings"
	"testing"

	"github.com/partnertrack/partnertrack/ledger"
)

// A NUL or invalid UTF-8 in a query string or a path parameter is a 400
// in the route's own envelope, never a 500 (Postgres text refuses both:
// the operator's customer lookup answered 500 to customer_key=%00).
func TestHostileQueryAndPathParams(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	pid := itoa(w.programID)
	hostile := []string{"%00", "%ff", "%c3%28", "a%00b", "%ed%a0%80"}
	type envelope int
	const (
		platform envelope = iota // {"data": null, "error": {...}}
		stable                   // the platform envelope with error.code
		typed                    // {"error": {"code", "message", "status"}}
	)
	for _, tc := range []struct {
		desc, method, path string // path holds HOSTILE where the value goes
		header             map[string]string
		env                envelope
		msg                string
	}{
		{"operator customer_key", "GET", "/api/operator/v1/customers?program_id=" + pid + "&customer_key=HOSTILE", operator(), platform, msgBadQuery},
		{"operator click_id", "GET", "/api/operator/v1/customers?program_id=" + pid + "&click_id=HOSTILE", operator(), platform, msgBadQuery},
		{"operator query key", "GET", "/api/operator/v1/customers?program_id=" + pid + "&HOSTILE=1&click_id=x", operator(), platform, msgBadQuery},
		{"operator path id", "GET", "/api/operator/v1/commissions/HOSTILE", operator(), platform, msgBadPath},
		{"operator path id of a POST", "POST", "/api/operator/v1/programs/HOSTILE/links", operator(), platform, msgBadPath},
		{"events path", "GET", "/api/tracking/events/HOSTILE", bearer(w.ownerToken), platform, msgBadPath},
		{"events query", "GET", "/api/tracking/events/" + pid + "?eventType=HOSTILE", bearer(w.ownerToken), platform, msgBadQuery},
		{"settings path", "GET", "/api/v1/programs/HOSTILE/settings", bearer(w.ownerToken), platform, msgBadPath},
		{"brand stripe webhook path", "POST", "/webhooks/stripe/HOSTILE", nil, platform, msgBadPath},
		{"tracker config", "GET", "/api/v1/track/config?program_id=HOSTILE", nil, platform, msgBadQuery},
		{"cli poll", "GET", "/api/v1/cli/auth/poll?state=HOSTILE", nil, platform, msgBadQuery},
		{"cli status", "GET", "/api/v1/cli/status?program_id=HOSTILE", bearer(w.liveKey), platform, msgBadQuery},
		{"cli login page", "GET", "/cli/login?state=HOSTILE", nil, platform, msgBadQuery},
		{"sources (typed)", "GET", "/api/v1/programs/me/analytics/sources?group_by=HOSTILE", bearer(w.liveKey), typed, msgBadQuery},
		{"readiness (typed)", "GET", "/api/v1/programs/me/readiness?x=HOSTILE", bearer(w.liveKey), typed, msgBadQuery},
		{"sale (stable codes)", "POST", salePath + "?x=HOSTILE", bearer(w.liveKey), stable, msgBadQuery},
		{"click", "POST", "/api/v1/track/click?x=HOSTILE", nil, platform, msgBadQuery},
		{"agent path", "GET", "/api/agent/v1/programs/HOSTILE", nil, platform, msgBadPath},
	} {
		for _, v := range hostile {
			path := strings.ReplaceAll(tc.path, "HOSTILE", v)
			t.Run(tc.desc+" "+v, func(t *testing.T) {
				r := do(t, b.app, req{tc.method, path, nil, tc.header})
				if r.Status != 400 {
					t.Fatalf("%s %s: %d %s", tc.method, path, r.Status, r.Raw)
				}
				e, _ := r.Body["error"].(map[string]any)
				_, hasData := r.Body["data"]
				switch {
				case e == nil || e["message"] != tc.msg:
					t.Fatalf("message: %s", r.Raw)
				case tc.env == typed && (hasData || e["code"] != ledger.EInvalid || e["name"] != nil):
					t.Fatalf("not the typed envelope: %s", r.Raw)
				case tc.env != typed && (!hasData || e["name"] != "BadRequestError"):
					t.Fatalf("not the platform envelope: %s", r.Raw)
				case tc.env == stable && e["code"] != ledger.EInvalid:
					t.Fatalf("no stable code: %s", r.Raw)
				case tc.env == platform && e["code"] != nil:
					t.Fatalf("a code the route does not carry: %s", r.Raw)
				}
			})
		}
	}
	// Text that is valid stays valid: é, a + and an escaped %.
	q := url.Values{"program_id": {pid}, "customer_key": {"café +%00 literal"}}
	if r := do(t, b.app, req{"GET", "/api/operator/v1/customers?" + q.Encode(), nil, operator()}); r.Status != 404 {
		t.Fatalf("a valid customer_key: %d %s", r.Status, r.Raw)
	}
	if r := do(t, b.app, req{"GET", "/api/operator/v1/commissions/99999", nil, operator()}); r.Status != 404 {
		t.Fatalf("a valid path id: %d %s", r.Status, r.Raw)
	}
	// The operator API, when disabled, still looks absent.
	off := newTestServerConfig(b.db, b.clock, func(c *Config) { c.OperatorToken = "" })
	if r := do(t, off.App(), req{"GET", "/api/operator/v1/customers?customer_key=%00", nil, operator()}); r.Status != 404 {
		t.Fatalf("disabled operator API: %d %s", r.Status, r.Raw)
	}
}
