package ingest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
)

// leadEdge is an edge whose lead service resolves clicks still in the
// queue from a function-field fake of ledger.PendingClicks.
type leadEdge struct {
	*testBundle
	w       world
	mu      sync.Mutex
	pending map[string]*ledger.Click
	ips     atomic.Int64
}

type fakePendingClicks func(ctx context.Context, id string) (*ledger.Click, error)

func (f fakePendingClicks) PendingClick(ctx context.Context, id string) (*ledger.Click, error) {
	return f(ctx, id)
}

func setupLeadEdge(t *testing.T) *leadEdge {
	t.Helper()
	e := &leadEdge{testBundle: setup(t), pending: map[string]*ledger.Click{}}
	e.srv.svc.Leads = postgres.NewLeadService(e.db.DB, fakePendingClicks(func(_ context.Context, id string) (*ledger.Click, error) {
		e.mu.Lock()
		defer e.mu.Unlock()
		if c, ok := e.pending[id]; ok {
			return c, nil
		}
		return nil, ledger.NewError(ledger.ENotFound, "click not found")
	}))
	e.w = MustWorld(t, e.app)
	return e
}

// click stores a click of the partner in Postgres, as the clicks worker
// does.
func (e *leadEdge) click(t *testing.T, programID, partnerID int64) string {
	t.Helper()
	id := ledger.NewClickID(e.clock.Now())
	at, _ := ledger.ClickTime(id)
	e.db.MustExec(`INSERT INTO clicks (click_id, occurred_at, program_id, partner_id) VALUES ($1, $2, $3, $4)`,
		id, at, programID, partnerID)
	return id
}

// queuedClick is a click the edge acknowledged whose batch has not reached
// Postgres.
func (e *leadEdge) queuedClick(programID, partnerID int64) string {
	id := ledger.NewClickID(e.clock.Now())
	at, _ := ledger.ClickTime(id)
	e.mu.Lock()
	e.pending[id] = &ledger.Click{ID: id, OccurredAt: at, ProgramID: programID, PartnerID: &partnerID}
	e.mu.Unlock()
	return id
}

// lead posts a lead from a client IP of its own (the route counts 30 a
// minute per IP).
func (e *leadEdge) lead(t *testing.T, body any, header map[string]string) response {
	t.Helper()
	n := e.ips.Add(1)
	h := map[string]string{"X-Forwarded-For": fmt.Sprintf("198.51.%d.%d", n/250%250, n%250+1)}
	for k, v := range header {
		h[k] = v
	}
	return do(t, e.app, req{"POST", "/api/v1/track/lead", body, h})
}

func (e *leadEdge) customer(t *testing.T, programID int64, query string) response {
	t.Helper()
	return do(t, e.app, req{"GET", "/api/operator/v1/customers?program_id=" + itoa(programID) + "&" + query, nil, operator()})
}

func (e *leadEdge) counts(t *testing.T) (leads, customers, logs int) {
	t.Helper()
	e.db.QueryRow(`SELECT (SELECT count(*) FROM leads), (SELECT count(*) FROM customers), (SELECT count(*) FROM tracking_logs)`).
		Scan(&leads, &customers, &logs)
	return
}

// assertLeadSuccess checks the success body: fields at the top level and
// repeated in data, provisional only on a provisional lead.
func assertLeadSuccess(t *testing.T, r response, provisional bool) map[string]any {
	t.Helper()
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Raw)
	}
	data, _ := r.Body["data"].(map[string]any)
	if data == nil || r.Body["success"] != true || r.Body["message"] != msgLeadTracked {
		t.Fatalf("body = %s", r.Raw)
	}
	for k, v := range data {
		if fmt.Sprint(r.Body[k]) != fmt.Sprint(v) {
			t.Fatalf("data.%s = %v, top level %v", k, v, r.Body[k])
		}
	}
	if len(r.Body) != len(data)+1 {
		t.Fatalf("top level and data differ: %s", r.Raw)
	}
	p, has := data["provisional"]
	if provisional != has || (has && p != true) {
		t.Fatalf("provisional = %v (present %v), want %v: %s", p, has, provisional, r.Raw)
	}
	return data
}

