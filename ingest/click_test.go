package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/lib/pq"
	"github.com/redis/go-redis/v9"

	"github.com/partnertrack/partnertrack/ingest/enrich"
	"github.com/partnertrack/partnertrack/ingest/enrich/enrichtest"
	"github.com/partnertrack/partnertrack/ingest/linkcache"
	"github.com/partnertrack/partnertrack/ingest/traffic"
	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/workers"
	"github.com/partnertrack/partnertrack/workers/redistest"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

// clickBundle is an edge with the real click pipeline: the link cache
// over Postgres, and the pipeline into a Redis namespace of its own.
type clickBundle struct {
	*testBundle
	rdb   *redis.Client
	ns    tasks.Namespace
	store *postgres.TrafficStore
}

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

func setupClicks(t *testing.T) *clickBundle {
	t.Helper()
	b := &clickBundle{testBundle: setup(t)}
	b.rdb = redistest.Client(t)
	b.ns = redistest.Namespace(t, b.rdb)
	b.store = postgres.NewTrafficStore(b.db.DB)
	b.wire(t, b.srv, b.rdb)
	return b
}

// wire gives an edge instance the click services over the bundle's
// database, and rdb as its Redis (a dead one for the outage tests).
func (b *clickBundle) wire(t *testing.T, srv *Server, rdb *redis.Client) *traffic.Pipeline {
	t.Helper()
	cache := linkcache.New(b.store, rdb, b.ns.Key(linkcache.Channel), linkcache.Options{Now: b.clock.Now, Logger: quietLog})
	if err := cache.Start(context.Background()); err != nil && rdb == b.rdb {
		t.Fatal(err)
	}
	t.Cleanup(cache.Close)
	p := traffic.New(traffic.Config{
		Redis: rdb, Queue: asynq.NewClientFromRedisClient(rdb), Namespace: b.ns,
		Breaker: tasks.NewRedisBreaker("test", nil), Store: b.store, Logger: quietLog,
		// These tests count what reached Redis; on a loaded machine the
		// production 50 ms deadline would divert some batches to Postgres.
		RedisTimeout: 10 * time.Second,
	})
	srv.svc.Tracking, srv.svc.TrackingCache, srv.svc.Traffic = cache, cache, p
	// Leads and sales resolve clicks still in the queue from the records
	// this pipeline writes, as in production.
	pending := &traffic.Pending{Redis: rdb, Namespace: b.ns}
	srv.svc.Leads = postgres.NewLeadService(b.db.DB, pending)
	srv.svc.Sales = postgres.NewSaleService(b.db.DB, postgres.SaleOptions{Pending: pending, Logger: quietLog})
	srv.checks = map[string]Check{"queue_breaker": p.Ready}
	return p
}

func deadRedis(t *testing.T) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1, DialTimeout: 200 * time.Millisecond, ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	return c
}

// queued counts the tasks and clicks waiting in the clicks queue and the
// pending-click records of the namespace.
func (b *clickBundle) queued(t *testing.T) (taskCount, clicks, records int) {
	t.Helper()
	infos, err := asynq.NewInspectorFromRedisClient(b.rdb).ListPendingTasks(b.ns.Queue(tasks.QueueClicks), asynq.PageSize(1000))
	if err != nil && !errors.Is(err, asynq.ErrQueueNotFound) {
		t.Fatal(err)
	}
	for _, ti := range infos {
		cs, err := tasks.DecodeClickBatch(asynq.NewTask(ti.Type, ti.Payload))
		if err != nil {
			t.Fatal(err)
		}
		clicks += len(cs)
	}
	keys, err := b.rdb.Keys(context.Background(), b.ns.Key("clicks:pending:*")).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		n, err := b.rdb.HLen(context.Background(), k).Result()
		if err != nil {
			t.Fatal(err)
		}
		records += int(n)
	}
	return len(infos), clicks, records
}

