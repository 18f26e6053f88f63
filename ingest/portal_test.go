package ingest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
)

// portalBundle is a signed-in partner (ana) of a world's program, with a
// link of its own, and a second partner (bo) of the same program.
type portalBundle struct {
	*signInBundle
	w              world
	ana, bo        string // partner tokens
	anaID, bobID   int64
	anaLink        int64
	anaCode        string
	anaEmail, boEm string
}

func setupPortal(t *testing.T) *portalBundle {
	t.Helper()
	b := setupSignIn(t)
	w := MustWorld(t, b.app)
	n := itoa(worldCount.Add(1))
	p := &portalBundle{signInBundle: b, w: w, anaEmail: "ana" + n + "@creator.example", boEm: "bo" + n + "@creator.example"}
	p.anaID = mustEnrollEmail(t, b.app, w.programID, p.anaEmail, "Ana")
	p.bobID = mustEnrollEmail(t, b.app, w.programID, p.boEm, "Bo")
	p.anaCode = "ana" + n
	d := mustOK(t, do(t, b.app, req{"POST", "/api/operator/v1/programs/" + itoa(w.programID) + "/links",
		map[string]any{"partner_id": p.anaID, "code": p.anaCode}, operator()}), 201)
	p.anaLink = id(d["id"])
	p.ana = signInPartner(t, b, "sub-ana"+n, p.anaEmail)
	p.bo = signInPartner(t, b, "sub-bo"+n, p.boEm)
	return p
}

// mustEnrollEmail enrolls email in a program through the operator API.
func mustEnrollEmail(t *testing.T, app *fiber.App, programID int64, email, name string) int64 {
	t.Helper()
	d := mustOK(t, do(t, app, req{"POST", "/api/operator/v1/programs/" + itoa(programID) + "/partners",
		map[string]any{"email": email, "name": name}, operator()}), 201)
	return id(d["id"])
}

// list reads a listing's data array.
func list(t *testing.T, r response, status int) []map[string]any {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Raw)
	}
	raw, _ := r.Body["data"].([]any)
	out := make([]map[string]any, len(raw))
	for i, v := range raw {
		out[i] = v.(map[string]any)
	}
	return out
}

// partnerErr checks a platform error of the partner API.
func partnerErr(t *testing.T, r response, status int, msg string) {
	t.Helper()
	name := map[int]string{400: "BadRequestError", 403: "ForbiddenError", 404: "NotFoundError", 409: "ConflictError"}[status]
	assertPlatformError(t, r, status, name, msg, "")
}

// inviteTokenTo reads the token of the newest invite email to to.
func inviteTokenTo(t *testing.T, b *testBundle, to string) string {
	t.Helper()
	var url string
	if err := b.db.QueryRow(`SELECT payload->'data'->>'accept_url' FROM outbox
		WHERE task_type = 'email:send' AND payload->>'to' = $1 ORDER BY id DESC LIMIT 1`, to).Scan(&url); err != nil {
		t.Fatal(err)
	}
	tok, ok := strings.CutPrefix(url, "https://track.example/partner/invites/")
	if !ok {
		t.Fatalf("accept_url %s", url)
	}
	return tok
}

func TestPartnerPortalPrograms(t *testing.T) {
	p := setupPortal(t)
	r := do(t, p.app, req{"GET", "/api/v1/partner/programs", nil, bearer(p.ana)})
	assertIntakeHeaders(t, r, limitPartnerPortal)
	progs := list(t, r, 200)
	if len(progs) != 1 {
		t.Fatalf("programs %v", progs)
	}
	g := progs[0]
	if id(g["id"]) != p.w.programID || g["status"] != "active" || g["currency"] != "USD" || g["partner_links"] != false ||
		g["commission"] != "30% of the first sale of each referred customer" || g["group"].(map[string]any)["name"] == "" {
		t.Fatalf("program %v", g)
	}
	// A suspended partner still sees the program, as suspended.
	mustOK(t, do(t, p.app, req{"PATCH", "/api/v1/programs/" + itoa(p.w.programID) + "/partners/" + itoa(p.anaID),
		map[string]any{"status": "suspended"}, bearer(p.w.ownerToken)}), 200)
	progs = list(t, do(t, p.app, req{"GET", "/api/v1/partner/programs", nil, bearer(p.ana)}), 200)
	if progs[0]["status"] != "suspended" {
		t.Fatalf("program %v", progs[0])
	}
	// Without a partner token, nothing.
	r = do(t, p.app, req{"GET", "/api/v1/partner/programs", nil, bearer(p.w.ownerToken)})
	assertPlatformError(t, r, 401, "UnauthorizedError", "invalid or expired partner token", "")
	r = do(t, p.app, req{"GET", "/api/v1/partner/programs", nil, nil})
	assertPlatformError(t, r, 401, "UnauthorizedError", "Partner sign-in required", "")
}