func keys(m map[string]any) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func TestLeadServerAndBrowserMode(t *testing.T) {
	e := setupLeadEdge(t)
	w := e.w

	click := e.click(t, w.programID, w.partnerID)
	// The browser SDK's body: nulls for what it lacks, and its extras.
	browser := e.lead(t, map[string]any{"click_id": click, "customer_key": nil, "email": nil, "program_id": w.programID,
		"session_id": "sess_abc_1", "page_url": "https://acme.example/welcome", "click_ids": []string{click},
		"has_attribution": true, "debug_mode": false, "event_name": "signup"}, nil)
	bd := assertLeadSuccess(t, browser, true)
	if bd["click_id"] != click || id(bd["program_id"]) != w.programID {
		t.Fatalf("browser lead = %s", browser.Raw)
	}
	c := mustOK(t, e.customer(t, w.programID, "click_id="+click), 200)
	if c["status"] != "click" || c["customer_key"] != nil || c["provisional"] != true || id(c["partner_id"]) != w.partnerID {
		t.Fatalf("customer after a provisional lead = %v", c)
	}

	// Server mode with the live key settles it: same lead, same shape
	// without provisional, and only now the key is saved.
	server := e.lead(t, map[string]any{"click_id": click, "customer_key": "user_123", "email": "Ann@Example.com"}, bearer(w.liveKey))
	sd := assertLeadSuccess(t, server, false)
	if id(sd["lead_id"]) != id(bd["lead_id"]) {
		t.Fatalf("server lead %v did not settle the provisional lead %v", sd["lead_id"], bd["lead_id"])
	}
	delete(bd, "provisional")
	if keys(bd) != keys(sd) {
		t.Fatalf("bodies differ beyond provisional: browser %s, server %s", keys(bd), keys(sd))
	}
	c = mustOK(t, e.customer(t, w.programID, "customer_key=user_123"), 200)
	if c["status"] != "lead" || c["click_id"] != click || c["provisional"] != false || c["email"] != "ann@example.com" {
		t.Fatalf("customer after settlement = %v", c)
	}

	t.Run("empty or malformed header is browser mode", func(t *testing.T) {
		for _, h := range []map[string]string{
			{"Authorization": "Bearer "},
			{"Authorization": "Bearer    "},
			{"Authorization": "Bearer"},
			{"Authorization": "Basic dXNlcjpwYXNz"},
		} {
			click := e.click(t, w.programID, w.partnerID)
			assertLeadSuccess(t, e.lead(t, map[string]any{"click_id": click}, h), true)
			// Browser mode with only a key is refused, as without a header.
			r := e.lead(t, map[string]any{"customer_key": "user_x"}, h)
			assertPlatformError(t, r, 400, "BadRequestError", ledger.MsgLeadClickIDRequired, "")
		}
	})

	t.Run("ErrUnknownToken", func(t *testing.T) {
		click := e.click(t, w.programID, w.partnerID)
		before, _, _ := e.counts(t)
		for _, tok := range []string{"aff_nope", "aff_test_nope", "0123456789abcdef"} {
			r := e.lead(t, map[string]any{"click_id": click}, bearer(tok))
			assertPlatformError(t, r, 401, "UnauthorizedError", "Invalid API token", "")
		}
		if after, _, _ := e.counts(t); after != before {
			t.Fatal("a refused lead was stored")
		}
	})

	t.Run("a server lead without a browser lead", func(t *testing.T) {
		click := e.click(t, w.programID, w.partnerID)
		assertLeadSuccess(t, e.lead(t, map[string]any{"click_id": click, "customer_key": "user_456"}, bearer(w.liveKey)), false)
		c := mustOK(t, e.customer(t, w.programID, "click_id="+click), 200)
		if c["status"] != "lead" || c["customer_key"] != "user_456" {
			t.Fatalf("customer = %v", c)
		}
	})
}