// drain runs the click and visit workers' handlers over every pending
// task, as a worker process would, and removes the tasks.
func (b *clickBundle) drain(t *testing.T) {
	t.Helper()
	insp := asynq.NewInspectorFromRedisClient(b.rdb)
	handlers := map[string]asynq.Handler{
		tasks.QueueClicks: &workers.ClickBatchHandler{Store: b.store, Logger: quietLog},
		tasks.QueueVisits: &workers.VisitBatchHandler{Store: b.store, Logger: quietLog},
	}
	for queue, h := range handlers {
		infos, err := insp.ListPendingTasks(b.ns.Queue(queue), asynq.PageSize(1000))
		if errors.Is(err, asynq.ErrQueueNotFound) {
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		for _, ti := range infos {
			if err := h.ProcessTask(context.Background(), asynq.NewTask(ti.Type, ti.Payload)); err != nil {
				t.Fatal(err)
			}
			if err := insp.DeleteTask(b.ns.Queue(queue), ti.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// clickRow is a stored click.
type clickRow struct {
	ProgramID, PartnerID, LinkID                           int64
	Session, Page, Referrer, Country, Region, City, Device string
	OS, Browser, IP, Agent                                 string
	IsTest                                                 bool
	OccurredAt                                             time.Time
}

func (b *clickBundle) row(t *testing.T, clickID string) clickRow {
	t.Helper()
	var r clickRow
	err := b.db.QueryRow(`SELECT program_id, partner_id, link_id, COALESCE(session_id, ''), COALESCE(page_url, ''),
		COALESCE(referrer_url, ''), COALESCE(geo_country, ''), COALESCE(geo_region, ''), COALESCE(geo_city, ''),
		COALESCE(device_type, ''), COALESCE(device_os, ''), COALESCE(browser_name, ''), COALESCE(host(ip), ''),
		COALESCE(user_agent, ''), is_test, occurred_at FROM clicks WHERE click_id = $1`, clickID).
		Scan(&r.ProgramID, &r.PartnerID, &r.LinkID, &r.Session, &r.Page, &r.Referrer, &r.Country, &r.Region, &r.City,
			&r.Device, &r.OS, &r.Browser, &r.IP, &r.Agent, &r.IsTest, &r.OccurredAt)
	if err != nil {
		t.Fatalf("click %s: %v", clickID, err)
	}
	return r
}

func (b *clickBundle) clickRows(t *testing.T) int {
	t.Helper()
	var n int
	b.db.QueryRow(`SELECT count(*) FROM clicks`).Scan(&n)
	return n
}

func landing(w world) string { return "https://acme.example/landing?aff=pat" + itoa(w.programID) }

const chromeAgent = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36"

func fromIP(ip string) map[string]string { return map[string]string{"X-Forwarded-For": ip} }

func assertError(t *testing.T, r response, status int, message string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Raw)
	}
	e, _ := r.Body["error"].(map[string]any)
	if e == nil || e["message"] != message || e["status"] != float64(status) || e["name"] != statusName(status) {
		t.Fatalf("error body %s, want %d %q", r.Raw, status, message)
	}
	if _, ok := r.Body["data"]; !ok || r.Body["data"] != nil {
		t.Fatalf("not the platform envelope: %s", r.Raw)
	}
}

func TestClickMessages(t *testing.T) {
	b := setupClicks(t)
	w := MustWorld(t, b.app)
	other := MustWorld(t, b.app)
	// Links that cannot attribute: one whose partner is gone, one of no
	// program.
	b.db.MustExec(`INSERT INTO links (program_id, partner_id, code) VALUES ($1, NULL, 'orphan-partner')`, w.programID)
	b.db.MustExec(`INSERT INTO links (program_id, partner_id, code) VALUES (NULL, $1, 'orphan-program')`, w.partnerID)

	for i, tc := range []struct {
		desc string
		body any
		want string
	}{
		{"empty body", "", ledger.MsgAffiliateURLRequired},
		{"affiliate_url absent", map[string]any{"page_url": "https://acme.example/"}, ledger.MsgAffiliateURLRequired},
		{"affiliate_url null", map[string]any{"affiliate_url": nil}, ledger.MsgAffiliateURLRequired},
		{"affiliate_url blank", map[string]any{"affiliate_url": "  "}, ledger.MsgAffiliateURLRequired},
		{"affiliate_url not a string", map[string]any{"affiliate_url": 42}, ledger.MsgAffiliateURLInvalid},
		{"affiliate_url relative", map[string]any{"affiliate_url": "/landing?aff=x"}, ledger.MsgAffiliateURLInvalid},
		{"affiliate_url unparsable, before an unknown program", map[string]any{"affiliate_url": "http://%zz/?aff=x", "program_id": 999999}, ledger.MsgAffiliateURLInvalid},
		{"no aff or via", map[string]any{"affiliate_url": "https://acme.example/?ref=pat"}, ledger.MsgNoAffParameter},
		{"no aff, before an unknown program", map[string]any{"affiliate_url": "https://acme.example/", "program_id": 999999}, ledger.MsgNoAffParameter},
		{"unknown program_id", map[string]any{"affiliate_url": landing(w), "program_id": 999999}, ledger.MsgUnknownProgram},
		{"program_id not a number", map[string]any{"affiliate_url": landing(w), "program_id": "abc"}, ledger.MsgUnknownProgram},
		{"program_id a fraction", map[string]any{"affiliate_url": landing(w), "program_id": 1.5}, ledger.MsgUnknownProgram},
		{"unknown code", map[string]any{"affiliate_url": "https://acme.example/?aff=nobody"}, ledger.MsgLinkNotFound},
		{"code no link can have", map[string]any{"affiliate_url": "https://acme.example/?via=a%20b"}, ledger.MsgLinkNotFound},
		{"code of another program", map[string]any{"affiliate_url": landing(w), "program_id": other.programID}, ledger.MsgLinkNotFound},
		{"link without partner", map[string]any{"affiliate_url": "https://acme.example/?aff=orphan-partner"}, ledger.MsgLinkMisconfigured},
		{"link without program", map[string]any{"affiliate_url": "https://acme.example/?aff=orphan-program"}, ledger.MsgLinkMisconfigured},
		{"page_url not a string", map[string]any{"affiliate_url": landing(w), "page_url": 5}, "page_url must be a string"},
		{"existing_click_id not a string", map[string]any{"affiliate_url": landing(w), "existing_click_id": true}, "existing_click_id must be a string"},
		{"additional_data not an object", map[string]any{"affiliate_url": landing(w), "additional_data": "x"}, ledger.MsgAdditionalDataObject},
		{"test_mode not a boolean", map[string]any{"affiliate_url": landing(w), "additional_data": map[string]any{"test_mode": "yes"}}, ledger.MsgTestModeBoolean},
		{"not JSON", "affiliate_url=https://acme.example/?aff=x", msgNotJSON},
		{"NUL byte", `{"affiliate_url":"https://acme.example/?aff=pat\u0000"}`, ledger.MsgAffiliateURLInvalid},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			r := do(t, b.app, req{"POST", "/api/v1/track/click", tc.body, fromIP(fmt.Sprintf("198.51.100.%d", i+1))})
			assertError(t, r, 400, tc.want)
			if _, ok := r.Body["error"].(map[string]any)["code"]; ok {
				t.Fatalf("click errors carry no stable code: %s", r.Raw)
			}
		})
	}
	if tasks, clicks, records := b.queued(t); tasks+clicks+records != 0 {
		t.Fatalf("refused clicks were recorded: %d tasks, %d clicks, %d records", tasks, clicks, records)
	}
}

func TestClickRecorded(t *testing.T) {
	b := setupClicks(t)
	w := MustWorld(t, b.app)
	h := map[string]string{
		"X-Forwarded-For": "81.2.69.142", "User-Agent": chromeAgent, "Origin": "https://acme.example",
		"CF-IPCountry": "gb", "CF-Region": "England", "CF-IPCity": "London",
	}
	body := map[string]any{
		"affiliate_url": landing(w) + "&utm_source=x", "page_url": "https://acme.example/landing", "page_title": "Acme",
		"referrer_url": "https://blog.example/post", "session_id": "sess_abc_1", "screen_resolution": "1920x1080",
		"viewport_size": "1200x800", "language": "en-GB", "timezone": "Europe/London", "existing_click_id": nil,
		"program_id": itoa(w.programID),
	}
	r := do(t, b.app, req{"POST", "/api/v1/track/click", body, h})
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Raw)
	}
	id, _ := r.Body["click_id"].(string)
	data, _ := r.Body["data"].(map[string]any)
	if r.Body["success"] != true || r.Body["partner_code"] != "pat"+itoa(w.programID) || r.Body["cookie_window_days"] != float64(90) ||
		data == nil || data["success"] != true || data["click_id"] != id || data["partner_code"] != r.Body["partner_code"] || data["cookie_window_days"] != float64(90) {
		t.Fatalf("body %s", r.Raw)
	}
	if at, ok := ledger.ClickTime(id); !ok || !strings.EqualFold(id, strings.ToLower(id)) || at.IsZero() {
		t.Fatalf("click_id %q is not a lower-case click id", id)
	}
	if r.Header.Get("Access-Control-Allow-Origin") != "*" || r.Header.Get("X-RateLimit-Limit") != "60" || r.Header.Get("X-Request-ID") == "" {
		t.Fatalf("headers %v", r.Header)
	}

	// Acknowledged: in the queue with its record, readable as pending
	// before any worker ran.
	if tasks, clicks, records := b.queued(t); tasks != 1 || clicks != 1 || records != 1 {
		t.Fatalf("queued %d tasks, %d clicks, %d records", tasks, clicks, records)
	}
	pc, err := (&traffic.Pending{Redis: b.rdb, Namespace: b.ns}).PendingClick(context.Background(), id)
	if err != nil || pc.ProgramID != w.programID || *pc.PartnerID != w.partnerID || *pc.LinkID != w.linkID {
		t.Fatalf("pending click %+v, %v", pc, err)
	}
	if b.clickRows(t) != 0 {
		t.Fatal("the edge wrote Postgres while Redis was up")
	}

	b.drain(t)
	got := b.row(t, id)
	at, _ := ledger.ClickTime(id)
	want := clickRow{ProgramID: w.programID, PartnerID: w.partnerID, LinkID: w.linkID, Session: "sess_abc_1",
		Page: "https://acme.example/landing", Referrer: "https://blog.example/post", Country: "GB", Region: "England",
		City: "London", Device: "desktop", OS: "Windows", Browser: "Chrome", IP: "81.2.69.142", Agent: chromeAgent, OccurredAt: at}
	got.OccurredAt = got.OccurredAt.UTC()
	if got != want {
		t.Fatalf("stored\n %+v\nwant\n %+v", got, want)
	}

	// The body's user_agent wins over the header; without page_url the
	// landing URL is the page.
	r = do(t, b.app, req{"POST", "/api/v1/track/click", map[string]any{"affiliate_url": landing(w),
		"user_agent": "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1"},
		map[string]string{"X-Forwarded-For": "203.0.113.5", "User-Agent": chromeAgent}})
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Raw)
	}
	b.drain(t)
	got = b.row(t, r.Body["click_id"].(string))
	if got.Device != "mobile" || got.OS != "iOS" || got.Page != landing(w) || got.Country != "" {
		t.Fatalf("stored %+v", got)
	}
}

