package ingest

import (
	"net/url"
	"sort"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
)

// The rows the listing reads are written by the click, lead and sale
// endpoints; these tests insert them with SQL.

// insertListedClick inserts a click at (about) at and returns its id; the click id
// is a ULID whose time is occurred_at, as the click pipeline writes it.
func insertListedClick(t *testing.T, db *pgtest.DB, programID int64, at time.Time, isTest bool) (string, time.Time) {
	t.Helper()
	cid := ledger.NewClickID(at)
	occurred, _ := ledger.ClickTime(cid)
	_, err := db.Exec(`
		INSERT INTO clicks (click_id, occurred_at, program_id, session_id, page_url, referrer_url,
			geo_country, geo_region, geo_city, device_type, device_os, browser_name, converted, is_test, created_at)
		VALUES ($1, $2, $3, 'sess_1', 'https://acme.example/?aff=pat', 'https://blog.example/post',
			'DE', 'BE', 'Berlin', 'desktop', 'macOS', 'Firefox', true, $4, $2::timestamptz + interval '2 seconds')`,
		cid, occurred, programID, isTest)
	if err != nil {
		t.Fatal(err)
	}
	return cid, occurred
}

// insertListedLead inserts a lead and returns its id.
func insertListedLead(t *testing.T, db *pgtest.DB, programID int64, at time.Time, isTest bool) int64 {
	t.Helper()
	var leadID int64
	err := db.QueryRow(`
		INSERT INTO leads (program_id, click_id, customer_key, session_id, page_url, mode, converted, is_test, occurred_at, created_at)
		VALUES ($1, 'click_for_lead', 'cust_42', 'sess_2', 'https://acme.example/signup', 'server', false, $2, $3, $3)
		RETURNING id`, programID, isTest, at).Scan(&leadID)
	if err != nil {
		t.Fatal(err)
	}
	return leadID
}

// insertListedSale inserts a sale whose transaction id is txn_<its id> and
// returns its id.
func insertListedSale(t *testing.T, db *pgtest.DB, programID int64, at time.Time, isTest bool) int64 {
	t.Helper()
	var saleID int64
	err := db.QueryRow(`
		WITH next AS (SELECT nextval('sales_id_seq') AS id)
		INSERT INTO sales (id, program_id, processor_event_id, amount_cents, currency, sale_type, payment_status,
			is_recurring, is_test, source, click_id, occurred_at, created_at)
		SELECT id, $1, 'txn_' || id, 4999, 'EUR', 'subscription', 'paid', true, $2, 'api', 'click_for_sale',
			$3, $3::timestamptz + interval '1 minute'
		FROM next
		RETURNING id`, programID, isTest, at).Scan(&saleID)
	if err != nil {
		t.Fatal(err)
	}
	return saleID
}

// eventListing is a decoded listing response.
type eventListing struct {
	r          response
	events     []map[string]any
	pagination map[string]any
}

func listEvents(t *testing.T, b *testBundle, token string, programID int64, query url.Values) eventListing {
	t.Helper()
	path := "/api/tracking/events/" + itoa(programID)
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	r := do(t, b.app, req{"GET", path, nil, bearer(token)})
	if r.Status != 200 {
		t.Fatalf("GET %s: %d %s", path, r.Status, r.Raw)
	}
	l := eventListing{r: r}
	data, ok := r.Body["data"].([]any)
	if !ok {
		t.Fatalf("data is not an array: %s", r.Raw)
	}
	for _, e := range data {
		l.events = append(l.events, e.(map[string]any))
	}
	l.pagination = r.Body["meta"].(map[string]any)["pagination"].(map[string]any)
	return l
}

func (l eventListing) wantPagination(t *testing.T, page, pageSize, pageCount, total int) {
	t.Helper()
	want := map[string]any{"page": float64(page), "pageSize": float64(pageSize), "pageCount": float64(pageCount), "total": float64(total)}
	if len(l.pagination) != 4 {
		t.Fatalf("pagination = %v", l.pagination)
	}
	for k, v := range want {
		if l.pagination[k] != v {
			t.Fatalf("pagination = %v, want %v", l.pagination, want)
		}
	}
}

