package ingest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRefusalsBeforeTheRouteCarryItsHeaders: a 413 (body over the limit)
// and a 429 (over the rate limit), both refused before the route's own
// checks, carry the route's X-RateLimit headers, and, answered to a key
// marked for rotation, its Deprecation, Sunset and Link headers; to a key
// that is not marked, none of the three.
func TestRefusalsBeforeTheRouteCarryItsHeaders(t *testing.T) {
	b := setup(t)
	marked, plain := MustWorld(t, b.app), MustWorld(t, b.app)
	deadline := b.clock.Now().Add(30 * 24 * time.Hour).UTC().Truncate(time.Second)
	d := mustOK(t, do(t, b.app, req{"POST", "/api/operator/v1/programs/" + itoa(marked.programID) + "/key-rotation",
		map[string]any{"deadline": formatTime(deadline)}, operator()}), 200)
	markedAt, err := time.Parse(time.RFC3339, d["marked_at"].(string))
	if err != nil {
		t.Fatal(err)
	}
	oversized := `{"pad":"` + strings.Repeat("x", maxBodyBytes) + `"}`
	ip := 0
	for _, route := range []struct {
		name, method, path string
		limit              int
	}{
		{"Click", "POST", "/api/v1/track/click", limitClick},
		{"Lead", "POST", "/api/v1/track/lead", limitLead},
		{"Sale", "POST", "/api/v1/track/sale", limitSaleRefund},
		{"Refund", "POST", "/api/v1/track/refund", limitSaleRefund},
		{"Readiness", "GET", "/api/v1/programs/me/readiness", limitReadiness},
		{"Sources", "GET", "/api/v1/programs/me/analytics/sources", limitSources},
		{"CLIStatus", "GET", "/api/v1/cli/status", limitCLI},
		{"CLITestEvent", "POST", "/api/v1/cli/test-event", limitCLI},
	} {
		for _, status := range []int{413, 429} {
			for _, key := range []struct {
				name   string
				token  string
				marked bool
			}{{"MarkedKey", marked.liveKey, true}, {"UnmarkedKey", plain.liveKey, false}} {
				t.Run(fmt.Sprintf("%s/%d/%s", route.name, status, key.name), func(t *testing.T) {
					// A fresh rate-limit window, and a client of its own.
					b.clock.Set(b.clock.Now().Add(2 * time.Minute))
					ip++
					h := map[string]string{"Authorization": "Bearer " + key.token, "X-Forwarded-For": "198.51.100." + strconv.Itoa(ip)}
					r := do(t, b.app, req{route.method, route.path, oversized, h})
					if status == 429 {
						// Oversized calls count and are refused cheaply;
						// the next call of any size is over the limit.
						for i := 1; i < route.limit && r.Status == 413; i++ {
							r = do(t, b.app, req{route.method, route.path, oversized, h})
						}
						if r.Status != 413 {
							t.Fatalf("filling the bucket: %d %.300s", r.Status, r.Raw)
						}
						r = do(t, b.app, req{route.method, route.path, "{}", h})
					}
					if r.Status != status {
						t.Fatalf("status %d, want %d: %.300s", r.Status, status, r.Raw)
					}
					if got := r.Header.Get("X-RateLimit-Limit"); got != strconv.Itoa(route.limit) {
						t.Fatalf("X-RateLimit-Limit %q, want %d", got, route.limit)
					}
					if got := r.Header.Get("X-RateLimit-Remaining"); got == "" || (status == 429 && got != "0") {
						t.Fatalf("X-RateLimit-Remaining %q", got)
					}
					if got, err := strconv.ParseInt(r.Header.Get("X-RateLimit-Reset"), 10, 64); err != nil || got < b.clock.Now().Unix() {
						t.Fatalf("X-RateLimit-Reset %q", r.Header.Get("X-RateLimit-Reset"))
					}
					if retry := r.Header.Get("Retry-After"); (status == 429) != (retry != "") {
						t.Fatalf("Retry-After %q on a %d", retry, status)
					}
					rotation := map[string]string{
						"Deprecation": "@" + strconv.FormatInt(markedAt.Unix(), 10),
						"Sunset":      deadline.Format("Mon, 02 Jan 2006 15:04:05 GMT"),
						"Link":        "<https://track.example/docs/errors#api_key_rotation_required>; rel=\"deprecation\"",
					}
					for name, want := range rotation {
						got := r.Header.Get(name)
						if !key.marked {
							want = ""
						}
						if got != want {
							t.Fatalf("%s %q, want %q", name, got, want)
						}
					}
				})
			}
		}
	}
}

// TestBodyLimitLeavesOnlyLimitedRoutesToTheirLimiter: the global body
// limit steps aside only for a method and path that a rate-limited route
// serves; another method on the same path is refused by it as before.
func TestBodyLimitLeavesOnlyLimitedRoutesToTheirLimiter(t *testing.T) {
	b := setup(t)
	for _, tc := range []struct {
		method, path string
		limited      bool
	}{
		{"POST", "/api/v1/track/sale", true},
		{"POST", "/api/v1/track/sale/", true},
		{"GET", "/api/v1/programs/12/settings", true},
		{"HEAD", "/api/v1/programs/12/settings", true},
		{"PATCH", "/api/v1/programs/12/settings", true},
		{"GET", "/api/v1/programs//settings", false},
		{"POST", "/api/v1/auth/session", true},
		{"DELETE", "/api/v1/auth/session", false},
		{"POST", "/api/v1/cli/test-event", true},
		{"POST", "/api/operator/v1/programs", false},
		{"GET", "/api/v1/track/sale", false},
	} {
		if got := b.srv.isLimitedRoute(tc.method, tc.path); got != tc.limited {
			t.Errorf("%s %s: limited %v, want %v", tc.method, tc.path, got, tc.limited)
		}
	}
	w := MustWorld(t, b.app)
	oversized := `{"pad":"` + strings.Repeat("x", maxBodyBytes) + `"}`
	r := do(t, b.app, req{"DELETE", "/api/v1/auth/session", oversized, bearer(w.ownerToken)})
	if r.Status != 413 {
		t.Fatalf("sign-out with an oversized body: %d %.300s", r.Status, r.Raw)
	}
}