func TestClickGeo(t *testing.T) {
	b := setupClicks(t)
	w := MustWorld(t, b.app)
	geo, err := enrich.OpenGeoDB(enrichtest.MustGeoDB(t, map[string]enrich.Location{
		"81.2.69.0/24": {Country: "GB", Region: "England", City: "London"},
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer geo.Close()
	b.srv.geo = geo

	untrusted := newTestServer(b.db, b.clock)
	untrusted.cfg.TrustedProxies = nil
	untrusted.geo = geo
	b.wire(t, untrusted, b.rdb)

	for _, tc := range []struct {
		desc    string
		srv     *Server
		header  map[string]string
		country string
		city    string
	}{
		{"MaxMind by client IP", b.srv, fromIP("81.2.69.142"), "GB", "London"},
		{"CDN header of a trusted proxy wins", b.srv, map[string]string{"X-Forwarded-For": "81.2.69.142", "CF-IPCountry": "FR", "CF-IPCity": "Paris"}, "FR", "Paris"},
		{"Vercel headers, percent-encoded", b.srv, map[string]string{"X-Forwarded-For": "203.0.113.9", "X-Vercel-IP-Country": "DE", "X-Vercel-IP-City": "M%C3%BCnchen"}, "DE", "München"},
		{"unknown country header falls back", b.srv, map[string]string{"X-Forwarded-For": "81.2.69.142", "CF-IPCountry": "XX"}, "GB", "London"},
		{"address MaxMind does not know", b.srv, fromIP("203.0.113.9"), "", ""},
		{"CDN header of an untrusted peer ignored", untrusted, map[string]string{"CF-IPCountry": "FR", "CF-IPCity": "Paris"}, "", ""},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			r := do(t, tc.srv.App(), req{"POST", "/api/v1/track/click", map[string]any{"affiliate_url": landing(w)}, tc.header})
			if r.Status != 200 {
				t.Fatalf("status %d: %s", r.Status, r.Raw)
			}
			b.drain(t)
			if got := b.row(t, r.Body["click_id"].(string)); got.Country != tc.country || got.City != tc.city {
				t.Fatalf("geo %q %q, want %q %q", got.Country, got.City, tc.country, tc.city)
			}
		})
	}
}

func TestDisabledLinkAnswers410AndRecordsNothing(t *testing.T) {
	b := setupClicks(t)
	w := MustWorld(t, b.app)
	// A second edge instance over the same database and Redis.
	replica := newTestServer(b.db, b.clock)
	b.wire(t, replica, b.rdb)
	click := req{"POST", "/api/v1/track/click", map[string]any{"affiliate_url": landing(w)}, fromIP("203.0.113.20")}
	for _, app := range []*Server{b.srv, replica} { // both cache the active link
		if r := do(t, app.App(), click); r.Status != 200 {
			t.Fatalf("active link: %d %s", r.Status, r.Raw)
		}
	}
	b.drain(t)

	_, _, recordsBefore := b.queued(t)
	mustOK(t, do(t, b.app, req{"PATCH", "/api/operator/v1/links/" + itoa(w.linkID), map[string]any{"active": false}, operator()}), 200)
	r := do(t, b.app, click)
	if r.Status != 410 {
		t.Fatalf("status %d on the instance that changed the link: %s", r.Status, r.Raw)
	}
	e, _ := r.Body["error"].(map[string]any)
	if _, hasData := r.Body["data"]; hasData || r.Body["success"] != false || r.Body["message"] != ledger.MsgLinkDisabled ||
		e["code"] != ledger.ELinkDisabled || e["message"] != ledger.MsgLinkDisabled || e["hint"] != ledger.MsgLinkDisabledHint || e["status"] != float64(410) {
		t.Fatalf("410 body %s", r.Raw)
	}
	if tasks, clicks, records := b.queued(t); tasks+clicks != 0 || records != recordsBefore {
		t.Fatalf("a click on a disabled link was recorded: %d tasks, %d clicks, %d records", tasks, clicks, records)
	}
	// The other instance hears of it through Redis, within moments (it
	// may take clicks until the message arrives).
	deadline := time.Now().Add(10 * time.Second)
	for do(t, replica.App(), click).Status != 410 {
		if time.Now().After(deadline) {
			t.Fatal("the replica kept the link active")
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.drain(t)
	rows := b.clickRows(t)
	_, _, recordsBefore = b.queued(t)
	if r := do(t, replica.App(), click); r.Status != 410 {
		t.Fatalf("replica: %d", r.Status)
	}
	if tasks, clicks, records := b.queued(t); tasks+clicks != 0 || records != recordsBefore || b.clickRows(t) != rows {
		t.Fatalf("the replica recorded a click on a disabled link: %d tasks, %d clicks, %d records", tasks, clicks, records)
	}

	mustOK(t, do(t, b.app, req{"PATCH", "/api/operator/v1/links/" + itoa(w.linkID), map[string]any{"active": true}, operator()}), 200)
	if r := do(t, b.app, click); r.Status != 200 {
		t.Fatalf("re-enabled link: %d %s", r.Status, r.Raw)
	}
}

func TestTestModeClicks(t *testing.T) {
	b := setupClicks(t)
	w := MustWorld(t, b.app)
	other := MustWorld(t, b.app)
	testKey := mustOK(t, do(t, b.app, req{"POST", "/api/v1/programs/" + itoa(w.programID) + "/api-key", map[string]any{"mode": "test"}, bearer(w.ownerToken)}), 200)["api_key"].(string)
	url := landing(w)
	testMode := func(programID any) map[string]any {
		ad := map[string]any{"test_mode": true}
		if programID != nil {
			ad["program_id"] = programID
		}
		return map[string]any{"affiliate_url": url, "additional_data": ad}
	}
	withKey := func(key string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + key, "X-Forwarded-For": "203.0.113.30"}
	}

	for _, tc := range []struct {
		desc   string
		body   any
		header map[string]string
		status int
		test   bool
		msg    string
	}{
		{"test mode without a key", testMode(nil), fromIP("203.0.113.30"), 200, true, ""},
		{"test mode, key and its own program", testMode(w.programID), withKey(w.liveKey), 200, true, ""},
		{"test mode, key and its program as a string", testMode(itoa(w.programID)), withKey(w.liveKey), 200, true, ""},
		{"test mode, key and another program", testMode(other.programID), withKey(w.liveKey), 403, false, ledger.MsgProgramKeyMismatch},
		{"test key and another program", map[string]any{"affiliate_url": url, "additional_data": map[string]any{"program_id": other.programID}}, withKey(testKey), 403, false, ledger.MsgProgramKeyMismatch},
		{"test key makes a test click", map[string]any{"affiliate_url": url}, withKey(testKey), 200, true, ""},
		{"not test mode: another program_id is ignored", map[string]any{"affiliate_url": url, "additional_data": map[string]any{"program_id": other.programID}}, withKey(w.liveKey), 200, false, ""},
		{"a key that matches no program", testMode(nil), withKey("aff_nobody"), 401, false, msgInvalidToken},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			r := do(t, b.app, req{"POST", "/api/v1/track/click", tc.body, tc.header})
			if tc.status != 200 {
				assertError(t, r, tc.status, tc.msg)
				return
			}
			if r.Status != 200 {
				t.Fatalf("status %d: %s", r.Status, r.Raw)
			}
			id := r.Body["click_id"].(string)
			data := r.Body["data"].(map[string]any)
			if tc.test && (r.Body["success"] != true || r.Body["message"] == nil || r.Body["test_mode"] != true ||
				data["eventId"] != id || data["programId"] != float64(w.programID) || data["test_mode"] != true || data["click_id"] != id) {
				t.Fatalf("test-mode body %s", r.Raw)
			}
			b.drain(t)
			if got := b.row(t, id); got.IsTest != tc.test {
				t.Fatalf("stored is_test = %v, want %v", got.IsTest, tc.test)
			}
		})
	}
	// Test clicks stay out of the listing index.
	var listed, tests int
	b.db.QueryRow(`SELECT count(*) FILTER (WHERE NOT is_test), count(*) FILTER (WHERE is_test) FROM clicks`).Scan(&listed, &tests)
	if listed != 1 || tests != 4 {
		t.Fatalf("%d listed and %d test clicks, want 1 and 4", listed, tests)
	}
}