// TestPartnerPortalRateLimit: one bucket of 120 requests a minute per
// partner token covers every partner route; another partner's token has
// its own.
func TestPartnerPortalRateLimit(t *testing.T) {
	p := setupPortal(t)
	paths := []string{"/api/v1/partner/programs", "/api/v1/partner/balances", "/api/v1/partner/commissions", "/api/v1/partner/notifications"}
	for i := range limitPartnerPortal {
		if r := do(t, p.app, req{"GET", paths[i%len(paths)], nil, bearer(p.ana)}); r.Status != 200 {
			t.Fatalf("request %d: %d %s", i+1, r.Status, r.Raw)
		}
	}
	r := do(t, p.app, req{"GET", "/api/v1/partner/invites", nil, bearer(p.ana)})
	if r.Status != 429 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("request %d: %d %s", limitPartnerPortal+1, r.Status, r.Raw)
	}
	mustOK(t, do(t, p.app, req{"POST", "/api/v1/partner/notifications/read-all", nil, bearer(p.bo)}), 200)
}

func TestPartnerPortalInvites(t *testing.T) {
	p := setupPortal(t)
	other := MustWorld(t, p.app)
	third := MustWorld(t, p.app)
	invite := func(w world, email string) {
		t.Helper()
		d := mustOK(t, do(t, p.app, req{"POST", invitesPath(w.programID), map[string]any{"emails": []string{email}, "message": "Hi"},
			bearer(w.ownerToken)}), 200)
		if len(d["invited"].([]any)) != 1 {
			t.Fatalf("invite %v", d)
		}
	}
	invite(other, p.anaEmail)
	invite(third, p.anaEmail)

	invites := list(t, do(t, p.app, req{"GET", "/api/v1/partner/invites", nil, bearer(p.ana)}), 200)
	if len(invites) != 2 || id(invites[0]["program"].(map[string]any)["id"]) != third.programID || invites[0]["message"] != "Hi" {
		t.Fatalf("invites %v", invites)
	}
	thirdInvite, otherInvite := id(invites[0]["id"]), id(invites[1]["id"])
	if got := list(t, do(t, p.app, req{"GET", "/api/v1/partner/invites", nil, bearer(p.bo)}), 200); len(got) != 0 {
		t.Fatalf("bo sees %v", got)
	}

	t.Run("ErrAnotherEmailsInvite", func(t *testing.T) {
		partnerErr(t, do(t, p.app, req{"POST", "/api/v1/partner/invites/" + itoa(otherInvite) + "/accept", nil, bearer(p.bo)}), 404, "invite not found")
		partnerErr(t, do(t, p.app, req{"POST", "/api/v1/partner/invites/" + itoa(otherInvite) + "/decline", nil, bearer(p.bo)}), 404, "invite not found")
		partnerErr(t, do(t, p.app, req{"POST", "/api/v1/partner/invites/accept", map[string]any{"token": inviteTokenTo(t, p.testBundle, p.anaEmail)},
			bearer(p.bo)}), 404, "invite not found")
		partnerErr(t, do(t, p.app, req{"POST", "/api/v1/partner/invites/abc/accept", nil, bearer(p.bo)}), 404, "invite not found")
	})

	t.Run("OKDecline", func(t *testing.T) {
		d := mustOK(t, do(t, p.app, req{"POST", "/api/v1/partner/invites/" + itoa(thirdInvite) + "/decline", nil, bearer(p.ana)}), 200)
		if d["status"] != "declined" {
			t.Fatalf("declined %v", d)
		}
		partnerErr(t, do(t, p.app, req{"POST", "/api/v1/partner/invites/" + itoa(thirdInvite) + "/decline", nil, bearer(p.ana)}), 409,
			"only a pending invite can be declined")
		partnerErr(t, do(t, p.app, req{"POST", "/api/v1/partner/invites/" + itoa(thirdInvite) + "/accept", nil, bearer(p.ana)}), 409,
			"invite is no longer pending")
		brand := list(t, do(t, p.app, req{"GET", invitesPath(third.programID) + "?status=declined", nil, bearer(third.ownerToken)}), 200)
		if len(brand) != 1 || brand[0]["status"] != "declined" {
			t.Fatalf("brand listing %v", brand)
		}
	})

	t.Run("OKAcceptByID", func(t *testing.T) {
		d := mustOK(t, do(t, p.app, req{"POST", "/api/v1/partner/invites/" + itoa(otherInvite) + "/accept", nil, bearer(p.ana)}), 200)
		prog, link := d["program"].(map[string]any), d["link"].(map[string]any)
		if id(prog["id"]) != other.programID || prog["status"] != "active" ||
			link["url"] != "https://acme.example/?aff="+link["code"].(string) {
			t.Fatalf("accepted %v", d)
		}
		if n := len(list(t, do(t, p.app, req{"GET", "/api/v1/partner/programs", nil, bearer(p.ana)}), 200)); n != 2 {
			t.Fatalf("%d programs", n)
		}
	})

	t.Run("OKAcceptByToken", func(t *testing.T) {
		fourth := MustWorld(t, p.app)
		invite(fourth, p.anaEmail)
		tok := inviteTokenTo(t, p.testBundle, p.anaEmail)
		d := mustOK(t, do(t, p.app, req{"POST", "/api/v1/partner/invites/accept", map[string]any{"token": tok}, bearer(p.ana)}), 200)
		if id(d["program"].(map[string]any)["id"]) != fourth.programID {
			t.Fatalf("accepted %v", d)
		}
		partnerErr(t, do(t, p.app, req{"POST", "/api/v1/partner/invites/accept", map[string]any{"token": tok}, bearer(p.ana)}), 409,
			"invite is no longer pending")
	})

	t.Run("ErrBadToken", func(t *testing.T) {
		partnerErr(t, do(t, p.app, req{"POST", "/api/v1/partner/invites/accept", map[string]any{"token": 7}, bearer(p.ana)}), 400,
			"token is required and must be a string")
		partnerErr(t, do(t, p.app, req{"POST", "/api/v1/partner/invites/accept", map[string]any{"token": "nope"}, bearer(p.ana)}), 404,
			"invite not found")
	})
}

