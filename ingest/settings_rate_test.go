package ingest

import (
	"testing"

	"github.com/partnertrack/partnertrack/ledger"
)

// TestSettingsCommissionRatePlaces: the settings route keeps at most four
// decimal places of commission_rate and refuses more with a 400, storing
// nothing (1e-400 was stored with 400 decimals).
func TestSettingsCommissionRatePlaces(t *testing.T) {
	b, app, _ := setupSettings(t)
	w := MustWorld(t, app)
	b.app = app
	path := settingsPath(w.programID)
	patch := func(body string) response {
		return do(t, app, req{"PATCH", path, body, bearer(w.ownerToken)})
	}
	stored := func() string {
		t.Helper()
		var s string
		if err := b.db.QueryRow(`SELECT commission_rate::text FROM programs WHERE id = $1`, w.programID).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}

	d := mustOK(t, patch(`{"commission_type":"percent","commission_rate":12.3456}`), 200)
	if d["commission_rate"] != 12.3456 || stored() != "12.3456" {
		t.Fatalf("rate = %v, stored %s", d["commission_rate"], stored())
	}
	mustOK(t, patch(`{"commission_rate":7.50000000}`), 200)
	if got := stored(); got != "7.5" && got != "7.5000" {
		t.Fatalf("stored %s, want 7.5 with at most 4 places", got)
	}
	for _, body := range []string{`{"commission_rate":1e-400}`, `{"commission_rate":12.34567}`, `{"commission_rate":0.00001}`} {
		before := stored()
		r := patch(body)
		assertPlatformError(t, r, 400, "BadRequestError", ledger.MsgCommissionRatePlaces, "")
		if after := stored(); after != before {
			t.Fatalf("%s: stored %s, was %s", body, after, before)
		}
	}
}