// kinds returns "type@timestamp" of each event.
func (l eventListing) kinds() []string {
	out := make([]string, len(l.events))
	for i, e := range l.events {
		out[i] = e["event_type"].(string) + "@" + e["timestamp"].(string)
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestListTrackingEventsShapes(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	base := b.clock.Now().UTC().Truncate(time.Millisecond).Add(-24 * time.Hour)
	cid, clickAt := insertListedClick(t, b.db, w.programID, base.Add(-3*time.Minute), false)
	leadID := insertListedLead(t, b.db, w.programID, base.Add(-2*time.Minute), false)
	saleID := insertListedSale(t, b.db, w.programID, base.Add(-time.Minute), false)

	l := listEvents(t, b, w.ownerToken, w.programID, nil)
	l.wantPagination(t, 1, 10, 1, 3)
	if len(l.events) != 3 {
		t.Fatalf("events = %v", l.events)
	}
	conv, lead, click := l.events[0], l.events[1], l.events[2]

	for _, tc := range []struct {
		desc  string
		event map[string]any
		want  map[string]any
	}{
		{"conversion", conv, map[string]any{
			"id": float64(saleID), "event_type": "conversion", "timestamp": formatTime(base.Add(-time.Minute)),
			"click_id": "click_for_sale", "amount_cents": float64(4999), "currency": "EUR", "sale_type": "subscription",
			"payment_status": "paid", "processor_event_id": "txn_" + itoa(saleID), "is_recurring": true,
			"createdAt": formatTime(base),
		}},
		{"lead", lead, map[string]any{
			"id": float64(leadID), "event_type": "lead", "timestamp": formatTime(base.Add(-2 * time.Minute)),
			"click_id": "click_for_lead", "session_id": "sess_2", "page_url": "https://acme.example/signup",
			"customer_key": "cust_42", "converted": false, "createdAt": formatTime(base.Add(-2 * time.Minute)),
		}},
		{"click", click, map[string]any{
			"id": float64(ledger.ClickEventID(cid)), "event_type": "click", "timestamp": formatTime(clickAt),
			"click_id": cid, "session_id": "sess_1", "page_url": "https://acme.example/?aff=pat",
			"referrer_url": "https://blog.example/post", "geo_country": "DE", "geo_region": "BE", "geo_city": "Berlin",
			"device_type": "desktop", "device_os": "macOS", "browser_name": "Firefox", "converted": true,
			"createdAt": formatTime(clickAt.Add(2 * time.Second)),
		}},
	} {
		t.Run("OK "+tc.desc, func(t *testing.T) {
			if got, want := sortedKeys(tc.event), sortedKeys(tc.want); len(got) != len(want) {
				t.Fatalf("fields = %v, want exactly %v", got, want)
			}
			for k, v := range tc.want {
				if tc.event[k] != v {
					t.Fatalf("%s = %#v, want %#v (event %v)", k, tc.event[k], v, tc.event)
				}
			}
		})
	}

	t.Run("OK missing values are null", func(t *testing.T) {
		if _, err := b.db.Exec(`UPDATE leads SET click_id = NULL, session_id = NULL WHERE id = $1`, leadID); err != nil {
			t.Fatal(err)
		}
		l := listEvents(t, b, w.ownerToken, w.programID, url.Values{"eventType": {"lead"}})
		e := l.events[0]
		if v, ok := e["click_id"]; !ok || v != nil {
			t.Fatalf("click_id = %v (present %v)", v, ok)
		}
		if v, ok := e["session_id"]; !ok || v != nil {
			t.Fatalf("session_id = %v (present %v)", v, ok)
		}
	})
}

func TestListTrackingEvents(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	other := MustWorld(t, b.app)
	base := b.clock.Now().UTC().Truncate(time.Second).Add(-48 * time.Hour)
	at := func(minutes int) time.Time { return base.Add(-time.Duration(minutes) * time.Minute) }

	// Ten clicks (minutes 0, 3, …, 27 before base), ten leads (1, 4, …)
	// and two conversions (2, 5); test events and another program's
	// events in between, newer than all of them.
	for i := 0; i < 10; i++ {
		insertListedClick(t, b.db, w.programID, at(3*i), false)
		insertListedLead(t, b.db, w.programID, at(3*i+1), false)
	}
	for i := 0; i < 2; i++ {
		insertListedSale(t, b.db, w.programID, at(3*i+2), false)
	}
	insertListedClick(t, b.db, w.programID, base.Add(time.Minute), true)
	insertListedLead(t, b.db, w.programID, base.Add(time.Minute), true)
	insertListedSale(t, b.db, w.programID, base.Add(time.Minute), true)
	insertListedClick(t, b.db, other.programID, base.Add(time.Minute), false)
	insertListedLead(t, b.db, other.programID, base.Add(time.Minute), false)
	insertListedSale(t, b.db, other.programID, base.Add(time.Minute), false)

	ts := func(minutes int) string { return formatTime(at(minutes)) }

	t.Run("OK newest first across types, test and other programs excluded", func(t *testing.T) {
		l := listEvents(t, b, w.ownerToken, w.programID, nil)
		// pageSize 10: each type capped at 30, so every event is in the set.
		l.wantPagination(t, 1, 10, 3, 22)
		want := []string{"click@" + ts(0), "lead@" + ts(1), "conversion@" + ts(2), "click@" + ts(3), "lead@" + ts(4),
			"conversion@" + ts(5), "click@" + ts(6), "lead@" + ts(7), "click@" + ts(9), "lead@" + ts(10)}
		if got := l.kinds(); len(got) != len(want) {
			t.Fatalf("order = %v\nwant    %v", got, want)
		}
		for i, k := range l.kinds() {
			if k != want[i] {
				t.Fatalf("event %d = %s, want %s", i, k, want[i])
			}
		}
	})
	t.Run("OK cap per type before the merge, total is the merged set", func(t *testing.T) {
		// pageSize 2: at most 6 rows per type; 6 clicks + 6 leads + 2
		// conversions = 14, although 22 events exist.
		l := listEvents(t, b, w.ownerToken, w.programID, url.Values{"pageSize": {"2"}})
		l.wantPagination(t, 1, 2, 7, 14)
		last := listEvents(t, b, w.ownerToken, w.programID, url.Values{"pageSize": {"2"}, "page": {"7"}})
		last.wantPagination(t, 7, 2, 7, 14)
		// The merged set ends with the sixth click (minute 15) and the
		// sixth lead (minute 16): older rows were cut by the cap.
		if got := last.kinds(); len(got) != 2 || got[0] != "click@"+ts(15) || got[1] != "lead@"+ts(16) {
			t.Fatalf("last page = %v", got)
		}
	})
	t.Run("OK pages past the total are empty", func(t *testing.T) {
		l := listEvents(t, b, w.ownerToken, w.programID, url.Values{"pageSize": {"2"}, "page": {"8"}})
		l.wantPagination(t, 8, 2, 7, 14)
		if len(l.events) != 0 || string(l.r.Raw[:10]) != `{"data":[]` {
			t.Fatalf("page 8 = %s", l.r.Raw)
		}
	})
	t.Run("OK eventType with the cap of one type", func(t *testing.T) {
		l := listEvents(t, b, w.ownerToken, w.programID, url.Values{"pageSize": {"3"}, "eventType": {"click"}})
		l.wantPagination(t, 1, 3, 3, 9)
		for _, e := range l.events {
			if e["event_type"] != "click" {
				t.Fatalf("eventType=click returned %v", e)
			}
		}
		l = listEvents(t, b, w.ownerToken, w.programID, url.Values{"eventType": {"conversion"}})
		l.wantPagination(t, 1, 10, 1, 2)
		if got := l.kinds(); got[0] != "conversion@"+ts(2) || got[1] != "conversion@"+ts(5) {
			t.Fatalf("conversions = %v", got)
		}
	})
	t.Run("OK dateFrom and dateTo are inclusive", func(t *testing.T) {
		// Exactly at the bounds: the lead at minute 4 and the click at
		// minute 9 are in; the conversion at 2 and the lead at 10 are out.
		l := listEvents(t, b, w.ownerToken, w.programID, url.Values{"dateFrom": {ts(9)}, "dateTo": {ts(4)}})
		want := []string{"lead@" + ts(4), "conversion@" + ts(5), "click@" + ts(6), "lead@" + ts(7), "click@" + ts(9)}
		l.wantPagination(t, 1, 10, 1, len(want))
		for i, k := range l.kinds() {
			if k != want[i] {
				t.Fatalf("window = %v, want %v", l.kinds(), want)
			}
		}
	})
	t.Run("OK narrowing by date reaches events past the cap", func(t *testing.T) {
		// With pageSize 2 the oldest clicks are past the cap; a dateTo
		// before the newest reaches them.
		l := listEvents(t, b, w.ownerToken, w.programID, url.Values{"pageSize": {"2"}, "eventType": {"click"}, "dateTo": {ts(18)}})
		l.wantPagination(t, 1, 2, 2, 4)
		if got := l.kinds(); got[0] != "click@"+ts(18) || got[1] != "click@"+ts(21) {
			t.Fatalf("older clicks = %v", got)
		}
	})
	t.Run("OK offsets, even with a raw plus in the URL", func(t *testing.T) {
		// The lead at minute 4, written in +02:00; "+" unencoded reaches
		// the edge as a space.
		local := at(4).In(time.FixedZone("", 2*3600)).Format("2006-01-02T15:04:05-07:00")
		for _, path := range []string{
			"?dateFrom=" + url.QueryEscape(local) + "&dateTo=" + url.QueryEscape(local),
			"?dateFrom=" + local + "&dateTo=" + local,
		} {
			r := do(t, b.app, req{"GET", "/api/tracking/events/" + itoa(w.programID) + path, nil, bearer(w.ownerToken)})
			data, _ := r.Body["data"].([]any)
			if r.Status != 200 || len(data) != 1 || data[0].(map[string]any)["timestamp"] != ts(4) {
				t.Fatalf("%s: %d %s", path, r.Status, r.Raw)
			}
		}
	})
	t.Run("OK dateTo covers its whole last unit", func(t *testing.T) {
		// A sale at 10.000500 s past a minute shows as ….000Z; dateTo
		// with that timestamp includes it.
		saleAt := base.Add(-100*time.Minute + 500*time.Microsecond)
		insertListedSale(t, b.db, w.programID, saleAt, false)
		shown := formatTime(saleAt)
		l := listEvents(t, b, w.ownerToken, w.programID, url.Values{"eventType": {"conversion"}, "dateFrom": {shown}, "dateTo": {shown}})
		if len(l.events) != 1 || l.events[0]["timestamp"] != shown {
			t.Fatalf("events at %s = %v", shown, l.kinds())
		}
	})
	t.Run("OK every role lists", func(t *testing.T) {
		for _, role := range []string{"admin", "member"} {
			tok := dashboardMemberToken(t, b, w, role)
			listEvents(t, b, tok, w.programID, nil).wantPagination(t, 1, 10, 3, 23)
		}
	})

	for _, tc := range []struct {
		desc  string
		query url.Values
		want  string
	}{
		{"page zero", url.Values{"page": {"0"}}, ledger.MsgEventPage},
		{"page not a number", url.Values{"page": {"two"}}, ledger.MsgEventPage},
		{"pageSize over 100", url.Values{"pageSize": {"101"}}, ledger.MsgEventPageSize},
		{"pageSize fraction", url.Values{"pageSize": {"2.5"}}, ledger.MsgEventPageSize},
		{"eventType unknown", url.Values{"eventType": {"sale"}}, ledger.MsgEventType},
		{"dateFrom garbage", url.Values{"dateFrom": {"last week"}}, ledger.MsgEventDateFrom},
		{"dateTo garbage", url.Values{"dateTo": {"2026-13-01"}}, ledger.MsgEventDateTo},
		{"dates reversed", url.Values{"dateFrom": {"2026-03-02"}, "dateTo": {"2026-03-01"}}, ledger.MsgEventDateOrder},
	} {
		t.Run("ErrQuery "+tc.desc, func(t *testing.T) {
			r := do(t, b.app, req{"GET", "/api/tracking/events/" + itoa(w.programID) + "?" + tc.query.Encode(), nil, bearer(w.ownerToken)})
			assertPlatformError(t, r, 400, "BadRequestError", tc.want, "")
		})
	}

	t.Run("ErrNotFound", func(t *testing.T) {
		for _, path := range []string{"/api/tracking/events/99999999", "/api/tracking/events/abc"} {
			r := do(t, b.app, req{"GET", path, nil, bearer(w.ownerToken)})
			assertPlatformError(t, r, 404, "NotFoundError", "program not found", "")
		}
	})
	t.Run("ErrNotAMember", func(t *testing.T) {
		r := do(t, b.app, req{"GET", "/api/tracking/events/" + itoa(w.programID), nil, bearer(other.ownerToken)})
		assertPlatformError(t, r, 403, "ForbiddenError", "you are not a member of this program's workspace", "")
	})
	t.Run("ErrProgramKeyRefused", func(t *testing.T) {
		for _, tc := range []struct {
			header map[string]string
			want   string
		}{
			{bearer(w.liveKey), "invalid or expired token"},
			{nil, "Authentication required"},
			{bearer(""), "Authentication required"},
		} {
			r := do(t, b.app, req{"GET", "/api/tracking/events/" + itoa(w.programID), nil, tc.header})
			assertPlatformError(t, r, 401, "UnauthorizedError", tc.want, "")
		}
	})
	t.Run("ErrCLITokenRefused", func(t *testing.T) {
		sess, err := b.srv.svc.Accounts.CreateSession(t.Context(), w.ownerID, ledger.CLISession)
		if err != nil {
			t.Fatal(err)
		}
		r := do(t, b.app, req{"GET", "/api/tracking/events/" + itoa(w.programID), nil, bearer(sess.Token)})
		assertPlatformError(t, r, 401, "UnauthorizedError", "invalid or expired token", "")
	})
}

// dashboardMemberToken adds a member of role to w's workspace and returns their
// dashboard token.
func dashboardMemberToken(t *testing.T, b *testBundle, w world, role string) string {
	t.Helper()
	worldCount.Add(1)
	d := mustOK(t, do(t, b.app, req{"POST", "/api/operator/v1/workspaces/" + itoa(w.workspaceID) + "/members",
		map[string]any{"email": role + itoa(worldCount.Load()) + "@acme.example", "role": role}, operator()}), 201)
	s := mustOK(t, do(t, b.app, req{"POST", "/api/operator/v1/users/" + itoa(id(d["user_id"])) + "/sessions", nil, operator()}), 201)
	return s["token"].(string)
}