func TestPartnerPortalApply(t *testing.T) {
	p := setupPortal(t)
	other := MustWorld(t, p.app)
	slug := "acme-" + itoa(other.programID)
	mustOK(t, do(t, p.app, req{"PATCH", "/api/v1/programs/" + itoa(other.programID) + "/settings", map[string]any{"slug": slug},
		bearer(other.ownerToken)}), 200)
	mine := "mine-" + itoa(p.w.programID)
	mustOK(t, do(t, p.app, req{"PATCH", "/api/v1/programs/" + itoa(p.w.programID) + "/settings", map[string]any{"slug": mine},
		bearer(p.w.ownerToken)}), 200)

	d := mustOK(t, do(t, p.app, req{"POST", "/api/v1/partner/applications", map[string]any{"slug": slug, "message": "Hello"}, bearer(p.ana)}), 201)
	if d["status"] != "pending" || id(d["program_id"]) != other.programID || d["message"] != "Hello" {
		t.Fatalf("application %v", d)
	}
	again := mustOK(t, do(t, p.app, req{"POST", "/api/v1/partner/applications", map[string]any{"slug": slug}, bearer(p.ana)}), 200)
	if id(again["id"]) != id(d["id"]) {
		t.Fatalf("second application %v", again)
	}
	var email, name string
	if err := p.db.QueryRow(`SELECT email, name FROM partner_applications WHERE id = $1`, id(d["id"])).Scan(&email, &name); err != nil ||
		email != p.anaEmail || name != "Ana" {
		t.Fatalf("stored %s %s %v", email, name, err)
	}
	partnerErr(t, do(t, p.app, req{"POST", "/api/v1/partner/applications", map[string]any{"slug": mine}, bearer(p.ana)}), 409,
		"you are already a partner of this program")
	partnerErr(t, do(t, p.app, req{"POST", "/api/v1/partner/applications", map[string]any{"slug": "no-such-program"}, bearer(p.ana)}), 404,
		"program not found")
	partnerErr(t, do(t, p.app, req{"POST", "/api/v1/partner/applications", map[string]any{}, bearer(p.ana)}), 400,
		"slug is required and must be a string")
	partnerErr(t, do(t, p.app, req{"POST", "/api/v1/partner/applications", map[string]any{"slug": slug, "message": strings.Repeat("x", 1001)},
		bearer(p.bo)}), 400, "message must be text of at most 1000 characters")
}