func TestLeadMessages(t *testing.T) {
	e := setupLeadEdge(t)
	w := e.w
	other := MustWorld(t, e.app)
	otherClick := e.click(t, other.programID, other.partnerID)
	leadClick := e.click(t, w.programID, w.partnerID)
	assertLeadSuccess(t, e.lead(t, map[string]any{"click_id": leadClick, "customer_key": "done"}, bearer(w.liveKey)), false)
	fresh := e.click(t, w.programID, w.partnerID)
	key := bearer(w.liveKey)

	for _, tc := range []struct {
		desc   string
		body   any
		header map[string]string
		status int
		msg    string
	}{
		{"neither id, server", map[string]any{"email": "a@b.example"}, key, 400, ledger.MsgLeadIDRequired},
		{"neither id, browser", map[string]any{}, nil, 400, ledger.MsgLeadIDRequired},
		{"empty body", "", nil, 400, ledger.MsgLeadIDRequired},
		{"nulls", map[string]any{"click_id": nil, "customer_key": nil}, nil, 400, ledger.MsgLeadIDRequired},
		{"browser with only customer_key", map[string]any{"customer_key": "user_1"}, nil, 400, ledger.MsgLeadClickIDRequired},
		{"unknown click", map[string]any{"click_id": ledger.NewClickID(time.Now())}, key, 400, ledger.MsgLeadCustomerNotFound},
		{"unknown click, browser", map[string]any{"click_id": "not-a-click-of-ours"}, nil, 400, ledger.MsgLeadCustomerNotFound},
		{"first server lead with only customer_key", map[string]any{"customer_key": "never-settled"}, key, 400, ledger.MsgLeadCustomerNotFound},
		{"customer of another program", map[string]any{"click_id": otherClick, "customer_key": "x"}, key, 400, ledger.MsgLeadOtherProgram},
		{"browser names another program", map[string]any{"click_id": otherClick, "program_id": w.programID}, nil, 400, ledger.MsgLeadOtherProgram},
		{"already a lead, by click", map[string]any{"click_id": leadClick}, key, 400, ledger.MsgLeadStatus("lead")},
		{"already a lead, by key", map[string]any{"customer_key": "done"}, key, 400, ledger.MsgLeadStatus("lead")},
		{"already a lead, browser", map[string]any{"click_id": leadClick}, nil, 400, ledger.MsgLeadStatus("lead")},
		{"key of another customer", map[string]any{"click_id": fresh, "customer_key": "done"}, key, 400, ledger.MsgLeadStatus("lead")},
		{"not JSON", "click_id=abc", nil, 400, msgNotJSON},
		{"array", `[{"click_id": "abc"}]`, key, 400, msgNotJSON},
		{"click_id a number", map[string]any{"click_id": 12345}, nil, 400, ledger.MsgLeadClickID},
		{"click_id with spaces", map[string]any{"click_id": "abc def"}, nil, 400, ledger.MsgLeadClickID},
		{"customer_key too long", map[string]any{"customer_key": strings.Repeat("k", 256)}, key, 400, ledger.MsgLeadCustomerKey},
		{"customer_key an object", map[string]any{"click_id": fresh, "customer_key": map[string]any{}}, key, 400, ledger.MsgLeadCustomerKey},
		{"email", map[string]any{"click_id": fresh, "email": "not an email"}, nil, 400, ledger.MsgEmail},
		{"email a number", map[string]any{"click_id": fresh, "email": 5}, nil, 400, ledger.MsgEmail},
		{"session_id too long", map[string]any{"click_id": fresh, "session_id": strings.Repeat("s", 256)}, nil, 400, ledger.MsgLeadSessionID},
		{"page_url too long", map[string]any{"click_id": fresh, "page_url": strings.Repeat("u", 2049)}, nil, 400, ledger.MsgLeadPageURL},
		{"event_name a list", map[string]any{"click_id": fresh, "event_name": []string{"a"}}, nil, 400, ledger.MsgLeadEventName},
		{"click_ids a string", map[string]any{"click_id": fresh, "click_ids": fresh}, nil, 400, ledger.MsgLeadClickIDs},
		{"program_id a boolean", map[string]any{"click_id": fresh, "program_id": true}, nil, 400, ledger.MsgLeadProgramID},
		{"has_attribution a string", map[string]any{"click_id": fresh, "has_attribution": "yes"}, nil, 400, ledger.MsgLeadHasAttribution},
		{"debug_mode a number", map[string]any{"click_id": fresh, "debug_mode": 1}, nil, 400, ledger.MsgLeadDebugMode},
		{"additional_data a string", map[string]any{"click_id": fresh, "additional_data": "x"}, nil, 400, ledger.MsgLeadAdditionalData},
		{"test_mode a string", map[string]any{"click_id": fresh, "additional_data": map[string]any{"test_mode": "true"}}, key, 400, ledger.MsgLeadTestMode},
		{"test mode, key, another program", map[string]any{"customer_key": "t", "additional_data": map[string]any{"test_mode": true, "program_id": other.programID}}, key, 403, ledger.MsgProgramIDMismatch},
		{"test mode, key, program id as text", map[string]any{"customer_key": "t", "additional_data": map[string]any{"test_mode": true, "program_id": itoa(other.programID)}}, key, 403, ledger.MsgProgramIDMismatch},
		{"test mode, key, placeholder program id", map[string]any{"customer_key": "t", "additional_data": map[string]any{"test_mode": true, "program_id": "YOUR_PROGRAM_ID"}}, key, 403, ledger.MsgProgramIDMismatch},
		{"live lead, key, another program", map[string]any{"click_id": fresh, "additional_data": map[string]any{"program_id": other.programID}}, key, 403, ledger.MsgProgramIDMismatch},
		{"test mode, browser, unknown program", map[string]any{"click_id": "test_lead_001", "additional_data": map[string]any{"test_mode": true, "program_id": 999999}}, nil, 400, ledger.MsgUnknownProgramID},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			leads, customers, logs := e.counts(t)
			r := e.lead(t, tc.body, tc.header)
			assertPlatformError(t, r, tc.status, statusNames[tc.status], tc.msg, "")
			if l, c, g := e.counts(t); l != leads || c != customers || g != logs {
				t.Fatalf("a refused lead stored something: leads %d→%d, customers %d→%d, logs %d→%d", leads, l, customers, c, logs, g)
			}
		})
	}
	// Nothing above moved the fresh customer: it still takes its lead.
	assertLeadSuccess(t, e.lead(t, map[string]any{"click_id": fresh, "customer_key": "fresh"}, key), false)
}

