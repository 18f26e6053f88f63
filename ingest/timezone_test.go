package ingest

import "testing"

// TestSettingsTimezone: the program's analytics timezone is UTC until the
// brand sets an IANA name through the settings route; anything else is a
// 400 that names the field, and nothing is written.
func TestSettingsTimezone(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	owner := bearer(w.ownerToken)
	settings := "/api/v1/programs/" + itoa(w.programID) + "/settings"

	if d := mustOK(t, do(t, b.app, req{"GET", settings, nil, owner}), 200); d["timezone"] != "UTC" {
		t.Fatalf("default timezone %v", d["timezone"])
	}
	if d := mustOK(t, do(t, b.app, req{"PATCH", settings, map[string]any{"timezone": "Asia/Ho_Chi_Minh"}, owner}), 200); d["timezone"] != "Asia/Ho_Chi_Minh" {
		t.Fatalf("timezone after PATCH %v", d["timezone"])
	}
	for _, bad := range []any{"Mars/Olympus", "", "Local", "UTC+3", 7, "Europe/Paris\x00"} {
		assertIntakeError(t, do(t, b.app, req{"PATCH", settings, map[string]any{"timezone": bad, "hold_days": 10}, owner}), 400,
			"timezone must be an IANA time zone name such as Europe/Paris")
	}
	if d := mustOK(t, do(t, b.app, req{"GET", settings, nil, owner}), 200); d["timezone"] != "Asia/Ho_Chi_Minh" || d["hold_days"] != float64(30) {
		t.Fatalf("a refused update wrote: %v", d)
	}
}