func TestPartnerPortalLinks(t *testing.T) {
	p := setupPortal(t)
	path := "/api/v1/partner/programs/" + itoa(p.w.programID) + "/links"
	mustClick(t, p.testBundle, p.w.programID, p.anaLink, p.anaID)
	mustClick(t, p.testBundle, p.w.programID, p.anaLink, p.anaID)

	links := list(t, do(t, p.app, req{"GET", path, nil, bearer(p.ana)}), 200)
	if len(links) != 1 || links[0]["code"] != p.anaCode || links[0]["url"] != "https://acme.example/?aff="+p.anaCode ||
		links[0]["clicks"] != 2.0 || links[0]["active"] != true {
		t.Fatalf("links %v", links)
	}
	if got := list(t, do(t, p.app, req{"GET", path, nil, bearer(p.bo)}), 200); len(got) != 0 {
		t.Fatalf("bo sees %v", got)
	}

	t.Run("ErrSettingOff", func(t *testing.T) {
		partnerErr(t, do(t, p.app, req{"POST", path, map[string]any{"code": "ana-own"}, bearer(p.ana)}), 403,
			"This program does not let partners create their own links")
	})
	mustOK(t, do(t, p.app, req{"PATCH", "/api/v1/programs/" + itoa(p.w.programID) + "/settings", map[string]any{"partner_links": true},
		bearer(p.w.ownerToken)}), 200)

	code := "ana-own-" + itoa(p.w.programID)
	t.Run("OKCreate", func(t *testing.T) {
		d := mustOK(t, do(t, p.app, req{"POST", path, map[string]any{"code": code}, bearer(p.ana)}), 201)
		if d["code"] != code || d["active"] != true || d["clicks"] != 0.0 || d["url"] != "https://acme.example/?aff="+code {
			t.Fatalf("link %v", d)
		}
		if n := len(list(t, do(t, p.app, req{"GET", path, nil, bearer(p.ana)}), 200)); n != 2 {
			t.Fatalf("%d links", n)
		}
	})
	t.Run("ErrCode", func(t *testing.T) {
		partnerErr(t, do(t, p.app, req{"POST", path, map[string]any{"code": code}, bearer(p.bo)}), 409, "code is already used by another link")
		partnerErr(t, do(t, p.app, req{"POST", path, map[string]any{"code": "no spaces"}, bearer(p.ana)}), 400,
			"code must be 1 to 64 letters, digits, '-' or '_'")
		partnerErr(t, do(t, p.app, req{"POST", path, map[string]any{}, bearer(p.ana)}), 400,
			"code must be 1 to 64 letters, digits, '-' or '_'")
	})
	t.Run("ErrNotEnrolled", func(t *testing.T) {
		other := MustWorld(t, p.app)
		otherPath := "/api/v1/partner/programs/" + itoa(other.programID) + "/links"
		partnerErr(t, do(t, p.app, req{"GET", otherPath, nil, bearer(p.ana)}), 404, "program not found")
		partnerErr(t, do(t, p.app, req{"POST", otherPath, map[string]any{"code": "ana-x"}, bearer(p.ana)}), 404, "program not found")
		partnerErr(t, do(t, p.app, req{"GET", "/api/v1/partner/programs/0/links", nil, bearer(p.ana)}), 404, "program not found")
	})
	t.Run("ErrSuspended", func(t *testing.T) {
		mustOK(t, do(t, p.app, req{"PATCH", "/api/v1/programs/" + itoa(p.w.programID) + "/partners/" + itoa(p.bobID),
			map[string]any{"status": "suspended"}, bearer(p.w.ownerToken)}), 200)
		partnerErr(t, do(t, p.app, req{"POST", path, map[string]any{"code": "bo-own"}, bearer(p.bo)}), 403,
			"Only an active partner of the program can create links")
		if n := countRows(t, p.testBundle, `SELECT count(*) FROM links WHERE code = 'bo-own'`); n != 0 {
			t.Fatalf("%d links stored", n)
		}
	})
}