func TestClickRateLimit(t *testing.T) {
	b := setupClicks(t)
	w := MustWorld(t, b.app)
	b.clock.Set(b.clock.Now().Truncate(time.Minute).Add(time.Second))
	click := req{"POST", "/api/v1/track/click", map[string]any{"affiliate_url": landing(w)}, fromIP("203.0.113.40")}
	for i := 0; i < limitClick; i++ {
		if r := do(t, b.app, click); r.Status != 200 {
			t.Fatalf("click %d: %d %s", i, r.Status, r.Raw)
		}
	}
	r := do(t, b.app, click)
	if r.Status != 429 || r.Body["error"].(map[string]any)["code"] != ledger.ERateLimited {
		t.Fatalf("click over the limit: %d %s", r.Status, r.Raw)
	}
	if _, clicks, _ := b.queued(t); clicks != limitClick {
		t.Fatalf("%d clicks queued, want %d", clicks, limitClick)
	}
}

func TestConcurrentClicksAreAllStored(t *testing.T) {
	b := setupClicks(t)
	w := MustWorld(t, b.app)
	const n = 200
	var wg sync.WaitGroup
	ids := make([]string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := do(t, b.app, req{"POST", "/api/v1/track/click", map[string]any{"affiliate_url": landing(w)}, fromIP(fmt.Sprintf("10.0.%d.%d", i/50, i%50))})
			if r.Status == 200 {
				ids[i], _ = r.Body["click_id"].(string)
			}
		}()
	}
	wg.Wait()
	tasksQueued, clicks, records := b.queued(t)
	if clicks != n || records != n || tasksQueued > n {
		t.Fatalf("%d tasks carry %d clicks with %d records, want %d clicks", tasksQueued, clicks, records, n)
	}
	b.drain(t)
	var stored int
	b.db.QueryRow(`SELECT count(*) FROM clicks WHERE click_id = ANY($1)`, pq.Array(ids)).Scan(&stored)
	if stored != n {
		t.Fatalf("%d of %d acknowledged clicks stored", stored, n)
	}
}

