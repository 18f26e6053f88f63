package ingest

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func invitesPath(programID int64) string { return "/api/v1/programs/" + itoa(programID) + "/invites" }

func applicationsPath(programID int64) string {
	return "/api/v1/programs/" + itoa(programID) + "/applications"
}

func publicPath(slug string) string { return "/api/v1/public/programs/" + slug }

func assertIntakeHeaders(t *testing.T, r response, limit int) {
	t.Helper()
	if r.Header.Get("X-Request-ID") == "" || r.Header.Get("X-RateLimit-Limit") != strconv.Itoa(limit) {
		t.Fatalf("headers %v", r.Header)
	}
}

func assertIntakeError(t *testing.T, r response, status int, msg string) {
	t.Helper()
	e, _ := r.Body["error"].(map[string]any)
	if r.Status != status || e == nil || e["message"] != msg {
		t.Fatalf("status %d, want %d %q: %s", r.Status, status, msg, r.Raw)
	}
}

func TestInviteRoutes(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	other := MustWorld(t, b.app)
	path := invitesPath(w.programID)
	owner := bearer(w.ownerToken)
	member := bearer(dashboardMemberToken(t, b, w, "member"))
	admin := bearer(dashboardMemberToken(t, b, w, "admin"))

	var annID int64
	t.Run("OK create", func(t *testing.T) {
		r := do(t, b.app, req{"POST", path, map[string]any{
			"emails":      []string{"ann@partner.example", "ANN@partner.example", "bob@partner.example"},
			"partner_ids": []int64{w.partnerID, other.partnerID},
			"message":     "Join us",
		}, owner})
		assertIntakeHeaders(t, r, limitPartnerIntake)
		d := mustOK(t, r, 200)
		invited, skipped := d["invited"].([]any), d["skipped"].([]any)
		if len(invited) != 2 || len(skipped) != 3 {
			t.Fatalf("answer %s", r.Raw)
		}
		ann := invited[0].(map[string]any)
		if ann["email"] != "ann@partner.example" || ann["status"] != "pending" || ann["message"] != "Join us" || ann["group_id"] != nil {
			t.Fatalf("invite %v", ann)
		}
		annID = id(ann["id"])
		reasons := []string{}
		for _, s := range skipped {
			m := s.(map[string]any)
			reasons = append(reasons, m["reason"].(string))
		}
		if strings.Join(reasons, ",") != "duplicate,already_partner,unknown_partner" {
			t.Fatalf("skipped %s", r.Raw)
		}
		last := skipped[2].(map[string]any)
		if last["email"] != nil || id(last["partner_id"]) != other.partnerID {
			t.Fatalf("another workspace's partner told: %v", last)
		}
		if n := countRows(t, b, `SELECT count(*) FROM outbox WHERE task_type = 'email:send' AND payload->>'to' = 'ann@partner.example'`); n != 1 {
			t.Fatalf("invite emails = %d", n)
		}
	})
	t.Run("OK admin", func(t *testing.T) {
		d := mustOK(t, do(t, b.app, req{"POST", path, map[string]any{"emails": []string{"cy@partner.example"}}, admin}), 200)
		if len(d["invited"].([]any)) != 1 {
			t.Fatalf("%v", d)
		}
	})
	before := countRows(t, b, `SELECT count(*) FROM partner_invites`)
	t.Run("ErrInvalid", func(t *testing.T) {
		many := make([]string, 51)
		for i := range many {
			many[i] = "p" + itoa(int64(i)) + "@partner.example"
		}
		for _, tc := range []struct {
			desc string
			body any
			msg  string
		}{
			{"51 emails", map[string]any{"emails": many}, "emails must be an array of at most 50 email addresses"},
			{"emails not an array", map[string]any{"emails": "a@b.example"}, "emails must be an array of at most 50 email addresses"},
			{"bad email", map[string]any{"emails": []string{"a@b.example", "nope"}}, "emails[1] must be a valid email address"},
			{"partner ids", map[string]any{"partner_ids": []any{"x"}}, "partner_ids must be an array of at most 50 partner ids (positive integers)"},
			{"nobody", map[string]any{"emails": []string{}}, "emails or partner_ids must name at least one partner"},
			{"group of another program", map[string]any{"emails": []string{"g@partner.example"}, "group_id": 999999}, "group_id must be the id of a group of this program"},
			{"message", map[string]any{"emails": []string{"m@partner.example"}, "message": strings.Repeat("a", 1001)}, "message must be text of at most 1000 characters"},
			{"not JSON", "[1]", "Request body must be a JSON object"},
		} {
			r := do(t, b.app, req{"POST", path, tc.body, owner})
			assertIntakeError(t, r, 400, tc.msg)
			assertIntakeHeaders(t, r, limitPartnerIntake)
		}
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		// A member's write is refused before the body is read.
		assertIntakeError(t, do(t, b.app, req{"POST", path, "not json", member}), 403, msgIntakeAdminOnly)
		assertIntakeError(t, do(t, b.app, req{"POST", path + "/" + itoa(annID) + "/resend", nil, member}), 403, msgIntakeAdminOnly)
		assertIntakeError(t, do(t, b.app, req{"DELETE", path + "/" + itoa(annID), nil, member}), 403, msgIntakeAdminOnly)
		r := do(t, b.app, req{"POST", path, map[string]any{"emails": []string{"z@partner.example"}}, bearer(other.ownerToken)})
		if r.Status != 403 {
			t.Fatalf("another workspace: %d %s", r.Status, r.Raw)
		}
		if r := do(t, b.app, req{"GET", path, nil, nil}); r.Status != 401 {
			t.Fatalf("no token: %d", r.Status)
		}
	})
	if after := countRows(t, b, `SELECT count(*) FROM partner_invites`); after != before {
		t.Fatal("an invite was stored on a refusal")
	}
	t.Run("OK list", func(t *testing.T) {
		r := do(t, b.app, req{"GET", path + "?status=pending&pageSize=1", nil, member})
		d := r.Body
		if r.Status != 200 || len(d["data"].([]any)) != 1 {
			t.Fatalf("%s", r.Raw)
		}
		p := d["meta"].(map[string]any)["pagination"].(map[string]any)
		if p["total"] != float64(3) || p["pageCount"] != float64(3) {
			t.Fatalf("pagination %v", p)
		}
		assertIntakeError(t, do(t, b.app, req{"GET", path + "?status=lost", nil, member}), 400, "status must be one of: pending, accepted, cancelled, declined, expired")
		assertIntakeError(t, do(t, b.app, req{"GET", path + "?pageSize=101", nil, member}), 400, "pageSize must be an integer from 1 to 100")
	})
	t.Run("OK resend and cancel", func(t *testing.T) {
		assertIntakeError(t, do(t, b.app, req{"POST", path + "/" + itoa(annID) + "/resend", nil, owner}), 409, "invite was sent less than a minute ago; resend it later")
		b.clock.Set(b.clock.Now().Add(2 * time.Minute))
		d := mustOK(t, do(t, b.app, req{"POST", path + "/" + itoa(annID) + "/resend", nil, admin}), 200)
		if d["last_sent_at"] != formatTime(b.clock.Now()) || d["expires_at"] != formatTime(b.clock.Now().Add(30*24*time.Hour)) {
			t.Fatalf("resent %v", d)
		}
		d = mustOK(t, do(t, b.app, req{"DELETE", path + "/" + itoa(annID), nil, owner}), 200)
		if d["status"] != "cancelled" || d["cancelled_at"] == nil {
			t.Fatalf("cancelled %v", d)
		}
		assertIntakeError(t, do(t, b.app, req{"DELETE", path + "/" + itoa(annID), nil, owner}), 409, "only a pending invite can be cancelled")
		assertIntakeError(t, do(t, b.app, req{"POST", path + "/" + itoa(annID) + "/resend", nil, owner}), 409, "only a pending invite can be resent")
		// Another program's path with this invite's id: not found.
		assertIntakeError(t, do(t, b.app, req{"DELETE", invitesPath(other.programID) + "/" + itoa(annID), nil, bearer(other.ownerToken)}), 404, "invite not found")
		assertIntakeError(t, do(t, b.app, req{"DELETE", path + "/abc", nil, owner}), 404, "invite not found")
	})
}