// anaSale records a click on ana's link, a lead with the customer's email
// and key, and a sale of amount cents for that customer.
func anaSale(t *testing.T, p *portalBundle, key, txn string, amount int64) int64 {
	t.Helper()
	click := mustClick(t, p.testBundle, p.w.programID, p.anaLink, p.anaID)
	if r := do(t, p.app, req{"POST", "/api/v1/track/lead", map[string]any{"click_id": click, "customer_key": key,
		"email": key + "@customer.example"}, bearer(p.w.liveKey)}); r.Status != 200 {
		t.Fatalf("lead %d %s", r.Status, r.Raw)
	}
	d := mustSuccess(t, do(t, p.app, req{"POST", "/api/v1/track/sale", map[string]any{"transaction_id": txn, "amount_cents": amount,
		"customer_key": key}, bearer(p.w.liveKey)}))
	return id(d["commission_id"])
}

func TestPartnerPortalMoney(t *testing.T) {
	p := setupPortal(t)
	commissionID := anaSale(t, p, "cust_secret_key", "txn_portal_1", 10000) // 30.00
	today := p.clock.Now().UTC().Format("2006-01-02")

	t.Run("OKStats", func(t *testing.T) {
		d := mustOK(t, do(t, p.app, req{"GET", "/api/v1/partner/programs/" + itoa(p.w.programID) + "/stats", nil, bearer(p.ana)}), 200)
		tot := d["totals"].(map[string]any)
		if tot["clicks"] != 1.0 || tot["leads"] != 1.0 || tot["conversions"] != 1.0 || tot["earnings"].(map[string]any)["USD"] != 30.0 ||
			d["period"] != "7d" || d["dateTo"] != today || len(d["days"].([]any)) != 7 {
			t.Fatalf("stats %v", d)
		}
		last := d["days"].([]any)[6].(map[string]any)
		if last["date"] != today || last["clicks"] != 1.0 {
			t.Fatalf("today %v", last)
		}
		bo := mustOK(t, do(t, p.app, req{"GET", "/api/v1/partner/programs/" + itoa(p.w.programID) + "/stats?period=all", nil, bearer(p.bo)}), 200)
		if bt := bo["totals"].(map[string]any); bt["clicks"] != 0.0 || bt["earnings"].(map[string]any)["USD"] != 0.0 {
			t.Fatalf("bo's stats %v", bo)
		}
		custom := mustOK(t, do(t, p.app, req{"GET", "/api/v1/partner/programs/" + itoa(p.w.programID) + "/stats?dateFrom=" + today + "&dateTo=" + today,
			nil, bearer(p.ana)}), 200)
		if custom["period"] != "custom" || len(custom["days"].([]any)) != 1 {
			t.Fatalf("custom %v", custom)
		}
		partnerErr(t, do(t, p.app, req{"GET", "/api/v1/partner/programs/" + itoa(p.w.programID) + "/stats?period=1y", nil, bearer(p.ana)}), 400,
			"period must be one of: 7d, 30d, 90d, all")
		partnerErr(t, do(t, p.app, req{"GET", "/api/v1/partner/programs/" + itoa(p.w.programID) + "/stats?dateFrom=" + today, nil, bearer(p.ana)}), 400,
			"dateFrom and dateTo must be given together")
	})

	t.Run("OKCommissions", func(t *testing.T) {
		r := do(t, p.app, req{"GET", "/api/v1/partner/commissions", nil, bearer(p.ana)})
		rows := list(t, r, 200)
		if len(rows) != 1 || id(rows[0]["id"]) != commissionID || rows[0]["amount"] != 30.0 || rows[0]["status"] != "pending" ||
			rows[0]["currency"] != "USD" || id(rows[0]["program"].(map[string]any)["id"]) != p.w.programID {
			t.Fatalf("commissions %s", r.Raw)
		}
		for _, secret := range []string{"cust_secret_key", "customer.example", "txn_portal_1"} {
			if strings.Contains(string(r.Raw), secret) {
				t.Fatalf("the listing reveals %s: %s", secret, r.Raw)
			}
		}
		if rows := list(t, do(t, p.app, req{"GET", "/api/v1/partner/commissions?status=approved", nil, bearer(p.ana)}), 200); len(rows) != 0 {
			t.Fatalf("approved %v", rows)
		}
		if rows := list(t, do(t, p.app, req{"GET", "/api/v1/partner/commissions", nil, bearer(p.bo)}), 200); len(rows) != 0 {
			t.Fatalf("bo sees %v", rows)
		}
		partnerErr(t, do(t, p.app, req{"GET", "/api/v1/partner/commissions?status=won", nil, bearer(p.ana)}), 400,
			"status must be one of: pending, approved, paid, reversed, refunded, rejected")
		partnerErr(t, do(t, p.app, req{"GET", "/api/v1/partner/commissions?program_id=x", nil, bearer(p.ana)}), 400,
			"program_id must be a positive integer")
	})

	t.Run("OKBalances", func(t *testing.T) {
		balance := func(tok string) map[string]any {
			t.Helper()
			rows := list(t, do(t, p.app, req{"GET", "/api/v1/partner/balances", nil, bearer(tok)}), 200)
			if len(rows) != 1 {
				t.Fatalf("balances %v", rows)
			}
			return rows[0]
		}
		if b := balance(p.ana); b["balance"] != 0.0 || b["pending"] != 30.0 || b["currency"] != "USD" {
			t.Fatalf("before approval %v", b)
		}
		mustOK(t, do(t, p.app, req{"POST", reviewPath(p.w.programID, commissionID, "approve"), nil, bearer(p.w.ownerToken)}), 200)
		if b := balance(p.ana); b["balance"] != 30.0 || b["pending"] != 0.0 {
			t.Fatalf("after approval %v", b)
		}
		if b := balance(p.bo); b["balance"] != 0.0 || b["pending"] != 0.0 {
			t.Fatalf("bo %v", b)
		}
	})
}

