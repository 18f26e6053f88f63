package ingest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
)

func linksPath(programID int64) string { return "/api/v1/programs/" + itoa(programID) + "/links" }

func linkPath(programID, linkID int64) string { return linksPath(programID) + "/" + itoa(linkID) }

// mustEnroll enrols a new partner in the world's program through the
// operator API and returns its id.
func mustEnroll(t *testing.T, b *testBundle, w world, name string) int64 {
	t.Helper()
	n := itoa(worldCount.Add(1))
	return id(mustOK(t, do(t, b.app, req{"POST", "/api/operator/v1/programs/" + itoa(w.programID) + "/partners",
		map[string]any{"email": strings.ToLower(name) + n + "@partner.example", "name": name}, operator()}), 201)["id"])
}

// linkCount is how many links the program has.
func linkCount(t *testing.T, b *testBundle, programID int64) int {
	t.Helper()
	var n int
	if err := b.db.QueryRow(`SELECT count(*) FROM links WHERE program_id = $1`, programID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// assertLinkHeaders checks the headers every answer of the link routes
// carries: the request id and the partner_program bucket.
func assertLinkHeaders(t *testing.T, r response) {
	t.Helper()
	if r.Header.Get("X-Request-ID") == "" || r.Header.Get("X-RateLimit-Limit") != strconv.Itoa(limitPartnerProgram) {
		t.Fatalf("headers %v", r.Header)
	}
}

func TestBrandLinkCreate(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	other := MustWorld(t, b.app)
	ann := mustEnroll(t, b, w, "Ann")
	path := linksPath(w.programID)

	t.Run("OK owner", func(t *testing.T) {
		r := do(t, b.app, req{"POST", path, map[string]any{"partner_id": ann, "code": "ann-spring"}, bearer(w.ownerToken)})
		assertLinkHeaders(t, r)
		d := mustOK(t, r, 201)
		want := map[string]any{"program_id": float64(w.programID), "code": "ann-spring", "partner_id": float64(ann),
			"partner_name": "Ann", "status": "active", "url": "https://acme.example/?aff=ann-spring", "clicks": float64(0)}
		for k, v := range want {
			if d[k] != v {
				t.Fatalf("%s = %#v, want %#v (%s)", k, d[k], v, r.Raw)
			}
		}
		if !strings.HasPrefix(d["partner_email"].(string), "ann") {
			t.Fatalf("partner_email %v", d["partner_email"])
		}
		var active bool
		b.db.QueryRow(`SELECT active FROM links WHERE id = $1 AND program_id = $2 AND partner_id = $3`, id(d["id"]), w.programID, ann).Scan(&active)
		if !active {
			t.Fatal("the link is not stored active")
		}
	})
	t.Run("OK admin, disabled", func(t *testing.T) {
		tok := dashboardMemberToken(t, b, w, "admin")
		d := mustOK(t, do(t, b.app, req{"POST", path, map[string]any{"partner_id": ann, "code": "ann_OFF-2", "status": "disabled"}, bearer(tok)}), 201)
		if d["status"] != "disabled" {
			t.Fatalf("status %v", d["status"])
		}
		d = mustOK(t, do(t, b.app, req{"POST", path, map[string]any{"partner_id": ann, "code": "ann-null", "status": nil}, bearer(tok)}), 201)
		if d["status"] != "active" {
			t.Fatalf("null status: %v", d["status"])
		}
	})

	before := linkCount(t, b, w.programID)
	t.Run("ErrForbidden", func(t *testing.T) {
		for _, tc := range []struct {
			desc string
			tok  string
			msg  string
		}{
			{"member", dashboardMemberToken(t, b, w, "member"), msgLinksAdminOnly},
			{"owner of another workspace", other.ownerToken, "you are not a member of this program's workspace"},
		} {
			r := do(t, b.app, req{"POST", path, map[string]any{"partner_id": ann, "code": "forbidden-" + tc.desc[:5]}, bearer(tc.tok)})
			assertPlatformError(t, r, 403, "ForbiddenError", tc.msg, "")
			assertLinkHeaders(t, r)
		}
	})
	t.Run("ErrUnauthorized", func(t *testing.T) {
		r := do(t, b.app, req{"POST", path, map[string]any{"partner_id": ann, "code": "anon"}, nil})
		assertPlatformError(t, r, 401, "UnauthorizedError", "Authentication required", "")
		r = do(t, b.app, req{"POST", path, map[string]any{"partner_id": ann, "code": "key"}, bearer(w.liveKey)})
		if r.Status != 401 {
			t.Fatalf("program key: %d %s", r.Status, r.Raw)
		}
	})
	t.Run("ErrNotFound program", func(t *testing.T) {
		r := do(t, b.app, req{"POST", linksPath(other.programID + 1000), map[string]any{"partner_id": ann, "code": "nowhere"}, bearer(w.ownerToken)})
		assertPlatformError(t, r, 404, "NotFoundError", "program not found", "")
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		for _, tc := range []struct {
			desc string
			body any
			msg  string
		}{
			{"partner_id missing", map[string]any{"code": "x1"}, ledger.MsgPartnerID},
			{"partner_id a string", map[string]any{"partner_id": itoa(ann), "code": "x2"}, ledger.MsgPartnerID},
			{"partner_id zero", map[string]any{"partner_id": 0, "code": "x3"}, ledger.MsgPartnerID},
			{"partner_id a fraction", `{"partner_id": 1.5, "code": "x4"}`, ledger.MsgPartnerID},
			{"partner of another program", map[string]any{"partner_id": other.partnerID, "code": "x5"}, ledger.MsgPartnerID},
			{"no such partner", map[string]any{"partner_id": ann + 1000, "code": "x6"}, ledger.MsgPartnerID},
			{"code missing", map[string]any{"partner_id": ann}, ledger.MsgLinkCode},
			{"code empty", map[string]any{"partner_id": ann, "code": ""}, ledger.MsgLinkCode},
			{"code with a space", map[string]any{"partner_id": ann, "code": "a b"}, ledger.MsgLinkCode},
			{"code with a slash", map[string]any{"partner_id": ann, "code": "a/b"}, ledger.MsgLinkCode},
			{"code of 65 characters", map[string]any{"partner_id": ann, "code": strings.Repeat("a", 65)}, ledger.MsgLinkCode},
			{"code a number", map[string]any{"partner_id": ann, "code": 7}, ledger.MsgLinkCode},
			{"status unknown", map[string]any{"partner_id": ann, "code": "x7", "status": "paused"}, ledger.MsgLinkStatus},
			{"status a boolean", map[string]any{"partner_id": ann, "code": "x8", "status": true}, ledger.MsgLinkStatus},
			{"not JSON", "partner_id=1", "Request body must be a JSON object"},
		} {
			t.Run(tc.desc, func(t *testing.T) {
				r := do(t, b.app, req{"POST", path, tc.body, bearer(w.ownerToken)})
				assertPlatformError(t, r, 400, "BadRequestError", tc.msg, "")
			})
		}
	})
	t.Run("ErrConflict", func(t *testing.T) {
		// Taken in this program, and by another program's link.
		for _, code := range []string{"ann-spring", "pat" + itoa(other.programID)} {
			r := do(t, b.app, req{"POST", path, map[string]any{"partner_id": ann, "code": code}, bearer(w.ownerToken)})
			assertPlatformError(t, r, 409, "ConflictError", ledger.MsgLinkCodeTaken, "")
			assertLinkHeaders(t, r)
		}
	})
	if after := linkCount(t, b, w.programID); after != before {
		t.Fatalf("refused calls stored links: %d, was %d", after, before)
	}
}

func TestBrandLinkList(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app) // Pat and its link pat<programID>
	other := MustWorld(t, b.app)
	ann := mustEnroll(t, b, w, "Ann")
	create := func(partnerID int64, code, status string) int64 {
		t.Helper()
		return id(mustOK(t, do(t, b.app, req{"POST", linksPath(w.programID),
			map[string]any{"partner_id": partnerID, "code": code, "status": status}, bearer(w.ownerToken)}), 201)["id"])
	}
	ann1 := create(ann, "ann-1", "active")
	create(ann, "ann-2", "disabled")
	create(w.partnerID, "pat-2", "active")
	// The test partner's fixture link is not the brand's to see.
	b.db.MustExec(`INSERT INTO links (program_id, code, is_test) VALUES ($1, $2, true)`, w.programID, "fixture"+itoa(w.programID))

	// Clicks: 2 on Pat's first link, 1 on ann-1, 1 test click not counted.
	store := postgres.NewTrafficStore(b.db.DB)
	click := func(partnerID, linkID int64, test bool) ledger.Click {
		now := time.Now().UTC()
		cid := ledger.NewClickID(now)
		at, _ := ledger.ClickTime(cid)
		return ledger.Click{ID: cid, OccurredAt: at, ProgramID: w.programID, PartnerID: &partnerID, LinkID: &linkID, IsTest: test}
	}
	if _, err := store.WriteClicks(context.Background(), []ledger.Click{
		click(w.partnerID, w.linkID, false), click(w.partnerID, w.linkID, false), click(ann, ann1, false), click(w.partnerID, w.linkID, true),
	}); err != nil {
		t.Fatal(err)
	}
	pat := "pat" + itoa(w.programID)
	member := dashboardMemberToken(t, b, w, "member")

	list := func(t *testing.T, query string) ([]map[string]any, map[string]any) {
		t.Helper()
		r := do(t, b.app, req{"GET", linksPath(w.programID) + query, nil, bearer(member)})
		if r.Status != 200 {
			t.Fatalf("status %d: %s", r.Status, r.Raw)
		}
		assertLinkHeaders(t, r)
		var rows []map[string]any
		for _, v := range r.Body["data"].([]any) {
			rows = append(rows, v.(map[string]any))
		}
		return rows, r.Body["meta"].(map[string]any)["pagination"].(map[string]any)
	}
	codes := func(rows []map[string]any) string {
		var out []string
		for _, r := range rows {
			out = append(out, r["code"].(string))
		}
		return strings.Join(out, ",")
	}

	t.Run("OK member, every link", func(t *testing.T) {
		rows, pg := list(t, "")
		if got := codes(rows); got != "pat-2,ann-2,ann-1,"+pat {
			t.Fatalf("codes %s", got)
		}
		if pg["page"] != 1.0 || pg["pageSize"] != 10.0 || pg["pageCount"] != 1.0 || pg["total"] != 4.0 {
			t.Fatalf("pagination %v", pg)
		}
		clicks := map[string]any{}
		for _, r := range rows {
			clicks[r["code"].(string)] = r["clicks"]
		}
		if clicks[pat] != 2.0 || clicks["ann-1"] != 1.0 || clicks["ann-2"] != 0.0 || clicks["pat-2"] != 0.0 {
			t.Fatalf("clicks %v", clicks)
		}
		last := rows[3]
		if last["id"] != float64(w.linkID) || last["partner_name"] != "Pat" || last["url"] != "https://acme.example/?aff="+pat ||
			last["status"] != "active" || last["partner_id"] != float64(w.partnerID) {
			t.Fatalf("row %v", last)
		}
	})
	for _, tc := range []struct {
		desc, query, want string
		total, pages      float64
	}{
		{"page 1", "?pageSize=3", "pat-2,ann-2,ann-1", 4, 2},
		{"page 2", "?page=2&pageSize=3", pat, 4, 2},
		{"past the last page", "?page=5&pageSize=3", "", 4, 2},
		{"empty values are absent", "?page=&pageSize=&partner_id=&status=", "pat-2,ann-2,ann-1," + pat, 4, 1},
		{"one partner", "?partner_id=" + itoa(ann), "ann-2,ann-1", 2, 1},
		{"active", "?status=active", "pat-2,ann-1," + pat, 3, 1},
		{"disabled", "?status=disabled", "ann-2", 1, 1},
		{"a partner's active links", "?status=active&partner_id=" + itoa(w.partnerID), "pat-2," + pat, 2, 1},
		{"another program's partner", "?partner_id=" + itoa(other.partnerID), "", 0, 0},
	} {
		t.Run("OK "+tc.desc, func(t *testing.T) {
			rows, pg := list(t, tc.query)
			if got := codes(rows); got != tc.want || pg["total"] != tc.total || pg["pageCount"] != tc.pages {
				t.Fatalf("codes %q, pagination %v; want %q, total %v, pages %v", got, pg, tc.want, tc.total, tc.pages)
			}
		})
	}
	t.Run("ErrInvalid", func(t *testing.T) {
		for _, tc := range []struct{ query, msg string }{
			{"?page=0", ledger.MsgEventPage},
			{"?page=x", ledger.MsgEventPage},
			{"?pageSize=101", ledger.MsgEventPageSize},
			{"?pageSize=0", ledger.MsgEventPageSize},
			{"?partner_id=0", ledger.MsgLinkPartnerFilter},
			{"?partner_id=ann", ledger.MsgLinkPartnerFilter},
			{"?status=on", ledger.MsgLinkStatus},
		} {
			r := do(t, b.app, req{"GET", linksPath(w.programID) + tc.query, nil, bearer(member)})
			assertPlatformError(t, r, 400, "BadRequestError", tc.msg, "")
		}
	})
	t.Run("ErrForbidden other workspace", func(t *testing.T) {
		r := do(t, b.app, req{"GET", linksPath(w.programID), nil, bearer(other.ownerToken)})
		assertPlatformError(t, r, 403, "ForbiddenError", "you are not a member of this program's workspace", "")
		if strings.Contains(string(r.Raw), pat) {
			t.Fatalf("the refusal shows a code: %s", r.Raw)
		}
	})
	t.Run("ErrNotFound program", func(t *testing.T) {
		r := do(t, b.app, req{"GET", "/api/v1/programs/x/links", nil, bearer(member)})
		assertPlatformError(t, r, 404, "NotFoundError", "program not found", "")
	})
}

func TestBrandLinkPatch(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	other := MustWorld(t, b.app)
	path := linkPath(w.programID, w.linkID)
	stored := func() bool {
		t.Helper()
		var active bool
		if err := b.db.QueryRow(`SELECT active FROM links WHERE id = $1`, w.linkID).Scan(&active); err != nil {
			t.Fatal(err)
		}
		return active
	}

	t.Run("OK owner disables, admin re-enables", func(t *testing.T) {
		r := do(t, b.app, req{"PATCH", path, map[string]any{"status": "disabled"}, bearer(w.ownerToken)})
		assertLinkHeaders(t, r)
		if d := mustOK(t, r, 200); d["status"] != "disabled" || d["id"] != float64(w.linkID) || stored() {
			t.Fatalf("disable: %s, stored active %v", r.Raw, stored())
		}
		admin := dashboardMemberToken(t, b, w, "admin")
		if d := mustOK(t, do(t, b.app, req{"PATCH", path, map[string]any{"status": "active"}, bearer(admin)}), 200); d["status"] != "active" || !stored() {
			t.Fatalf("re-enable: %v, stored active %v", d, stored())
		}
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		r := do(t, b.app, req{"PATCH", path, map[string]any{"status": "disabled"}, bearer(dashboardMemberToken(t, b, w, "member"))})
		assertPlatformError(t, r, 403, "ForbiddenError", msgLinksAdminOnly, "")
		r = do(t, b.app, req{"PATCH", path, map[string]any{"status": "disabled"}, bearer(other.ownerToken)})
		assertPlatformError(t, r, 403, "ForbiddenError", "you are not a member of this program's workspace", "")
		if !stored() {
			t.Fatal("a refused call disabled the link")
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		for _, tc := range []struct{ desc, path, msg string }{
			{"another program's link", linkPath(w.programID, other.linkID), "link not found"},
			{"no such link", linkPath(w.programID, other.linkID+1000), "link not found"},
			{"a link id that is not a number", linksPath(w.programID) + "/abc", "link not found"},
			{"no such program", linkPath(other.programID+1000, w.linkID), "program not found"},
		} {
			r := do(t, b.app, req{"PATCH", tc.path, map[string]any{"status": "disabled"}, bearer(w.ownerToken)})
			assertPlatformError(t, r, 404, "NotFoundError", tc.msg, "")
		}
		// Another workspace's owner cannot reach this program's link
		// through its own program either.
		r := do(t, b.app, req{"PATCH", linkPath(other.programID, w.linkID), map[string]any{"status": "disabled"}, bearer(other.ownerToken)})
		assertPlatformError(t, r, 404, "NotFoundError", "link not found", "")
		if !stored() {
			t.Fatal("another program's call disabled the link")
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		for _, body := range []any{map[string]any{}, map[string]any{"status": "off"}, map[string]any{"status": false},
			map[string]any{"active": false}, "[]"} {
			r := do(t, b.app, req{"PATCH", path, body, bearer(w.ownerToken)})
			if r.Status != 400 {
				t.Fatalf("%v: %d %s", body, r.Status, r.Raw)
			}
		}
		r := do(t, b.app, req{"PATCH", path, map[string]any{"status": "paused"}, bearer(w.ownerToken)})
		assertPlatformError(t, r, 400, "BadRequestError", ledger.MsgLinkStatus, "")
		if !stored() {
			t.Fatal("a refused call changed the link")
		}
	})
}

// TestBrandLinkDisableAnswers410: the brand's PATCH turns a link off on
// every edge instance at once (the operator's cache invalidation), and
// turns it back on.
func TestBrandLinkDisableAnswers410(t *testing.T) {
	b := setupClicks(t)
	w := MustWorld(t, b.app)
	replica := newTestServer(b.db, b.clock)
	b.wire(t, replica, b.rdb)
	click := req{"POST", "/api/v1/track/click", map[string]any{"affiliate_url": "https://acme.example/?aff=pat" + itoa(w.programID)}, fromIP("203.0.113.40")}
	for _, srv := range []*Server{b.srv, replica} { // both cache the active link
		if r := do(t, srv.App(), click); r.Status != 200 {
			t.Fatalf("active link: %d %s", r.Status, r.Raw)
		}
	}
	path := linkPath(w.programID, w.linkID)
	mustOK(t, do(t, b.app, req{"PATCH", path, map[string]any{"status": "disabled"}, bearer(w.ownerToken)}), 200)
	r := do(t, b.app, click)
	if r.Status != 410 || r.Body["error"].(map[string]any)["code"] != ledger.ELinkDisabled {
		t.Fatalf("the instance that changed the link: %d %s", r.Status, r.Raw)
	}
	waitStatus := func(srv *Server, want int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for do(t, srv.App(), click).Status != want {
			if time.Now().After(deadline) {
				t.Fatalf("the replica never answered %d", want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitStatus(replica, 410)

	mustOK(t, do(t, b.app, req{"PATCH", path, map[string]any{"status": "active"}, bearer(w.ownerToken)}), 200)
	if r := do(t, b.app, click); r.Status != 200 {
		t.Fatalf("re-enabled link: %d %s", r.Status, r.Raw)
	}
	waitStatus(replica, 200)

	// A link the brand creates is clickable at once, even on an instance
	// that remembered its code as unknown.
	ann := mustEnroll(t, b.testBundle, w, "Ann")
	fresh := req{"POST", "/api/v1/track/click", map[string]any{"affiliate_url": "https://acme.example/?aff=ann-new"}, fromIP("203.0.113.41")}
	if r := do(t, replica.App(), fresh); r.Status != 400 { // the spec: "Referral link not found"
		t.Fatalf("unknown code: %d %s", r.Status, r.Raw)
	}
	mustOK(t, do(t, b.app, req{"POST", linksPath(w.programID), map[string]any{"partner_id": ann, "code": "ann-new"}, bearer(w.ownerToken)}), 201)
	deadline := time.Now().Add(10 * time.Second)
	for do(t, replica.App(), fresh).Status != 200 {
		if time.Now().After(deadline) {
			t.Fatal("the replica kept the new code unknown")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestBrandLinkRateLimit: the three link routes share one bucket of 120
// a minute per dashboard token.
func TestBrandLinkRateLimit(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	start := b.clock.Now().Truncate(time.Minute).Add(time.Second)
	b.clock.Set(start)
	for i := 1; i <= limitPartnerProgram; i++ {
		r := do(t, b.app, req{"GET", linksPath(w.programID), nil, bearer(w.ownerToken)})
		if r.Status != 200 || r.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(limitPartnerProgram-i) {
			t.Fatalf("GET %d: %d %v", i, r.Status, r.Header)
		}
	}
	for _, r := range []req{
		{"GET", linksPath(w.programID), nil, bearer(w.ownerToken)},
		{"POST", linksPath(w.programID), map[string]any{"partner_id": w.partnerID, "code": "over"}, bearer(w.ownerToken)},
		{"PATCH", linkPath(w.programID, w.linkID), map[string]any{"status": "disabled"}, bearer(w.ownerToken)},
	} {
		if rep := do(t, b.app, r); rep.Status != 429 || rep.Body["error"].(map[string]any)["code"] != "rate_limited" {
			t.Fatalf("%s over the limit: %d %s", r.method, rep.Status, rep.Raw)
		}
	}
	if n := linkCount(t, b, w.programID); n != 1 {
		t.Fatalf("a limited call stored a link: %d links", n)
	}
	// Another token counts in its own bucket; the next minute starts afresh.
	if r := do(t, b.app, req{"GET", linksPath(w.programID), nil, bearer(dashboardMemberToken(t, b, w, "member"))}); r.Status != 200 {
		t.Fatalf("another token: %d", r.Status)
	}
	b.clock.Set(start.Add(time.Minute))
	if r := do(t, b.app, req{"GET", linksPath(w.programID), nil, bearer(w.ownerToken)}); r.Status != 200 {
		t.Fatalf("next minute: %d", r.Status)
	}
}
