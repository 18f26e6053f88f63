package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnertrack/partnertrack/cmd/internal/faulttest"
	"github.com/partnertrack/partnertrack/ingest/oidc/testissuer"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/ledger/stripetest"
)

// A hostile value, as the raw JSON text put in a field.
type hostileValue struct {
	kind string // what it is (the accept lists name these)
	json string
}

var (
	long10k   = strings.Repeat("a", 10_000)
	digits10k = strings.Repeat("9", 10_000)
)

// hostileValues are put, one at a time, in every field of every route.
var hostileValues = []hostileValue{
	{"object", `{"a":1}`},
	{"array", `["x",1]`},
	{"bool", `true`},
	{"fraction", `12.5`},
	{"numeric-string", `"12"`},
	{"number", `42`},
	{"huge-exponent", `1e400`},
	{"huge-integer", `123456789012345678901234567890`},
	{"int64-overflow", `9223372036854775808`},
	{"int64-underflow", `-9223372036854775809`},
	{"10k-digits", digits10k},
	{"negative", `-1`},
	{"int64-min", `-9223372036854775808`},
	{"empty-string", `""`},
	{"nul-escape", `"a\u0000b"`},
	{"invalid-utf8", "\"a\xff\xfe\xc3b\""},
	{"lone-surrogate", `"a\ud800b"`},
	{"sql-quote", `"' OR '1'='1"`},
	{"sql-drop", `"x'); DROP TABLE sales; --"`},
	{"10k-string", `"` + long10k + `"`},
}

// hostileBodies replace the whole body of a JSON route.
var hostileBodies = []hostileValue{
	{"not-json", `transaction_id=1&amount_cents=2`},
	{"array", `[{"transaction_id":"x"}]`},
	{"string", `"x"`},
	{"truncated", `{"transaction_id": "x", "amount_cents": 1`},
	{"raw-nul", "{\"transaction_id\": \"a\x00b\"}"},
	{"raw-invalid-utf8", "{\"transaction_id\": \"\xff\xfe\"}"},
	// Deeper than encoding/json's 10,000 levels, within the 64 KiB limit.
	{"deep-nesting", strings.Repeat("[", 20_000) + strings.Repeat("]", 20_000)},
	{"deep-object", strings.Repeat(`{"a":`, 10_500) + "1" + strings.Repeat("}", 10_500)},
	{"deep-field", `{"transaction_id":"t","amount_cents":1,"line_items":` + strings.Repeat("[", 10_500) + strings.Repeat("]", 10_500) + `}`},
}

// hostilePathValues replace an id in a path or a query parameter.
var hostilePathValues = []hostileValue{
	{"zero", "0"},
	{"negative", "-1"},
	{"fraction", "1.5"},
	{"huge-exponent", "1e400"},
	{"int64-overflow", "9223372036854775808"},
	{"10k-digits", digits10k[:6000]}, // the whole request line stays under the 8 KiB header limit
	{"letters", "abc"},
	{"nul", "%00"},
	{"invalid-utf8", "%FF%FE"},
	{"invalid-utf8-byte", "%ff"},
	{"invalid-utf8-sequence", "%c3%28"},
	{"utf16-surrogate", "%ed%a0%80"},
	{"sql-quote", url.PathEscape("' OR '1'='1")},
	{"sql-drop", url.PathEscape("1; DROP TABLE sales; --")},
}

// hostileQueries are added to the query string of every route, as a value
// and as a key: each is refused with a 400 before the route reads
// anything, in the route's envelope.
var hostileQueries = []hostileValue{
	{"nul-value", "x=%00"},
	{"invalid-utf8-value", "x=%ff"},
	{"invalid-sequence-value", "x=%c3%28"},
	{"nul-key", "%00=1"},
	{"invalid-utf8-key", "%ff=1"},
	{"invalid-sequence-key", "a%c3%28=1"},
}

// target is one route under attack.
type target struct {
	name, method, path string
	// body returns a valid body for the n-th request (nil: no body).
	body func(t *testing.T, n int) map[string]any
	// token returns the credential of the n-th request ("" for none).
	token func(n int) string
	// fields are attacked one at a time, by dotted path; the map names
	// the kinds of hostile values that are valid for the field (the call
	// may then succeed and store them as sent).
	fields map[string][]string
	// params are query parameters attacked one at a time; query holds
	// valid values of the others, so that the attacked one is read.
	params map[string][]string
	query  func() map[string]string
	// pathParam: the route's path holds {id}, attacked with hostilePathValues.
	pathParam bool
	// htmlPage: the route is a web page, which refuses with an HTML page
	// whose element id="error" says why (or, for a query that is not
	// text, the shared JSON envelope).
	htmlPage bool
}

// hostileWorld is what the hostile tests provision.
type hostileWorld struct {
	e    *edge
	ws   []world // sales, refunds and CLI calls rotate over their keys (120 and 60 a minute each)
	dash []string
	cli  []string // CLI login tokens: the CLI family allows 60 calls a minute per token
	rdb  *redis.Client
	st   *stack
	iss  *testissuer.Issuer
	// clean is the fingerprint (rows) known to be current while the
	// edge has answered cleanAt calls, or "".
	clean   string
	cleanAt int64

	group int64 // the first program's default group (the groups-patch target)
	// partner is a partner token of the first program's partner (the
	// payout targets, issue 26).
	partners []string // partner tokens: the partner API allows 120 calls a minute per token
}