func TestPartnerPortalNotifications(t *testing.T) {
	p := setupPortal(t)
	insert := func(partnerID, outbox int64, title string) int64 {
		t.Helper()
		var nid int64
		if err := p.db.QueryRow(`INSERT INTO notifications (outbox_id, partner_id, kind, title, body, data)
			VALUES ($1, $2, 'commission.refunded', $3, 'body', '{"commission_id": 1}') RETURNING id`, outbox, partnerID, title).Scan(&nid); err != nil {
			t.Fatal(err)
		}
		return nid
	}
	first := insert(p.anaID, 1_000_001, "first")
	insert(p.anaID, 1_000_002, "second")
	boNote := insert(p.bobID, 1_000_003, "bo's")

	rows := list(t, do(t, p.app, req{"GET", "/api/v1/partner/notifications", nil, bearer(p.ana)}), 200)
	if len(rows) != 2 || rows[0]["title"] != "second" || rows[0]["read_at"] != nil {
		t.Fatalf("notifications %v", rows)
	}
	if rows := list(t, do(t, p.app, req{"GET", "/api/v1/partner/notifications?limit=1", nil, bearer(p.ana)}), 200); len(rows) != 1 {
		t.Fatalf("limit 1: %v", rows)
	}
	partnerErr(t, do(t, p.app, req{"GET", "/api/v1/partner/notifications?limit=101", nil, bearer(p.ana)}), 400,
		"limit must be an integer from 1 to 100")
	partnerErr(t, do(t, p.app, req{"POST", "/api/v1/partner/notifications/" + itoa(boNote) + "/read", nil, bearer(p.ana)}), 404,
		"notification not found")

	d := mustOK(t, do(t, p.app, req{"POST", "/api/v1/partner/notifications/" + itoa(first) + "/read", nil, bearer(p.ana)}), 200)
	if d["read_at"] == nil || d["title"] != "first" {
		t.Fatalf("read %v", d)
	}
	d = mustOK(t, do(t, p.app, req{"POST", "/api/v1/partner/notifications/read-all", nil, bearer(p.ana)}), 200)
	if d["updated"] != 1.0 {
		t.Fatalf("read-all %v", d)
	}
	if n := countRows(t, p.testBundle, `SELECT count(*) FROM notifications WHERE partner_id = $1 AND read_at IS NULL`, p.bobID); n != 1 {
		t.Fatalf("bo's unread = %d", n)
	}
}