func TestLeadRightAfterItsClick(t *testing.T) {
	e := setupLeadEdge(t)
	w := e.w
	// The visitor signs up a moment after landing: the click batch has not
	// reached Postgres, yet the lead is attributed.
	for _, tc := range []struct {
		desc        string
		header      map[string]string
		provisional bool
	}{
		{"browser", nil, true},
		{"server", bearer(w.liveKey), false},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			click := e.queuedClick(w.programID, w.partnerID)
			d := assertLeadSuccess(t, e.lead(t, map[string]any{"click_id": click, "customer_key": "queued-" + tc.desc}, tc.header), tc.provisional)
			if d["click_id"] != click {
				t.Fatalf("lead = %v", d)
			}
			var rows int
			e.db.QueryRow(`SELECT count(*) FROM clicks WHERE click_id = $1`, click).Scan(&rows)
			c := mustOK(t, e.customer(t, w.programID, "click_id="+click), 200)
			if rows != 1 || id(c["partner_id"]) != w.partnerID {
				t.Fatalf("%d click rows, customer %v", rows, c)
			}
			// The clicks worker's later insert of the same click does nothing.
			at, _ := ledger.ClickTime(click)
			e.db.MustExec(`INSERT INTO clicks (click_id, occurred_at, program_id, partner_id) VALUES ($1, $2, $3, $4)
				ON CONFLICT (click_id, occurred_at) DO NOTHING`, click, at, w.programID, w.partnerID)
			if e.db.QueryRow(`SELECT count(*) FROM clicks WHERE click_id = $1`, click).Scan(&rows); rows != 1 {
				t.Fatalf("%d click rows", rows)
			}
		})
	}
}