func TestClicksWhileRedisIsDown(t *testing.T) {
	b := setupClicks(t)
	w := MustWorld(t, b.app)
	edge := newTestServer(b.db, b.clock)
	p := b.wire(t, edge, deadRedis(t))
	ids := map[string]bool{}
	for i := 0; i < 7; i++ {
		r := do(t, edge.App(), req{"POST", "/api/v1/track/click", map[string]any{"affiliate_url": landing(w)}, fromIP("203.0.113.50")})
		if r.Status != 200 {
			t.Fatalf("click %d with Redis down: %d %s", i, r.Status, r.Raw)
		}
		ids[r.Body["click_id"].(string)] = true
		// Written straight to Postgres, before the answer.
		b.row(t, r.Body["click_id"].(string))
	}
	if len(ids) != 7 || p.Stats().Diverted.Load() != 7 {
		t.Fatalf("%d clicks, %d diverted", len(ids), p.Stats().Diverted.Load())
	}
	r := do(t, edge.App(), req{"GET", "/readyz", nil, nil})
	if r.Status != 503 || !strings.Contains(string(r.Raw), "queue breaker open") {
		t.Fatalf("readyz with the breaker open: %d %s", r.Status, r.Raw)
	}

	// With Postgres gone too, the click fails and nothing is acknowledged.
	gone, err := postgres.Open(context.Background(), b.db.URL, postgres.PoolConfig{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	gone.Close()
	p2 := traffic.New(traffic.Config{Redis: deadRedis(t), Queue: asynq.NewClientFromRedisClient(deadRedis(t)), Namespace: b.ns,
		Store: postgres.NewTrafficStore(gone), Logger: quietLog})
	edge.svc.Traffic = p2
	r = do(t, edge.App(), req{"POST", "/api/v1/track/click", map[string]any{"affiliate_url": landing(w)}, fromIP("203.0.113.51")})
	assertError(t, r, 500, "Click tracking failed")
	if b.clickRows(t) != 7 {
		t.Fatal("a failed click was stored")
	}
}

func TestVisits(t *testing.T) {
	b := setupClicks(t)
	w := MustWorld(t, b.app)
	clickID := ledger.NewClickID(b.clock.Now())
	for i, tc := range []struct {
		desc string
		body any
		msg  string
	}{
		{"program_id absent", map[string]any{"page_url": "https://acme.example/"}, ledger.MsgProgramIDRequired},
		{"program_id unknown", map[string]any{"program_id": 999999}, ledger.MsgUnknownProgram},
		{"program_id garbage", map[string]any{"program_id": "x1"}, ledger.MsgUnknownProgram},
		{"page_url not a string", map[string]any{"program_id": w.programID, "page_url": []int{1}}, "page_url must be a string"},
		{"not JSON", "[]", msgNotJSON},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			assertError(t, do(t, b.app, req{"POST", "/api/v1/track/visit", tc.body, fromIP(fmt.Sprintf("198.51.100.%d", i+1))}), 400, tc.msg)
		})
	}
	h := map[string]string{"X-Forwarded-For": "203.0.113.60", "Origin": "https://acme.example"}
	r := do(t, b.app, req{"POST", "/api/v1/track/visit", map[string]any{"program_id": itoa(w.programID), "click_id": clickID,
		"session_id": "sess_1", "page_url": "https://acme.example/pricing", "referrer_url": "https://acme.example/"}, h})
	if r.Status != 200 || r.Body["success"] != true || r.Header.Get("X-RateLimit-Limit") != "120" || r.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("visit: %d %s %v", r.Status, r.Raw, r.Header)
	}
	visitID := r.Body["visit_id"].(string)
	if r.Body["data"].(map[string]any)["visit_id"] != visitID {
		t.Fatalf("body %s", r.Raw)
	}
	// A click id the tracker did not make is not kept.
	r2 := do(t, b.app, req{"POST", "/api/v1/track/visit", map[string]any{"program_id": w.programID, "click_id": "user_42",
		"additional_data": map[string]any{"test_mode": true}}, h})
	if r2.Status != 200 {
		t.Fatalf("visit: %d %s", r2.Status, r2.Raw)
	}
	b.drain(t)
	var program int64
	var storedClick, page, session string
	b.db.QueryRow(`SELECT program_id, click_id, page_url, session_id FROM visits WHERE visit_id = $1`, visitID).Scan(&program, &storedClick, &page, &session)
	if program != w.programID || storedClick != clickID || page != "https://acme.example/pricing" || session != "sess_1" {
		t.Fatalf("stored %d %q %q %q", program, storedClick, page, session)
	}
	var nullClick, isTest bool
	b.db.QueryRow(`SELECT click_id IS NULL, is_test FROM visits WHERE visit_id = $1`, r2.Body["visit_id"]).Scan(&nullClick, &isTest)
	if !nullClick || !isTest {
		t.Fatalf("second visit: click_id null %v, is_test %v", nullClick, isTest)
	}
}