func TestApplicationRoutes(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	other := MustWorld(t, b.app)
	owner := bearer(w.ownerToken)
	member := bearer(dashboardMemberToken(t, b, w, "member"))
	settings := "/api/v1/programs/" + itoa(w.programID) + "/settings"
	slug := "acme-" + itoa(w.programID)

	t.Run("OK settings", func(t *testing.T) {
		d := mustOK(t, do(t, b.app, req{"GET", settings, nil, owner}), 200)
		if d["slug"] != "program-"+itoa(w.programID) || d["partner_approval"] != "manual" {
			t.Fatalf("settings %v", d)
		}
		d = mustOK(t, do(t, b.app, req{"PATCH", settings, map[string]any{"slug": slug, "partner_approval": "manual", "commission_type": "recurring_percent", "commission_rate": 20, "duration_months": 12}, owner}), 200)
		if d["slug"] != slug {
			t.Fatalf("settings %v", d)
		}
		assertIntakeError(t, do(t, b.app, req{"PATCH", "/api/v1/programs/" + itoa(other.programID) + "/settings", map[string]any{"slug": slug}, bearer(other.ownerToken)}), 409, "slug is already used by another program")
		assertIntakeError(t, do(t, b.app, req{"PATCH", settings, map[string]any{"slug": "Bad Slug"}, owner}), 400, "slug must be 3 to 60 lowercase letters, digits or '-'")
		assertIntakeError(t, do(t, b.app, req{"PATCH", settings, map[string]any{"partner_approval": "never"}, owner}), 400, "partner_approval must be one of: auto, manual")
		assertIntakeError(t, do(t, b.app, req{"PATCH", settings, map[string]any{"slug": "program-" + itoa(other.programID)}, owner}), 400, "slug program-<number> is reserved for the program with that id")
	})
	t.Run("OK public page", func(t *testing.T) {
		r := do(t, b.app, req{"GET", publicPath(slug), nil, map[string]string{"Origin": "https://blog.example"}})
		assertIntakeHeaders(t, r, limitPublicProgram)
		d := mustOK(t, r, 200)
		if d["name"] != "Acme Pro" || d["commission"] != "20% of every sale for 12 months" || d["cookie_duration"] != float64(90) ||
			d["hold_days"] != float64(30) || d["currency"] != "USD" || d["partner_approval"] != "manual" {
			t.Fatalf("public %s", r.Raw)
		}
		for _, private := range []string{"id", "workspace_id", "api_token_masked", "program_id"} {
			if _, ok := d[private]; ok {
				t.Fatalf("public page shows %s", private)
			}
		}
		if r.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("no CORS: %v", r.Header)
		}
		assertIntakeError(t, do(t, b.app, req{"GET", publicPath("no-such-program"), nil, nil}), 404, "program not found")
		assertIntakeError(t, do(t, b.app, req{"GET", publicPath("program-" + itoa(w.programID)), nil, nil}), 404, "program not found")
	})

	apply := func(body any, xff string) response {
		return do(t, b.app, req{"POST", publicPath(slug) + "/applications", body, map[string]string{"X-Forwarded-For": xff}})
	}
	var catID int64
	t.Run("OK apply", func(t *testing.T) {
		r := apply(map[string]any{"name": "Cat", "email": "Cat@Partner.example", "message": "I blog", "website": "https://cat.example"}, "198.51.100.1")
		assertIntakeHeaders(t, r, limitPublicApply)
		d := mustOK(t, r, 202)
		if d["email"] != "cat@partner.example" || d["status"] != "pending" || len(d) != 2 {
			t.Fatalf("answer %s", r.Raw)
		}
		// The same answer again: it tells nobody the email applied before.
		again := apply(map[string]any{"name": "Cat again", "email": "cat@partner.example"}, "198.51.100.1")
		if again.Status != 202 || string(again.Raw) != string(r.Raw) {
			t.Fatalf("again %d %s, want %s", again.Status, again.Raw, r.Raw)
		}
		if n := countRows(t, b, `SELECT count(*) FROM partner_applications WHERE program_id = $1`, w.programID); n != 1 {
			t.Fatalf("applications = %d", n)
		}
		if n := countRows(t, b, `SELECT count(*) FROM outbox WHERE task_type = 'email:send' AND payload->>'kind' = 'application_received'`); n != 1 {
			t.Fatalf("received emails = %d", n)
		}
		for _, tc := range []struct {
			body any
			msg  string
		}{
			{map[string]any{"email": "a@b.example"}, "name must be a string of 1 to 200 characters"},
			{map[string]any{"name": "A", "email": "nope"}, "email must be a valid email address"},
			{map[string]any{"name": "A", "email": "a@b.example", "message": strings.Repeat("m", 1001)}, "message must be text of at most 1000 characters"},
			{map[string]any{"name": "A", "email": "a@b.example", "website": "ftp://x.example"}, "website must be an absolute http or https URL of at most 2048 characters"},
		} {
			assertIntakeError(t, apply(tc.body, "198.51.100.2"), 400, tc.msg)
		}
		assertIntakeError(t, do(t, b.app, req{"POST", publicPath("nowhere-here") + "/applications", map[string]any{"name": "A", "email": "a@b.example"}, nil}), 404, "program not found")
		var patEmail string
		b.db.QueryRow(`SELECT email FROM partners WHERE id = $1`, w.partnerID).Scan(&patEmail)
		// A partner applying gets the answer anyone gets; nothing is stored.
		r = apply(map[string]any{"name": "Pat", "email": patEmail}, "198.51.100.3")
		if d := mustOK(t, r, 202); d["email"] != patEmail || d["status"] != "pending" || len(d) != 2 {
			t.Fatalf("partner applies: %s", r.Raw)
		}
		if n := countRows(t, b, `SELECT count(*) FROM partner_applications WHERE email = $1`, patEmail); n != 0 {
			t.Fatalf("%d applications of a partner", n)
		}
	})
	t.Run("OK review", func(t *testing.T) {
		r := do(t, b.app, req{"GET", applicationsPath(w.programID) + "?status=pending", nil, member})
		if r.Status != 200 || len(r.Body["data"].([]any)) != 1 {
			t.Fatalf("%s", r.Raw)
		}
		catID = id(r.Body["data"].([]any)[0].(map[string]any)["id"])
		approve := applicationsPath(w.programID) + "/" + itoa(catID) + "/approve"
		assertIntakeError(t, do(t, b.app, req{"POST", approve, "not json", member}), 403, msgIntakeAdminOnly)
		assertIntakeError(t, do(t, b.app, req{"POST", approve, map[string]any{"group_id": "x"}, owner}), 400, "group_id must be the id of a group of this program")
		assertIntakeError(t, do(t, b.app, req{"POST", applicationsPath(other.programID) + "/" + itoa(catID) + "/approve", nil, bearer(other.ownerToken)}), 404, "application not found")
		if r := do(t, b.app, req{"POST", approve, nil, bearer(other.ownerToken)}); r.Status != 403 {
			t.Fatalf("another workspace: %d", r.Status)
		}
		d := mustOK(t, do(t, b.app, req{"POST", approve, nil, owner}), 200)
		if d["status"] != "approved" || d["partner_id"] == nil || d["group_id"] == nil || d["decided_at"] == nil {
			t.Fatalf("approved %v", d)
		}
		if n := countRows(t, b, `SELECT count(*) FROM links WHERE program_id = $1 AND partner_id = $2 AND active`, w.programID, id(d["partner_id"])); n != 1 {
			t.Fatal("no link")
		}
		assertIntakeError(t, do(t, b.app, req{"POST", approve, nil, owner}), 409, "application has already been decided")

		mustOK(t, apply(map[string]any{"name": "Dee", "email": "dee@partner.example"}, "198.51.100.4"), 202)
		r = do(t, b.app, req{"GET", applicationsPath(w.programID) + "?status=pending", nil, owner})
		dee := id(r.Body["data"].([]any)[0].(map[string]any)["id"])
		reject := applicationsPath(w.programID) + "/" + itoa(dee) + "/reject"
		assertIntakeError(t, do(t, b.app, req{"POST", reject, map[string]any{"reason": strings.Repeat("r", 1001)}, owner}), 400, "reason must be text of at most 1000 characters")
		d = mustOK(t, do(t, b.app, req{"POST", reject, map[string]any{"reason": "Not now"}, owner}), 200)
		if d["status"] != "rejected" || d["reason"] != "Not now" {
			t.Fatalf("rejected %v", d)
		}
		assertIntakeError(t, do(t, b.app, req{"GET", applicationsPath(w.programID) + "?status=maybe", nil, owner}), 400, "status must be one of: pending, approved, rejected")
	})
	t.Run("OK auto", func(t *testing.T) {
		mustOK(t, do(t, b.app, req{"PATCH", settings, map[string]any{"partner_approval": "auto"}, owner}), 200)
		d := mustOK(t, apply(map[string]any{"name": "Eve", "email": "eve@partner.example"}, "198.51.100.5"), 202)
		if d["status"] != "approved" {
			t.Fatalf("auto %v", d)
		}
	})
	t.Run("ErrRateLimited", func(t *testing.T) {
		var last response
		for i := 0; i <= limitPublicApply; i++ {
			last = apply(map[string]any{"name": "F", "email": "f" + itoa(int64(i)) + "@partner.example"}, "203.0.113.77")
		}
		if last.Status != 429 {
			t.Fatalf("status %d after %d applications", last.Status, limitPublicApply+1)
		}
	})
}