func TestLeadBrowserAllowedProgram(t *testing.T) {
	e := setupLeadEdge(t)
	d := mustOK(t, do(t, e.app, req{"POST", "/api/operator/v1/programs", map[string]any{
		"workspace_id": e.w.workspaceID, "name": "Open", "domain": "open.example", "commission_type": "fixed",
		"commission_rate": 5, "lead_auth": "browser_allowed"}, operator()}), 201)
	programID := id(d["id"])
	d = mustOK(t, do(t, e.app, req{"POST", "/api/operator/v1/programs/" + itoa(programID) + "/partners",
		map[string]any{"email": "open@partner.example", "name": "Open"}, operator()}), 201)
	partnerID := id(d["id"])

	click := e.click(t, programID, partnerID)
	assertLeadSuccess(t, e.lead(t, map[string]any{"click_id": click, "customer_key": "user_open", "email": "open@partner.example"}, nil), false)
	c := mustOK(t, e.customer(t, programID, "customer_key=user_open"), 200)
	if c["status"] != "lead" || c["provisional"] != false {
		t.Fatalf("customer = %v", c)
	}
	// Same email as the partner's: flagged, not refused.
	var selfRef bool
	var settledBy string
	e.db.QueryRow(`SELECT self_referral, settled_by FROM leads WHERE click_id = $1`, click).Scan(&selfRef, &settledBy)
	if !selfRef || settledBy != ledger.SettledByBrowserAllowed {
		t.Fatalf("self_referral %v, settled_by %q", selfRef, settledBy)
	}
}

func TestLeadTestMode(t *testing.T) {
	e := setupLeadEdge(t)
	w := e.w
	d := mustOK(t, do(t, e.app, req{"POST", "/api/v1/programs/" + itoa(w.programID) + "/api-key", map[string]any{"mode": "test"}, bearer(w.ownerToken)}), 200)
	testKey := d["api_key"].(string)
	click := e.click(t, w.programID, w.partnerID)

	for _, tc := range []struct {
		desc   string
		body   map[string]any
		header map[string]string
	}{
		{"test_mode with the live key", map[string]any{"click_id": "test_lead_001", "customer_key": "test_customer",
			"additional_data": map[string]any{"test_mode": true, "program_id": itoa(w.programID)}}, bearer(w.liveKey)},
		{"the test key", map[string]any{"click_id": click, "customer_key": "user_t"}, bearer(testKey)},
		{"test_mode without a key", map[string]any{"click_id": "test_lead_002",
			"additional_data": map[string]any{"test_mode": true, "program_id": w.programID}}, nil},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			r := e.lead(t, tc.body, tc.header)
			if r.Status != 200 {
				t.Fatalf("status %d: %s", r.Status, r.Raw)
			}
			data, _ := r.Body["data"].(map[string]any)
			if r.Body["success"] != true || r.Body["message"] != msgLeadTestMode || data == nil ||
				data["test_mode"] != true || id(data["programId"]) != w.programID || data["eventId"] == nil || r.Body["test_mode"] != true {
				t.Fatalf("body = %s", r.Raw)
			}
			var isTest bool
			var customerID *int64
			e.db.QueryRow(`SELECT is_test, customer_id FROM leads WHERE id = $1`, id(data["eventId"])).Scan(&isTest, &customerID)
			if !isTest || customerID != nil {
				t.Fatalf("stored lead: is_test %v, customer %v", isTest, customerID)
			}
		})
	}
	// Test calls moved no customer: the real click still takes its lead.
	if r := e.customer(t, w.programID, "click_id="+click); r.Status != 404 {
		t.Fatalf("a test call created a customer: %s", r.Raw)
	}
	assertLeadSuccess(t, e.lead(t, map[string]any{"click_id": click, "customer_key": "user_t"}, bearer(w.liveKey)), false)
}