func TestTrackerConfig(t *testing.T) {
	b := setupClicks(t)
	w := MustWorld(t, b.app)
	r := do(t, b.app, req{"GET", "/api/v1/track/config?program_id=" + itoa(w.programID), nil, map[string]string{"Origin": "https://acme.example"}})
	d := mustOK(t, r, 200)
	if d["program_id"] != float64(w.programID) || d["cookie_duration"] != float64(90) || d["cookie_window_days"] != float64(90) ||
		d["lead_auth"] != ledger.LeadServerRequired || d["brand_prefix"] != "svc" || d["cookie_name"] != "svc_click_id" ||
		fmt.Sprint(d["parameters"]) != "[aff via]" {
		t.Fatalf("config %s", r.Raw)
	}
	if r.Header.Get("Cache-Control") != "public, max-age=300" || r.Header.Get("Access-Control-Allow-Origin") != "*" || r.Header.Get("X-RateLimit-Limit") != "60" {
		t.Fatalf("headers %v", r.Header)
	}
	assertError(t, do(t, b.app, req{"GET", "/api/v1/track/config", nil, nil}), 400, ledger.MsgProgramIDRequired)
	assertError(t, do(t, b.app, req{"GET", "/api/v1/track/config?program_id=999999", nil, nil}), 400, ledger.MsgUnknownProgram)
	assertError(t, do(t, b.app, req{"GET", "/api/v1/track/config?program_id=1x", nil, nil}), 400, ledger.MsgUnknownProgram)
}