// TestIntakeRateLimit: the seven brand routes share one bucket of 120
// requests a minute per dashboard token; another token has its own, and
// the next minute starts afresh.
func TestIntakeRateLimit(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	owner := bearer(w.ownerToken)
	for i := 0; i < limitPartnerIntake; i++ {
		path := invitesPath(w.programID)
		if i%2 == 1 {
			path = applicationsPath(w.programID)
		}
		if r := do(t, b.app, req{"GET", path, nil, owner}); r.Status != 200 {
			t.Fatalf("call %d: %d %s", i+1, r.Status, r.Raw)
		}
	}
	r := do(t, b.app, req{"DELETE", invitesPath(w.programID) + "/1", nil, owner})
	if r.Status != 429 || r.Header.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("call %d: %d %s", limitPartnerIntake+1, r.Status, r.Raw)
	}
	admin := bearer(dashboardMemberToken(t, b, w, "admin"))
	if r := do(t, b.app, req{"GET", invitesPath(w.programID), nil, admin}); r.Status != 200 {
		t.Fatalf("another token: %d", r.Status)
	}
	b.clock.Set(b.clock.Now().Add(time.Minute))
	if r := do(t, b.app, req{"GET", applicationsPath(w.programID), nil, owner}); r.Status != 200 {
		t.Fatalf("next minute: %d", r.Status)
	}
}