func TestLeadRateLimit(t *testing.T) {
	e := setupLeadEdge(t)
	e.clock.Set(e.clock.Now().Truncate(time.Minute))
	ip := map[string]string{"X-Forwarded-For": "203.0.113.50"}
	for i := 0; i < limitLead; i++ {
		r := e.lead(t, map[string]any{}, ip)
		if r.Status != 400 || r.Header.Get("X-RateLimit-Limit") != "30" {
			t.Fatalf("lead %d: %d %v", i, r.Status, r.Header)
		}
	}
	click := e.click(t, e.w.programID, e.w.partnerID)
	r := e.lead(t, map[string]any{"click_id": click}, ip)
	if r.Status != 429 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("31st lead: %d %s", r.Status, r.Raw)
	}
	if errObj, _ := r.Body["error"].(map[string]any); errObj["code"] != ledger.ERateLimited {
		t.Fatalf("body = %s", r.Raw)
	}
	if leads, _, _ := e.counts(t); leads != 0 {
		t.Fatal("a rate-limited lead was stored")
	}
	// Another client is counted on its own.
	assertLeadSuccess(t, e.lead(t, map[string]any{"click_id": click}, nil), true)
}

func TestLeadCORS(t *testing.T) {
	e := setupLeadEdge(t)
	pre := do(t, e.app, req{"OPTIONS", "/api/v1/track/lead", nil, map[string]string{
		"Origin": "https://acme.example", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}})
	if pre.Status != 204 || pre.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("preflight: %d %v", pre.Status, pre.Header)
	}
	click := e.click(t, e.w.programID, e.w.partnerID)
	r := e.lead(t, map[string]any{"click_id": click}, map[string]string{"Origin": "https://acme.example"})
	if r.Status != 200 || r.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("browser lead: %d %v", r.Status, r.Header)
	}
}

func TestOperatorFindCustomer(t *testing.T) {
	e := setupLeadEdge(t)
	w := e.w
	for _, tc := range []struct {
		desc   string
		path   string
		header map[string]string
		status int
		msg    string
	}{
		{"ErrNoProgram", "/api/operator/v1/customers?click_id=abc", operator(), 400, msgCustomerProgramID},
		{"ErrBadProgram", "/api/operator/v1/customers?program_id=x&click_id=abc", operator(), 400, msgCustomerProgramID},
		{"ErrNoLookup", "/api/operator/v1/customers?program_id=" + itoa(w.programID), operator(), 400, ledger.MsgCustomerLookup},
		{"ErrNotFound", "/api/operator/v1/customers?program_id=" + itoa(w.programID) + "&customer_key=nobody", operator(), 404, "customer not found"},
		{"ErrNoToken", "/api/operator/v1/customers?program_id=" + itoa(w.programID) + "&customer_key=nobody", nil, 401, "Invalid or missing operator token"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			assertPlatformError(t, do(t, e.app, req{"GET", tc.path, nil, tc.header}), tc.status, statusNames[tc.status], tc.msg, "")
		})
	}
}

// failingLeads is a function-field fake of ledger.LeadService whose
// tracking fails unexpectedly.
type failingLeads struct{ ledger.LeadService }

func (failingLeads) TrackLead(context.Context, ledger.LeadRequest) (*ledger.LeadResult, error) {
	return nil, errors.New("connection reset")
}

func TestLeadInternalError(t *testing.T) {
	b := setup(t)
	b.srv.svc.Leads = failingLeads{}
	r := do(t, b.app, req{"POST", "/api/v1/track/lead", map[string]any{"click_id": ledger.NewClickID(time.Now())}, nil})
	assertPlatformError(t, r, 500, "InternalServerError", "Lead tracking failed", "")
	if strings.Contains(string(r.Raw), "connection reset") {
		t.Fatalf("the cause leaked to the caller: %s", r.Raw)
	}
}