func TestBrowserRoutesAnswerPreflights(t *testing.T) {
	b := setupClicks(t)
	for _, tc := range []struct{ method, path string }{
		{"POST", "/api/v1/track/click"}, {"POST", "/api/v1/track/visit"}, {"GET", "/api/v1/track/config"},
	} {
		r := do(t, b.app, req{"OPTIONS", tc.path, nil, map[string]string{"Origin": "https://acme.example",
			"Access-Control-Request-Method": tc.method, "Access-Control-Request-Headers": "content-type"}})
		if r.Status != 204 || r.Header.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(strings.ToLower(r.Header.Get("Access-Control-Allow-Headers")), "content-type") {
			t.Fatalf("preflight of %s: %d %v", tc.path, r.Status, r.Header)
		}
	}
}

func TestTrackerScript(t *testing.T) {
	b := setup(t)
	r := do(t, b.app, req{"GET", "/tracker.js", nil, nil})
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/javascript") ||
		r.Header.Get("Cache-Control") != trackerCacheControl || r.Header.Get("ETag") == "" {
		t.Fatalf("tracker.js: %d %v", r.Status, r.Header)
	}
	for _, want := range []string{"'svc'", "P + '_click_id'", "/api/v1/track/click", "/api/v1/track/visit", "/api/v1/track/lead", "client_reference_id", "client-reference-id", "SameSite=Lax", "Secure"} {
		if !strings.Contains(string(r.Raw), want) {
			t.Fatalf("tracker.js lacks %q", want)
		}
	}
	if strings.Contains(string(r.Raw), "__PREFIX__") {
		t.Fatal("the brand prefix was not filled in")
	}
	alias := do(t, b.app, req{"GET", "/js/svc-tracker.js", nil, nil})
	if alias.Status != 200 || string(alias.Raw) != string(r.Raw) || alias.Header.Get("ETag") != r.Header.Get("ETag") {
		t.Fatalf("/js/svc-tracker.js: %d", alias.Status)
	}
	for _, match := range []string{r.Header.Get("ETag"), "W/" + r.Header.Get("ETag"), `"other", ` + r.Header.Get("ETag")} {
		if nm := do(t, b.app, req{"GET", "/tracker.js", nil, map[string]string{"If-None-Match": match}}); nm.Status != 304 || len(nm.Raw) != 0 {
			t.Fatalf("If-None-Match %s: %d", match, nm.Status)
		}
	}
	if nm := do(t, b.app, req{"GET", "/tracker.js", nil, map[string]string{"If-None-Match": `"stale"`}}); nm.Status != 200 {
		t.Fatalf("stale ETag: %d", nm.Status)
	}

	// Another brand prefix renames the cookie, the attributes, the global
	// and the script's path.
	acme := New(Config{BrandPrefix: "acme"}, Services{}, Options{Logger: quietLog})
	r = do(t, acme.App(), req{"GET", "/js/acme-tracker.js", nil, nil})
	if r.Status != 200 || !strings.Contains(string(r.Raw), "'acme'") || r.Header.Get("ETag") == alias.Header.Get("ETag") {
		t.Fatalf("/js/acme-tracker.js: %d", r.Status)
	}
	if r := do(t, acme.App(), req{"GET", "/js/svc-tracker.js", nil, nil}); r.Status != 404 {
		t.Fatalf("/js/svc-tracker.js under another brand: %d", r.Status)
	}
}