func TestPortalSettings(t *testing.T) {
	p := setupPortal(t)
	path := "/api/v1/programs/" + itoa(p.w.programID) + "/settings"
	owner := bearer(p.w.ownerToken)
	d := mustOK(t, do(t, p.app, req{"GET", path, nil, owner}), 200)
	if d["partner_links"] != false || d["minimum_payout"] != 50.0 {
		t.Fatalf("defaults %v", d)
	}
	r := do(t, p.app, req{"PATCH", path, map[string]any{"partner_links": true, "minimum_payout": json.Number("75.5")}, owner})
	if !strings.Contains(string(r.Raw), `"minimum_payout":75.50`) {
		t.Fatalf("patch %s", r.Raw)
	}
	if d := mustOK(t, r, 200); d["partner_links"] != true {
		t.Fatalf("patch %v", d)
	}
	for _, c := range []struct {
		desc string
		body map[string]any
		msg  string
	}{
		{"TooPrecise", map[string]any{"minimum_payout": json.Number("1.005")}, "minimum_payout must be a number from 0 to 1000000000000 with at most 2 decimals (the smallest unit of USD)"},
		{"Negative", map[string]any{"minimum_payout": -1}, "minimum_payout must be a number from 0 to 1000000000000 with at most 2 decimals (the smallest unit of USD)"},
		{"TooLarge", map[string]any{"minimum_payout": json.Number("1000000000000.01")}, "minimum_payout must be a number from 0 to 1000000000000 with at most 2 decimals (the smallest unit of USD)"},
		{"Text", map[string]any{"minimum_payout": "50"}, "minimum_payout must be a number from 0 to 1000000000000 with at most 2 decimals (the smallest unit of USD)"},
		{"VNDDecimals", map[string]any{"currency": "VND", "minimum_payout": json.Number("50.5")}, "minimum_payout must be a number from 0 to 1000000000000 without decimals (the smallest unit of VND)"},
		{"LinksNotBool", map[string]any{"partner_links": "yes"}, "partner_links must be a boolean"},
		{"CurrencyCannotHoldMinimum", map[string]any{"currency": "VND"}, "minimum_payout must be a number from 0 to 1000000000000 without decimals (the smallest unit of VND)"},
	} {
		t.Run("Err"+c.desc, func(t *testing.T) {
			partnerErr(t, do(t, p.app, req{"PATCH", path, c.body, owner}), 400, c.msg)
		})
	}
	d = mustOK(t, do(t, p.app, req{"GET", path, nil, owner}), 200)
	if d["minimum_payout"] != 75.5 || d["currency"] != "USD" || d["partner_links"] != true {
		t.Fatalf("a refused update changed %v", d)
	}
	// With a minimum_payout VND can hold, the currency changes.
	d = mustOK(t, do(t, p.app, req{"PATCH", path, map[string]any{"currency": "VND", "minimum_payout": 50000}, owner}), 200)
	if d["currency"] != "VND" || d["minimum_payout"] != 50000.0 {
		t.Fatalf("VND %v", d)
	}
	member := bearer(dashboardMemberToken(t, p.testBundle, p.w, "member"))
	r = do(t, p.app, req{"PATCH", path, map[string]any{"partner_links": false}, member})
	assertPlatformError(t, r, 403, "ForbiddenError", "Only a workspace owner or admin can change the program's settings", "")
}