// TestHostileInput sends every route of the edge, public or keyed, each
// hostile value in each field (wrong JSON types, huge and overflowing
// numbers, negative amounts, NUL bytes, invalid UTF-8, SQL
// metacharacters, 10,000-character ids), whole hostile bodies, and hostile
// path and query ids. Every answer is a 4xx in an envelope with a message,
// never a 5xx, never a dropped connection; a refused call adds no row to
// any table and no key to Redis. A value that is valid for its field (SQL
// metacharacters in free text) may be accepted, and is then stored as
// sent.
func TestHostileInput(t *testing.T) {
	t.Parallel()
	sc := report(t, "hostile/every-route-every-value")
	h := newHostileWorld(t)
	seq := 0
	next := func() int { seq++; return seq }
	refused, accepted := 0, 0
	for _, tg := range h.targets() {
		t.Run(tg.name, func(t *testing.T) {
			for _, field := range sortedKeys(tg.fields) {
				for _, v := range hostileValues {
					n := next()
					body := setRaw(t, tg.body(t, n), field, v.json)
					if h.attack(t, tg, tg.path, "", body, n, fmt.Sprintf("%s=%s", field, v.kind), contains(tg.fields[field], v.kind)) {
						accepted++
					} else {
						refused++
					}
				}
			}
			for _, param := range sortedKeys(tg.params) {
				for _, v := range hostilePathValues {
					n := next()
					var body []byte
					if tg.body != nil {
						body, _ = json.Marshal(tg.body(t, n))
					}
					q := param + "=" + v.json
					if tg.query != nil {
						for _, k := range sortedKeys(stringKeys(tg.query())) {
							if k != param {
								q += "&" + k + "=" + url.QueryEscape(tg.query()[k])
							}
						}
					}
					if h.attack(t, tg, tg.path, q, body, n, fmt.Sprintf("?%s", q), contains(tg.params[param], v.kind)) {
						accepted++
					} else {
						refused++
					}
				}
			}
			for _, v := range hostileQueries {
				n := next()
				var body []byte
				if tg.body != nil {
					body, _ = json.Marshal(tg.body(t, n))
				}
				h.attack(t, tg, tg.path, v.json, body, n, "query "+v.kind, false)
				refused++
			}
			if tg.pathParam {
				for _, v := range hostilePathValues {
					n := next()
					var body []byte
					if tg.body != nil {
						body, _ = json.Marshal(tg.body(t, n))
					}
					path := strings.Replace(tg.path, "{id}", v.json, 1)
					h.attack(t, tg, path, "", body, n, "path "+v.kind, false)
					refused++
				}
			}
			if tg.body != nil {
				for _, v := range hostileBodies {
					n := next()
					h.attack(t, tg, tg.path, "", []byte(v.json), n, "body "+v.kind, false)
					refused++
				}
			}
		})
	}
	// SQL metacharacters where they are valid were stored as sent.
	for _, c := range []struct{ query, value string }{
		{`SELECT count(*) FROM sales WHERE processor_event_id = $1`, "x'); DROP TABLE sales; --"},
		{`SELECT count(*) FROM sales WHERE processor_event_id = $1`, "' OR '1'='1"},
		{`SELECT count(*) FROM leads WHERE customer_key = $1`, "' OR '1'='1"},
		{`SELECT count(*) FROM refunds WHERE refund_id = $1`, "x'); DROP TABLE sales; --"},
		{`SELECT count(*) FROM programs WHERE name = $1`, "x'); DROP TABLE sales; --"},
		{`SELECT count(*) FROM sales WHERE metadata->'line_items' = to_jsonb($1::text)`, "x'); DROP TABLE sales; --"},
	} {
		if n := h.st.count(t, c.query, c.value); n < 1 {
			t.Errorf("%q is not stored as sent: %s", c.value, c.query)
		}
	}
	sc.counts(accepted, accepted)
	sc.note("%d hostile calls refused with a 4xx and nothing stored; %d valid-but-nasty values accepted and stored as sent", refused, accepted)
}

// attack sends one hostile call and checks its answer. It reports whether
// the call was accepted (2xx), which only a value valid for its field may
// be.
func (h *hostileWorld) attack(t *testing.T, tg target, path, query string, body []byte, n int, what string, mayAccept bool) bool {
	t.Helper()
	// After a refused call that changed nothing, the fingerprint taken
	// after it is still current if no other call went to the edge since
	// (a valid body may need a click first): no worker runs and nothing
	// is left to relay. Most calls are refused, so this halves the
	// counting.
	before := h.clean
	if before == "" || h.e.calls.Load() != h.cleanAt {
		h.waitRelayed(t)
		before = h.rows(t)
	}
	h.clean = ""
	if strings.Contains(path, "{id}") {
		path = strings.Replace(path, "{id}", itoa(h.ws[n%len(h.ws)].ProgramID), 1)
	}
	if query != "" {
		path += "?" + query
	}
	r := req{method: tg.method, path: path, header: map[string]string{"X-Forwarded-For": nextIP()}}
	if body != nil {
		r.body = body
	}
	if tg.token != nil {
		r.token = tg.token(n)
	}
	rep, err := h.e.call(r)
	switch {
	case err != nil:
		t.Errorf("%s %s: no answer: %v", tg.name, what, err)
		return false
	case rep.Status == 429:
		t.Fatalf("%s %s: rate limited (spread the calls over more keys): %s", tg.name, what, rep)
	case rep.Status >= 500:
		t.Errorf("%s %s: %s", tg.name, what, rep)
		return false
	case rep.Status < 300:
		if !mayAccept {
			t.Errorf("%s %s: accepted a hostile value: %s", tg.name, what, rep)
		}
		return true
	case rep.Status < 400:
		t.Errorf("%s %s: %s", tg.name, what, rep)
		return false
	}
	msg, _ := rep.errObj()["message"].(string)
	if tg.htmlPage {
		// A query that is not text is refused before the page's handler,
		// in the JSON envelope every route shares.
		if !strings.Contains(string(rep.Raw), `id="error"`) && msg == "" {
			t.Errorf("%s %s: %d without an error message on the page: %s", tg.name, what, rep.Status, rep.Raw)
		}
	} else if msg == "" {
		t.Errorf("%s %s: %d without an error message: %s", tg.name, what, rep.Status, rep.Raw)
	}
	if after := h.rows(t); after != before {
		t.Errorf("%s %s: refused (%d) but stored something: rows %s → %s", tg.name, what, rep.Status, before, after)
	} else {
		h.clean, h.cleanAt = after, h.e.calls.Load()
	}
	return false
}