func TestLinkCreationIsAnnounced(t *testing.T) {
	b := setupClicks(t)
	w := MustWorld(t, b.app)
	click := req{"POST", "/api/v1/track/click", map[string]any{"affiliate_url": "https://acme.example/?via=newcode"}, fromIP("203.0.113.70")}
	assertError(t, do(t, b.app, click), 400, ledger.MsgLinkNotFound) // remembered as unknown
	mustOK(t, do(t, b.app, req{"POST", "/api/operator/v1/programs/" + itoa(w.programID) + "/links",
		map[string]any{"partner_id": w.partnerID, "code": "newcode"}, operator()}), 201)
	if r := do(t, b.app, click); r.Status != 200 || r.Body["partner_code"] != "newcode" {
		t.Fatalf("click on the new link: %d %s", r.Status, r.Raw)
	}
}

func TestClickWithStrayBytesInHeadersIsStorable(t *testing.T) {
	b := setupClicks(t)
	w := MustWorld(t, b.app)
	r := do(t, b.app, req{"POST", "/api/v1/track/click", map[string]any{"affiliate_url": landing(w)},
		map[string]string{"X-Forwarded-For": "203.0.113.80", "User-Agent": "Mozilla/5.0 \xff\xfe bot", "CF-IPCountry": "DE", "CF-IPCity": "K\xf6ln"}})
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Raw)
	}
	b.drain(t) // fails if Postgres refuses the batch
	got := b.row(t, r.Body["click_id"].(string))
	if got.Agent != "Mozilla/5.0 \uFFFD bot" || got.City != "K\uFFFDln" {
		t.Fatalf("stored %q %q", got.Agent, got.City)
	}
}