// waitRelayed waits until the outbox holds no message that is not yet
// relayed: an accepted call before this one relays its notifications to
// Redis after it answered, and those keys must not be counted against
// this call. It fails after a minute rather than go on (a relay still
// running would then be blamed on the next call).
func (h *hostileWorld) waitRelayed(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for n := h.st.count(t, `SELECT count(*) FROM outbox WHERE sent_at IS NULL`); n > 0; n = h.st.count(t, `SELECT count(*) FROM outbox WHERE sent_at IS NULL`) {
		if time.Now().After(deadline) {
			t.Fatalf("%d outbox messages still unrelayed after a minute", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// rows is a fingerprint of everything stored: the row count of every
// table, and the number of keys in the test's Redis.
func (h *hostileWorld) rows(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var q []string
	rows, err := h.st.db.QueryContext(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND c.relname <> 'goose_db_version' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		rows.Scan(&name)
		q = append(q, fmt.Sprintf(`SELECT '%s' AS t, count(*) AS n FROM %s`, name, name))
	}
	rows.Close()
	out, err := h.st.db.QueryContext(ctx, strings.Join(q, " UNION ALL ")+" ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	var b strings.Builder
	for out.Next() {
		var name string
		var n int
		out.Scan(&name, &n)
		if n > 0 {
			fmt.Fprintf(&b, "%s:%d ", name, n)
		}
	}
	keys, err := h.rdb.DBSize(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "redis:%d", keys)
	return b.String()
}

func newHostileWorld(t *testing.T) *hostileWorld {
	t.Helper()
	pg := pgtest.New(t)
	// A Redis of the test's own, so that its key count is the edge's only;
	// no worker runs: accepted clicks stay in Redis.
	rd := faulttest.StartRedis(t, faulttest.RedisOptions{})
	opts, _ := redis.ParseURL(rd.URL())
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { rdb.Close() })
	iss := testissuer.New(t)
	st := ownStack(t, pg.URL, rd.URL())
	e := st.startEdge(t, map[string]string{
		"STRIPE_WEBHOOK_SECRET": "whsec_reliability_hostile",
		"OIDC_ISSUER_URL":       iss.URL,
		"OIDC_CLIENT_ID":        testissuer.ClientID,
	})
	h := &hostileWorld{e: e, st: st, rdb: rdb, iss: iss}
	h.ws = mustWorlds(t, e.client, 10, nil)
	// Each program publishes its public page as hostile-<id> (a default
	// slug, program-<id>, has none).
	for _, w := range h.ws {
		e.must(t, 200, req{method: "PATCH", path: "/api/v1/programs/" + itoa(w.ProgramID) + "/settings", token: w.OwnerToken,
			body: map[string]any{"slug": "hostile-" + itoa(w.ProgramID)}})
	}
	// The groups-patch target changes the first program's default group.
	h.group = int64(st.count(t, `SELECT id FROM partner_groups WHERE program_id = $1 AND is_default`, h.ws[0].ProgramID))
	for i := 0; i < 10; i++ {
		w := h.ws[0]
		h.dash = append(h.dash, e.must(t, 201, req{method: "POST", path: "/api/operator/v1/users/" + itoa(w.OwnerID) + "/sessions", token: opToken}).data()["token"].(string))
		secret("dashboard token", h.dash[i])
	}
	for i := 0; i < 5; i++ {
		h.cli = append(h.cli, mustCLIToken(t, e, iss, h.ws[0].OwnerEmail))
	}
	// The first program's partner signs in (the partner payout targets).
	var partnerEmail string
	st.db.QueryRow(`SELECT email FROM partners WHERE id = $1`, h.ws[0].PartnerID).Scan(&partnerEmail)
	for i := 0; i < 8; i++ {
		h.partners = append(h.partners, signInPartnerAt(t, e, iss, "hostile-partner", partnerEmail))
	}
	// A sale of each program, refunded a cent at a time.
	for i, w := range h.ws {
		click := mustClick(t, e.client, w)
		e.must(t, 200, req{method: "POST", path: "/api/v1/track/sale", token: w.LiveKey,
			body: map[string]any{"transaction_id": "refundable-" + itoa(int64(i)), "amount_cents": 1_000_000, "click_id": click}})
	}
	return h
}

// mustCLIToken signs a user in through the CLI login (start, the page's
// confirmation of the code, its callback with the provider's id_token,
// poll) and returns the CLI token.
func mustCLIToken(t *testing.T, e *edge, iss *testissuer.Issuer, email string) string {
	t.Helper()
	start := e.must(t, 200, req{method: "POST", path: "/api/v1/cli/auth/start"}).data()
	state := start["state"].(string)
	secret("CLI login state", state)
	// The person confirms the code on the sign-in page first.
	e.must(t, 200, req{method: "POST", path: "/api/v1/cli/auth/confirm",
		body: map[string]any{"state": state, "user_code": start["user_code"]}})
	e.must(t, 200, req{method: "POST", path: "/api/v1/cli/auth/callback",
		body: map[string]any{"state": state, "id_token": iss.Token(t, "sub-"+email, email)}})
	d := e.must(t, 200, req{method: "GET", path: "/api/v1/cli/auth/poll?state=" + url.QueryEscape(state)}).data()
	tok, _ := d["token"].(string)
	if tok == "" {
		t.Fatalf("poll: %v", d)
	}
	secret("CLI login token", tok)
	return tok
}

// targets lists every route that takes input.
func (h *hostileWorld) targets() []target {
	key := func(n int) string { return h.ws[n%len(h.ws)].LiveKey }
	w := func(n int) world { return h.ws[n%len(h.ws)] }
	dash := func(n int) string { return h.dash[n%len(h.dash)] }
	partner := func(n int) string { return h.partners[n%len(h.partners)] }
	// A fresh click for each call that would settle or convert its customer.
	click := func(t *testing.T, n int) string { return mustClick(t, h.e.client, w(n)) }
	// Kinds of hostile values that are valid in a field of a kind:
	// free text takes SQL metacharacters (stored as sent) and a number
	// given as a string (a lone surrogate escape is refused everywhere: it
	// would be stored as U+FFFD); an optional field takes "" (absent); a
	// boolean takes true.
	text := []string{"numeric-string", "sql-quote", "sql-drop", "empty-string"}
	clipped := append([]string{"10k-string"}, text...) // click and visit texts are cut to size, not refused
	flag := []string{"bool"}
	object := []string{"object"}
	optional := []string{"empty-string"}
	// line_items takes any JSON that jsonb can hold.
	anyJSON := []string{"object", "array", "bool", "fraction", "numeric-string", "number", "huge-integer",
		"int64-overflow", "int64-underflow", "negative", "int64-min", "empty-string",
		"sql-quote", "sql-drop", "10k-string"}
	// The sale's customer_key is a lookup only (never stored on the sale):
	// a value that is not a string counts as not sent and one that finds
	// no customer lets the click_id decide (docs/decisions.md, Sale).
	lookupOnly := hostileKinds()
	return []target{
		{name: "click", method: "POST", path: "/api/v1/track/click",
			body: func(t *testing.T, n int) map[string]any {
				return map[string]any{"affiliate_url": "https://brand.example/?aff=" + w(n).Code, "page_url": "https://brand.example/",
					"additional_data": map[string]any{"test_mode": false}}
			},
			fields: map[string][]string{"affiliate_url": nil, "program_id": nil, "page_url": clipped, "referrer_url": clipped,
				"session_id": clipped, "user_agent": clipped, "page_title": clipped, "existing_click_id": clipped,
				"additional_data": object, "additional_data.test_mode": flag}},
		{name: "visit", method: "POST", path: "/api/v1/track/visit",
			body: func(t *testing.T, n int) map[string]any { return map[string]any{"program_id": w(n).ProgramID} },
			fields: map[string][]string{"program_id": {"numeric-string"}, "click_id": clipped, "session_id": clipped,
				"page_url": clipped, "referrer_url": clipped, "additional_data": object}},
		{name: "config", method: "GET", path: "/api/v1/track/config", params: map[string][]string{"program_id": nil}},
		{name: "lead-browser", method: "POST", path: "/api/v1/track/lead",
			body: func(t *testing.T, n int) map[string]any {
				return map[string]any{"click_id": click(t, n), "customer_key": "user-" + itoa(int64(n))}
			},
			fields: map[string][]string{"click_id": nil, "customer_key": text, "email": optional, "session_id": text,
				"page_url": text, "event_name": text, "click_ids": nil, "program_id": optional, "has_attribution": flag,
				"debug_mode": flag, "additional_data": object, "additional_data.test_mode": flag, "additional_data.program_id": optional}},
		{name: "lead-server", method: "POST", path: "/api/v1/track/lead", token: key,
			body: func(t *testing.T, n int) map[string]any {
				return map[string]any{"click_id": click(t, n), "customer_key": "user-" + itoa(int64(n)), "email": "u" + itoa(int64(n)) + "@buyer.example"}
			},
			fields: map[string][]string{"click_id": nil, "customer_key": text, "email": optional, "session_id": text,
				"page_url": text, "event_name": text, "additional_data": object, "additional_data.test_mode": flag, "additional_data.program_id": optional}},
		{name: "sale", method: "POST", path: "/api/v1/track/sale", token: key,
			body: func(t *testing.T, n int) map[string]any {
				return map[string]any{"transaction_id": "hostile-" + itoa(int64(n)), "amount_cents": 1000, "currency": "USD",
					"click_id": click(t, n), "provider": "stripe", "livemode": true}
			},
			fields: map[string][]string{"transaction_id": text, "amount_cents": {"number"}, "currency": nil,
				"customer_key": lookupOnly, "click_id": nil, "occurred_at": nil, "provider": nil, "provider_payment_id": text,
				"livemode": flag, "additional_data": object, "additional_data.test_mode": flag, "additional_data.program_id": nil,
				"sale_type": nil, "is_recurring": flag, "subscription_id": text, "product_id": text, "event_name": text,
				"line_items": anyJSON}},
		{name: "refund", method: "POST", path: "/api/v1/track/refund", token: key,
			body: func(t *testing.T, n int) map[string]any {
				return map[string]any{"transaction_id": "refundable-" + itoa(int64(n%len(h.ws))), "refund_amount_cents": 1,
					"refund_id": "rf-" + itoa(int64(n)), "reason": "refund"}
			},
			fields: map[string][]string{"transaction_id": nil, "refund_amount_cents": {"number"}, "refund_id": text,
				"reason": nil, "refund_reason": text}},
		{name: "readiness", method: "GET", path: "/api/v1/programs/me/readiness", token: key},
		{name: "analytics-sources", method: "GET", path: "/api/v1/programs/me/analytics/sources", token: key,
			params: map[string][]string{"from": nil, "to": nil, "limit": {"zero"}, "group_by": nil}},
		{name: "cli-status", method: "GET", path: "/api/v1/cli/status", token: key, params: map[string][]string{"program_id": nil}},
		{name: "cli-test-event", method: "POST", path: "/api/v1/cli/test-event", token: key,
			body:   func(t *testing.T, n int) map[string]any { return map[string]any{"event_type": "lead"} },
			fields: map[string][]string{"event_type": nil, "program_id": optional}},
		{name: "cli-init", method: "POST", path: "/api/v1/cli/init", token: func(n int) string { return h.cli[n%len(h.cli)] },
			body: func(t *testing.T, n int) map[string]any {
				return map[string]any{"name": "CLI " + itoa(int64(n)), "domain": "cli.example", "commission_type": "fixed", "commission_rate": 5}
			},
			fields: map[string][]string{"name": text, "domain": {"numeric-string"}, "commission_type": nil, "commission_rate": {"number", "fraction"},
				"duration_months": {"number"}, "cookie_duration": {"number"}, "lead_auth": nil, "hold_days": {"number"},
				"currency": nil, "advertiser_id": nil}},
		{name: "cli-auth-callback", method: "POST", path: "/api/v1/cli/auth/callback",
			body: func(t *testing.T, n int) map[string]any {
				return map[string]any{"state": "unknown-state", "id_token": "x.y.z"}
			},
			fields: map[string][]string{"state": nil, "id_token": nil}},
		{name: "cli-auth-confirm", method: "POST", path: "/api/v1/cli/auth/confirm",
			body: func(t *testing.T, n int) map[string]any {
				return map[string]any{"state": "unknown-state", "user_code": "BCDF-GHJK"}
			},
			fields: map[string][]string{"state": nil, "user_code": nil}},
		{name: "cli-auth-poll", method: "GET", path: "/api/v1/cli/auth/poll", params: map[string][]string{"state": nil}},
		{name: "sign-in", method: "POST", path: "/api/v1/auth/session",
			body:   func(t *testing.T, n int) map[string]any { return map[string]any{"id_token": "x.y.z"} },
			fields: map[string][]string{"id_token": nil}},
		{name: "events-listing", method: "GET", path: "/api/tracking/events/{id}", token: dash, pathParam: true,
			params: map[string][]string{"page": nil, "pageSize": nil, "eventType": nil, "dateFrom": nil, "dateTo": nil}},
		// limit 42 is a valid limit (then the default period answers).
		{name: "performance", method: "GET", path: "/api/tracking/performance/{id}", token: dash, pathParam: true,
			params: map[string][]string{"period": nil, "dateFrom": nil, "dateTo": nil, "groupBy": nil, "limit": {"number"}}},
		{name: "settings-get", method: "GET", path: "/api/v1/programs/{id}/settings", token: dash, pathParam: true},
		{name: "partners-listing", method: "GET", path: "/api/v1/programs/{id}/partners", token: dash, pathParam: true,
			params: map[string][]string{"page": nil, "pageSize": nil, "status": nil, "format": nil,
				// q is a search text of up to 100 characters: any of these is one.
				"q": {"zero", "negative", "fraction", "huge-exponent", "int64-overflow", "letters", "sql-quote", "sql-drop"}}},
		{name: "links-listing", method: "GET", path: "/api/v1/programs/{id}/links", token: dash, pathParam: true,
			params: map[string][]string{"page": nil, "pageSize": nil, "partner_id": nil, "status": nil}},
		{name: "groups-listing", method: "GET", path: "/api/v1/programs/{id}/groups", token: dash, pathParam: true},
		{name: "groups-create", method: "POST", path: "/api/v1/programs/{id}/groups", token: dash, pathParam: true,
			body: func(t *testing.T, n int) map[string]any { return map[string]any{"name": "Hostile " + itoa(int64(n))} },
			fields: map[string][]string{"name": {"numeric-string", "sql-quote", "sql-drop"}, "commission_type": nil,
				"commission_rate": {"number", "fraction"}, "duration_months": {"number"}, "hold_days": {"number"}}},
		{name: "groups-patch", method: "PATCH", path: "/api/v1/programs/" + itoa(h.ws[0].ProgramID) + "/groups/" + itoa(h.group), token: dash,
			body: func(t *testing.T, n int) map[string]any { return map[string]any{"name": "Renamed " + itoa(int64(n))} },
			fields: map[string][]string{"name": {"numeric-string", "sql-quote", "sql-drop"}, "commission_type": nil,
				"commission_rate": {"number", "fraction"}, "duration_months": {"number"}, "hold_days": {"number"}}},
		{name: "partner-patch", method: "PATCH", path: "/api/v1/programs/" + itoa(h.ws[0].ProgramID) + "/partners/" + itoa(h.ws[0].PartnerID), token: dash,
			body:   func(t *testing.T, n int) map[string]any { return map[string]any{"status": "active"} },
			fields: map[string][]string{"status": nil, "group_id": nil}},
		// Invites, applications and the public page (issue 24). The invite
		// and application ids are ones no program has: the routes refuse
		// with 404 after reading what they read.
		{name: "invites-create", method: "POST", path: "/api/v1/programs/{id}/invites", token: dash, pathParam: true,
			body: func(t *testing.T, n int) map[string]any {
				return map[string]any{"emails": []string{"hostile-" + itoa(int64(n)) + "@invitee.example"}}
			},
			// group_id 42 may be a group of the program (then accepted).
			fields: map[string][]string{"emails": nil, "partner_ids": nil, "group_id": {"number"}, "message": text}},
		{name: "invites-listing", method: "GET", path: "/api/v1/programs/{id}/invites", token: dash, pathParam: true,
			params: map[string][]string{"page": nil, "pageSize": nil, "status": nil}},
		{name: "invite-resend", method: "POST", path: "/api/v1/programs/{id}/invites/999999/resend", token: dash, pathParam: true},
		{name: "invite-cancel", method: "DELETE", path: "/api/v1/programs/{id}/invites/999999", token: dash, pathParam: true},
		{name: "applications-listing", method: "GET", path: "/api/v1/programs/{id}/applications", token: dash, pathParam: true,
			params: map[string][]string{"page": nil, "pageSize": nil, "status": nil}},
		{name: "application-approve", method: "POST", path: "/api/v1/programs/{id}/applications/999999/approve", token: dash, pathParam: true,
			body: func(t *testing.T, n int) map[string]any { return map[string]any{} }, fields: map[string][]string{"group_id": nil}},
		{name: "application-reject", method: "POST", path: "/api/v1/programs/{id}/applications/999999/reject", token: dash, pathParam: true,
			body: func(t *testing.T, n int) map[string]any { return map[string]any{} }, fields: map[string][]string{"reason": nil}},
		// Each program's public page is hostile-<id> (set above).
		{name: "public-program", method: "GET", path: "/api/v1/public/programs/hostile-{id}", pathParam: true},
		{name: "public-apply", method: "POST", path: "/api/v1/public/programs/hostile-{id}/applications", pathParam: true,
			body: func(t *testing.T, n int) map[string]any {
				return map[string]any{"name": "Hostile " + itoa(int64(n)), "email": "hostile-" + itoa(int64(n)) + "@applicant.example"}
			},
			fields: map[string][]string{"name": {"numeric-string", "sql-quote", "sql-drop"}, "email": nil, "message": text, "website": nil}},
		{name: "commissions-listing", method: "GET", path: "/api/v1/programs/{id}/commissions", token: dash, pathParam: true,
			params: map[string][]string{"page": nil, "pageSize": nil, "status": nil, "partner_id": nil, "dateFrom": nil, "dateTo": nil, "format": nil}},
		// No commission 999999999: a valid call is a 404, after the checks.
		{name: "commission-approve", method: "POST", path: "/api/v1/programs/{id}/commissions/999999999/approve", token: dash, pathParam: true},
		{name: "commission-reject", method: "POST", path: "/api/v1/programs/{id}/commissions/999999999/reject", token: dash, pathParam: true,
			body:   func(t *testing.T, n int) map[string]any { return map[string]any{"reason": "hostile"} },
			fields: map[string][]string{"reason": {"numeric-string", "sql-quote", "sql-drop"}}},
		{name: "audit-listing", method: "GET", path: "/api/v1/programs/{id}/audit", token: dash, pathParam: true,
			// action and subject_type are texts of up to 100 and 50 characters: any of these is one.
			params: map[string][]string{"page": nil, "pageSize": nil,
				"action":       {"zero", "negative", "fraction", "huge-exponent", "int64-overflow", "letters", "sql-quote", "sql-drop"},
				"subject_type": {"zero", "negative", "fraction", "huge-exponent", "int64-overflow", "letters", "sql-quote", "sql-drop"}}},
		{name: "settings-patch", method: "PATCH", path: "/api/v1/programs/{id}/settings", token: dash, pathParam: true,
			body: func(t *testing.T, n int) map[string]any { return map[string]any{} },
			fields: map[string][]string{"name": text, "domain": {"numeric-string"}, "commission_type": nil, "commission_rate": {"number", "fraction"},
				"duration_months": {"number"}, "cookie_duration": {"number"}, "lead_auth": nil, "hold_days": {"number"},
				"currency": nil, "stripe_webhook_secret": nil}},
		{name: "api-key", method: "POST", path: "/api/v1/programs/{id}/api-key", token: dash, pathParam: true,
			body: func(t *testing.T, n int) map[string]any { return map[string]any{"mode": "live"} }, fields: map[string][]string{"mode": nil}},
		{name: "stripe-connect-webhook", method: "POST", path: "/api/v1/webhooks/stripe",
			body: func(t *testing.T, n int) map[string]any {
				return map[string]any{"id": "evt_1", "type": "checkout.session.completed", "account": "acct_1"}
			},
			fields: map[string][]string{"id": nil, "type": nil, "account": nil, "data": nil}},
		{name: "stripe-brand-webhook", method: "POST", path: "/webhooks/stripe/{id}", pathParam: true,
			body: func(t *testing.T, n int) map[string]any {
				return map[string]any{"id": "evt_1", "type": "checkout.session.completed"}
			},
			fields: map[string][]string{"id": nil, "type": nil, "data": nil}},
		{name: "operator-program", method: "POST", path: "/api/operator/v1/programs", token: func(int) string { return opToken },
			body: func(t *testing.T, n int) map[string]any {
				return map[string]any{"workspace_id": h.ws[0].WorkspaceID, "name": "Op " + itoa(int64(n)), "domain": "op.example",
					"commission_type": "fixed", "commission_rate": 5}
			},
			fields: map[string][]string{"workspace_id": nil, "name": text, "domain": {"numeric-string"}, "commission_type": nil,
				"commission_rate": {"number", "fraction"}, "duration_months": {"number"}, "cookie_duration": {"number"},
				"lead_auth": nil, "hold_days": {"number"}, "currency": nil}},
		{name: "operator-withdrawal", method: "POST", path: "/api/operator/v1/partners/{id}/withdrawals", token: func(int) string { return opToken }, pathParam: true,
			body:   func(t *testing.T, n int) map[string]any { return map[string]any{"currency": "USD", "amount": 1} },
			fields: map[string][]string{"currency": nil, "amount": nil}},
		{name: "operator-customers", method: "GET", path: "/api/operator/v1/customers", token: func(int) string { return opToken },
			params: map[string][]string{"program_id": nil, "customer_key": nil, "click_id": nil},
			query: func() map[string]string {
				return map[string]string{"program_id": itoa(h.ws[0].ProgramID), "customer_key": "nobody"}
			}},
		{name: "operator-commission", method: "GET", path: "/api/operator/v1/commissions/{id}", token: func(int) string { return opToken }, pathParam: true},
		{name: "operator-withdrawal-get", method: "GET", path: "/api/operator/v1/withdrawals/{id}", token: func(int) string { return opToken }, pathParam: true},
		{name: "agent-program", method: "GET", path: "/api/agent/v1/programs/{id}", pathParam: true},
		{name: "webhook-delete", method: "DELETE", path: "/api/v1/programs/{id}/webhooks/999999", token: dash, pathParam: true},
		// The sign-in page shows any state that is text (the callback checks it).
		{name: "cli-login-page", method: "GET", path: "/cli/login", params: map[string][]string{"state": {"zero", "negative",
			"fraction", "huge-exponent", "int64-overflow", "10k-digits", "letters", "sql-quote", "sql-drop"}}},
		// Payouts (issue 26). No program has an approved balance: a valid
		// run creates nothing, a valid request is a 409; no payout
		// 999999999: a valid mark is a 404, after the checks.
		{name: "payouts-listing", method: "GET", path: "/api/v1/programs/{id}/payouts", token: dash, pathParam: true,
			params: map[string][]string{"page": nil, "pageSize": nil, "status": nil, "partner_id": nil, "format": nil}},
		{name: "payouts-due", method: "GET", path: "/api/v1/programs/{id}/payouts/due", token: dash, pathParam: true},
		{name: "payouts-run", method: "POST", path: "/api/v1/programs/{id}/payouts", token: dash, pathParam: true,
			body: func(t *testing.T, n int) map[string]any {
				return map[string]any{"partner_ids": []int64{h.ws[0].PartnerID}}
			},
			fields: map[string][]string{"partner_ids": nil}},
		{name: "payout-mark-paid", method: "POST", path: "/api/v1/programs/{id}/payouts/999999999/mark-paid", token: dash, pathParam: true,
			body:   func(t *testing.T, n int) map[string]any { return map[string]any{"external_reference": "hostile"} },
			fields: map[string][]string{"external_reference": {"numeric-string", "sql-quote", "sql-drop"}}},
		{name: "payout-mark-failed", method: "POST", path: "/api/v1/programs/{id}/payouts/999999999/mark-failed", token: dash, pathParam: true,
			body:   func(t *testing.T, n int) map[string]any { return map[string]any{"reason": "hostile"} },
			fields: map[string][]string{"reason": {"numeric-string", "sql-quote", "sql-drop"}}},
		{name: "partner-payout-request", method: "POST", path: "/api/v1/partner/programs/{id}/payouts", pathParam: true,
			token:  partner,
			body:   func(t *testing.T, n int) map[string]any { return map[string]any{"amount": 60, "currency": "USD"} },
			fields: map[string][]string{"amount": nil, "currency": nil}},
		// The partner API (issue 26): the first program's partner. No
		// invite, notification or application the ids name: a valid call
		// is a 404, after the checks; applying to its own program is a 409.
		{name: "partner-sign-in", method: "POST", path: "/api/v1/partner/session",
			body:   func(t *testing.T, n int) map[string]any { return map[string]any{"id_token": "x.y.z"} },
			fields: map[string][]string{"id_token": nil}},
		{name: "partner-programs", method: "GET", path: "/api/v1/partner/programs", token: partner},
		{name: "partner-invites", method: "GET", path: "/api/v1/partner/invites", token: partner},
		{name: "partner-invite-accept-token", method: "POST", path: "/api/v1/partner/invites/accept", token: partner,
			body:   func(t *testing.T, n int) map[string]any { return map[string]any{"token": "no-such-invite-token"} },
			fields: map[string][]string{"token": {"numeric-string", "sql-quote", "sql-drop"}}},
		{name: "partner-invite-accept", method: "POST", path: "/api/v1/partner/invites/{id}/accept", token: partner, pathParam: true},
		{name: "partner-invite-decline", method: "POST", path: "/api/v1/partner/invites/{id}/decline", token: partner, pathParam: true},
		{name: "partner-apply", method: "POST", path: "/api/v1/partner/applications", token: partner,
			body: func(t *testing.T, n int) map[string]any {
				return map[string]any{"slug": "hostile-" + itoa(h.ws[0].ProgramID), "message": "hello"}
			},
			fields: map[string][]string{"slug": nil, "message": text}},
		{name: "partner-links", method: "GET", path: "/api/v1/partner/programs/{id}/links", token: partner, pathParam: true},
		{name: "partner-link-create", method: "POST", path: "/api/v1/partner/programs/{id}/links", token: partner, pathParam: true,
			body: func(t *testing.T, n int) map[string]any {
				return map[string]any{"code": "hostile-own-" + itoa(int64(n))}
			},
			fields: map[string][]string{"code": nil}},
		{name: "partner-stats", method: "GET", path: "/api/v1/partner/programs/{id}/stats", token: partner, pathParam: true,
			params: map[string][]string{"period": nil, "dateFrom": nil, "dateTo": nil}},
		{name: "partner-commissions", method: "GET", path: "/api/v1/partner/commissions", token: partner,
			params: map[string][]string{"page": nil, "pageSize": nil, "program_id": nil, "status": nil}},
		{name: "partner-balances", method: "GET", path: "/api/v1/partner/balances", token: partner},
		{name: "partner-notifications", method: "GET", path: "/api/v1/partner/notifications", token: partner,
			params: map[string][]string{"limit": {"number"}}},
		{name: "partner-notification-read", method: "POST", path: "/api/v1/partner/notifications/{id}/read", token: partner, pathParam: true},
		{name: "partner-notifications-read-all", method: "POST", path: "/api/v1/partner/notifications/read-all", token: partner},
		{name: "partner-payouts", method: "GET", path: "/api/v1/partner/payouts", token: partner},
		// The referral widget: a token for an email of the key's program.
		{name: "embed-token", method: "POST", path: "/api/v1/programs/{id}/embed-tokens", token: key, pathParam: true,
			body: func(t *testing.T, n int) map[string]any {
				return map[string]any{"email": "embed-" + itoa(int64(n)) + "@user.example", "name": "Embed User"}
			},
			fields: map[string][]string{"email": nil, "name": {"numeric-string", "sql-quote", "sql-drop"}}},
		{name: "embed-page", method: "GET", path: "/embed/referrals", params: map[string][]string{"token": nil}, htmlPage: true},
		{name: "partner-payout-method", method: "PUT", path: "/api/v1/partner/payout-method", token: partner,
			body: func(t *testing.T, n int) map[string]any {
				return map[string]any{"method": "bank_transfer", "details": map[string]any{"account_holder": "Pat", "iban": "DE89370400440532013000", "country": "DE"}}
			},
			fields: map[string][]string{"method": nil, "details": nil, "details.account_holder": {"numeric-string", "sql-quote", "sql-drop"},
				"details.iban": nil, "details.country": nil}},
		// The web dashboard's API (issue 27). The dashboard tokens are the
		// first program's owner's, whose only workspace a valid program
		// goes to; no endpoint 999999: a valid log or test event is a 404,
		// after the checks.
		{name: "my-programs", method: "GET", path: "/api/v1/programs", token: dash},
		{name: "my-program-create", method: "POST", path: "/api/v1/programs", token: dash,
			body: func(t *testing.T, n int) map[string]any {
				return map[string]any{"name": "Hostile " + itoa(int64(n)), "domain": "hostile" + itoa(int64(n)) + ".example",
					"commission_type": "percent", "commission_rate": 10}
			},
			fields: map[string][]string{"workspace_id": {"number"}, "name": text, "domain": {"numeric-string"}, "commission_type": nil,
				"commission_rate": {"number", "fraction"}, "duration_months": {"number"}, "cookie_duration": {"number"}, "lead_auth": nil,
				"hold_days": {"number"}, "currency": nil}},
		{name: "my-program", method: "GET", path: "/api/v1/programs/{id}", token: dash, pathParam: true},
		{name: "program-readiness", method: "GET", path: "/api/v1/programs/{id}/readiness", token: dash, pathParam: true},
		{name: "webhook-deliveries", method: "GET", path: "/api/v1/programs/{id}/webhooks/999999/deliveries", token: dash, pathParam: true,
			params: map[string][]string{"limit": nil}},
		{name: "webhook-test-event", method: "POST", path: "/api/v1/programs/{id}/webhooks/999999/test", token: dash, pathParam: true},
	}
}

// stringKeys turns a map of values into one of (empty) lists, for
// sortedKeys.
func stringKeys(m map[string]string) map[string][]string {
	out := make(map[string][]string, len(m))
	for k := range m {
		out[k] = nil
	}
	return out
}

// hostileKinds is every kind (for a field that takes any JSON).
func hostileKinds() []string {
	var out []string
	for _, v := range hostileValues {
		out = append(out, v.kind)
	}
	return out
}

// setRaw encodes body with the field at dotted path set to the raw JSON
// text v (creating objects on the way).
func setRaw(t *testing.T, body map[string]any, path, v string) []byte {
	t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	raw := json.RawMessage(v)
	parts := strings.Split(path, ".")
	m := body
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = marker
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	// json.Marshal would validate (and re-encode) a RawMessage: put the
	// value in by hand, byte for byte.
	return []byte(strings.Replace(string(b), `"`+marker+`"`, string(raw), 1))
}

const marker = "HOSTILE_VALUE_MARKER_7f3a"

func sortedKeys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestHostileSignedStripeEvents: events that carry a valid signature are
// Stripe's own, whatever their content: the edge stores each (answers
// 200, or 400 when it is not an event at all), never 500 (Stripe would
// retry it for days). Strings the brand's customers typed (a NUL
// character, a lone surrogate) are among what Stripe may relay; a number
// beyond the range of a double is not a Stripe event (stripe-go cannot
// read it) and is refused with 400.
func TestHostileSignedStripeEvents(t *testing.T) {
	t.Parallel()
	sc := report(t, "hostile/signed-stripe-events")
	st := sharedStack(t)
	const secret = "whsec_reliability_signed_hostile"
	e := st.startEdge(t, map[string]string{"STRIPE_WEBHOOK_SECRET": secret})
	w := mustWorld(t, e.client, nil)
	const account = "acct_1ReliabilityHostile"
	e.must(t, 200, req{method: "POST", path: "/api/operator/v1/programs/" + itoa(w.ProgramID) + "/processor-account", token: opToken,
		body: map[string]any{"account_id": account}})
	stored := 0
	for _, v := range hostileValues {
		if v.kind == "invalid-utf8" { // not JSON: Stripe sends UTF-8
			continue
		}
		ev := stripetest.CheckoutCompleted(account).Set("metadata.note", marker)
		payload := []byte(strings.Replace(string(ev.Payload()), `"`+marker+`"`, v.json, 1))
		if !strings.Contains(string(payload), `"note":`) {
			t.Fatal("no metadata note in the event")
		}
		rep, err := e.call(req{method: "POST", path: "/api/v1/webhooks/stripe", body: payload,
			header: map[string]string{"Stripe-Signature": stripetest.Sign(payload, secret, time.Now())}})
		if err != nil {
			t.Fatalf("%s: %v", v.kind, err)
		}
		if (v.kind == "huge-exponent" || v.kind == "10k-digits") && rep.Status == 400 && rep.errObj()["message"] == "Payload is not a Stripe event" {
			continue
		}
		if rep.Status != 200 {
			t.Errorf("signed event with metadata.note = %s: %s", v.kind, rep)
			continue
		}
		stored++
	}
	n := st.count(t, `SELECT count(*) FROM processor_events`)
	sc.counts(stored, n)
	if n != stored {
		t.Errorf("%d events stored, %d answered 200", n, stored)
	}
}

// ==== hostile input on the dashboard's pages (issue 27) ====

// hostileFormValues are put, one at a time, in every field of every page
// form: text no field takes (NUL, bytes that are not UTF-8) and a value
// longer than any field.
var hostileFormValues = []hostileValue{
	{"nul", "a\x00b"},
	{"invalid-utf8", "a\xff\xfeb"},
	{"invalid-sequence", "\xc3\x28"},
	{"utf16-surrogate", "\xed\xa0\x80"},
	{"10k-string", long10k},
}

// TestHostileInputPages sends every page route under /app/ and /partner/
// (ingest/web/testdata/page_routes.txt) hostile ids in each path
// parameter, a query string that is not text, hostile values in each
// form field, forms with no, a garbage or a hostile form token, a form
// without Content-Type, an oversized form, and no cookie at all. Every
// answer is a 4xx HTML page that says why (or a 303 to /login without a
// cookie), never a 5xx, never a JSON envelope, and nothing is stored.
func TestHostileInputPages(t *testing.T) {
	t.Parallel()
	sc := report(t, "hostile/every-page-route")
	h := newHostileWorld(t)
	pc := newPageClient(h.e)
	w := h.ws[0]
	// Ids of the first program; no other row has 999999999.
	ids := map[string]string{"id": itoa(w.ProgramID)}
	for _, r := range pageRoutes(t) {
		for _, p := range r.params() {
			if _, ok := ids[p]; !ok {
				ids[p] = "999999999"
			}
		}
	}
	csrf := map[string]string{}
	for _, tok := range h.dash {
		csrf[tok] = pc.csrfOf(t, brandCookie, tok)
	}
	for _, tok := range h.partners {
		csrf[tok] = pc.csrfOf(t, partnerCookie, tok)
	}
	seq := 0
	refused := 0
	for _, r := range pageRoutes(t) {
		t.Run(strings.TrimPrefix(r.String(), " "), func(t *testing.T) {
			// The n-th request's session: the owner's or the partner's.
			as := func() (string, string) {
				seq++
				if strings.HasPrefix(r.pattern, "/partner/") {
					return partnerCookie, h.partners[seq%len(h.partners)]
				}
				return brandCookie, h.dash[seq%len(h.dash)]
			}
			send := func(what string, pr pageReq, signedIn bool) {
				t.Helper()
				pr.method = r.method
				if r.method == "GET" {
					pr.form, pr.raw = nil, nil
				}
				h.attackPage(t, pc, r, pr, what, signedIn)
				refused++
			}
			valid := r.fill(t, ids)
			form := func(tok string) url.Values { return pageForm(r, ids, csrf[tok]) }

			for _, param := range r.params() {
				for _, v := range hostilePathValues {
					hostile := map[string]string{}
					for k, id := range ids {
						hostile[k] = id
					}
					hostile[param] = v.json
					name, tok := as()
					send(":"+param+"="+v.kind, pageReq{path: r.fill(t, hostile), cookies: map[string]string{name: tok}, form: form(tok)}, true)
				}
			}
			for _, v := range hostileQueries {
				name, tok := as()
				send("query "+v.kind, pageReq{path: valid + "?" + v.json, cookies: map[string]string{name: tok}, form: form(tok)}, true)
			}
			send("no cookie", pageReq{path: valid, form: url.Values{"csrf": {"x"}}}, false)
			send("no cookie, hostile query", pageReq{path: valid + "?" + hostileQueries[0].json}, false)
			if r.method != "POST" {
				return
			}
			for _, field := range sortedKeys(stringKeys(flatten(form(h.dash[0])))) {
				if field == "csrf" {
					continue
				}
				for _, v := range hostileFormValues {
					name, tok := as()
					f := form(tok)
					f.Set(field, v.json)
					send(field+"="+v.kind, pageReq{path: valid, cookies: map[string]string{name: tok}, form: f}, true)
				}
			}
			for _, v := range append([]hostileValue{{"missing", ""}, {"garbage", "not-the-token"}}, hostileFormValues...) {
				name, tok := as()
				f := form(tok)
				if v.kind == "missing" {
					f.Del("csrf")
				} else {
					f.Set("csrf", v.json)
				}
				send("csrf "+v.kind, pageReq{path: valid, cookies: map[string]string{name: tok}, form: f}, true)
			}
			name, tok := as()
			send("form without Content-Type", pageReq{path: valid, cookies: map[string]string{name: tok}, raw: []byte(form(tok).Encode())}, true)
			name, tok = as()
			big := form(tok)
			big.Set("padding", strings.Repeat("x", 70<<10))
			send("oversized form", pageReq{path: valid, cookies: map[string]string{name: tok}, form: big}, true)
		})
	}
	sc.note("%d hostile page requests over %d page routes refused with a 4xx HTML page or a redirect to sign-in; nothing stored", refused, len(pageRoutes(t)))
}

// flatten turns form values into one value per field (the fields to
// attack).
func flatten(f url.Values) map[string]string {
	out := make(map[string]string, len(f))
	for k, v := range f {
		out[k] = strings.Join(v, ",")
	}
	return out
}

// attackPage sends one hostile page request and checks its answer: a 4xx
// HTML page with a message (signed in) or a redirect to /login (no
// cookie), never a 5xx or a JSON envelope, and nothing stored.
func (h *hostileWorld) attackPage(t *testing.T, pc *pageClient, r pageRoute, pr pageReq, what string, signedIn bool) {
	t.Helper()
	h.clean = ""
	h.waitRelayed(t)
	before := h.rows(t)
	rep, err := pc.call(pr)
	switch {
	case err != nil:
		t.Errorf("%s %s: no answer: %v", r, what, err)
		return
	case rep.Status == 429:
		t.Fatalf("%s %s: rate limited: %s", r, what, rep)
	case !signedIn && toLogin(rep):
	case !signedIn && rep.Status >= 400 && rep.Status < 500 && pageProblem(rep) == "":
	case !signedIn:
		t.Errorf("%s %s: %s, want a redirect to /login or a 4xx page", r, what, rep)
	default:
		if p := pageProblem(rep); p != "" {
			t.Errorf("%s %s: %s: %s", r, what, p, rep)
		}
	}
	if after := h.rows(t); after != before {
		t.Errorf("%s %s: refused (%d) but stored something: rows %s → %s", r, what, rep.Status, before, after)
	}
}
