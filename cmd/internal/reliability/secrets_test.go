package reliability

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"
	"github.com/redis/go-redis/v9"

	"github.com/partnertrack/partnertrack/cmd/internal/faulttest"
	"github.com/partnertrack/partnertrack/ingest/oidc/testissuer"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/ledger/stripetest"
)

// TestSecretsHashedAndNeverLogged hands out every kind of key and token
// (program live and test keys, a regenerated key, dashboard, sign-in and
// CLI tokens, a CLI login state, an agent key) and configures every kind
// of secret (the operator token, the Connect signing secret, a program's
// signing secret), then uses each of them on every route it opens, and
// misuses it: near-misses, in the query string, in a body, in the wrong
// header, over the rate limit, after its revocation. The edge and the
// worker log at debug level, and the rate limits live in Redis. Then:
// no table holds a key or token in clear (only their SHA-256), nor the
// program's signing secret (sealed with SECRETS_KEY, the development key
// here: it must be readable to verify signatures, and is never returned);
// no Redis key or value holds any; no log line of either process holds
// any secret.
func TestSecretsHashedAndNeverLogged(t *testing.T) {
	t.Parallel()
	sc := report(t, "isolation/secrets-hashed-and-never-logged")
	pg := pgtest.New(t)
	rd := faulttest.StartRedis(t, faulttest.RedisOptions{})
	opts, _ := redis.ParseURL(rd.URL())
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { rdb.Close() })
	iss := testissuer.New(t)
	st := ownStack(t, pg.URL, rd.URL())
	const connect = "whsec_reliability_connect_never_logged"
	st.extra = map[string]string{"LOG_LEVEL": "debug", "RATE_LIMIT_STORE": "redis"}
	e := st.startEdge(t, map[string]string{"STRIPE_WEBHOOK_SECRET": connect,
		"OIDC_ISSUER_URL": iss.URL, "OIDC_CLIENT_ID": testissuer.ClientID})
	st.startWorker(t, []string{"--concurrency", "2"}, nil)

	var hashed []string // keys and tokens: never stored in clear
	keep := func(what, s string) string {
		secret(what, s)
		hashed = append(hashed, s)
		return s
	}
	w := mustWorld(t, e.client, nil)
	keep("live key", w.LiveKey)
	keep("test key", w.TestKey)
	keep("dashboard token", w.OwnerToken)
	keep("operator token", opToken)
	agent := keep("agent key", e.must(t, 201, req{method: "POST", path: "/api/operator/v1/agent-keys", token: opToken,
		body: map[string]any{"workspace_id": w.WorkspaceID, "scopes": []string{"programs:read", "programs:write"}}}).data()["key"].(string))
	signin := keep("sign-in token", e.must(t, 200, req{method: "POST", path: "/api/v1/auth/session",
		body: map[string]any{"id_token": iss.Token(t, "sub-"+w.OwnerEmail, w.OwnerEmail)}}).data()["token"].(string))
	cli := keep("CLI login token", mustCLIToken(t, e, iss, w.OwnerEmail))
	state := e.must(t, 200, req{method: "POST", path: "/api/v1/cli/auth/start"}).data()["state"].(string)
	keep("CLI login state", state)
	programSecret := "whsec_reliability_program_never_logged"
	secret("program signing secret", programSecret)
	pid := itoa(w.ProgramID)
	e.must(t, 200, req{method: "PATCH", path: "/api/v1/programs/" + pid + "/settings", token: w.OwnerToken,
		body: map[string]any{"stripe_webhook_secret": programSecret}})
	e.must(t, 200, req{method: "POST", path: "/api/operator/v1/programs/" + pid + "/processor-account", token: opToken,
		body: map[string]any{"account_id": "acct_1NeverLogged"}})

	click := mustClick(t, e.client, w)
	uses := 0
	use := func(r req) {
		t.Helper()
		if r.header == nil {
			r.header = map[string]string{}
		}
		r.header["X-Forwarded-For"] = nextIP()
		if _, err := e.call(r); err != nil {
			t.Errorf("%s %s: %v", r.method, r.path, err)
		}
		uses++
	}
	all := []string{w.LiveKey, w.TestKey, w.OwnerToken, signin, cli, agent, opToken}
	for _, tok := range all {
		for _, r := range []req{
			{method: "POST", path: "/api/v1/track/sale", body: map[string]any{"transaction_id": "s-" + tok[len(tok)-6:], "amount_cents": 1000, "click_id": click}},
			{method: "POST", path: "/api/v1/track/refund", body: map[string]any{"transaction_id": "s-" + tok[len(tok)-6:], "refund_amount_cents": 10}},
			{method: "POST", path: "/api/v1/track/lead", body: map[string]any{"click_id": click, "customer_key": "k"}},
			{method: "POST", path: "/api/v1/track/click", body: map[string]any{"affiliate_url": "https://x.example/?aff=" + w.Code}},
			{method: "GET", path: "/api/v1/programs/me/readiness"},
			{method: "GET", path: "/api/v1/programs/me/analytics/sources"},
			{method: "GET", path: "/api/v1/cli/status"},
			{method: "POST", path: "/api/v1/cli/test-event", body: map[string]any{"event_type": "click"}},
			{method: "GET", path: "/api/v1/cli/programs"},
			{method: "GET", path: "/api/tracking/events/" + pid},
			{method: "GET", path: "/api/v1/programs/" + pid + "/settings"},
			{method: "GET", path: "/api/operator/v1/commissions/1"},
			{method: "GET", path: "/api/agent/v1/programs"},
			{method: "GET", path: "/ops/queues"},
		} {
			r.token = tok
			use(r)
			// Near misses, and the secret where it does not belong.
			r.token = tok + "x"
			use(r)
			r.token = ""
			r.header = map[string]string{"Authorization": "bearer " + tok, "X-Api-Key": tok, "Cookie": "session=" + tok}
			use(r)
			r.header = nil
			r.path += "?api_key=" + url.QueryEscape(tok) + "&token=" + url.QueryEscape(tok)
			use(r)
		}
		use(req{method: "POST", path: "/api/v1/track/sale", token: w.LiveKey, body: map[string]any{"transaction_id": tok, "amount_cents": "x"}})
		use(req{method: "POST", path: "/api/v1/track/lead", body: map[string]any{"click_id": tok, "customer_key": tok, "email": tok}})
	}
	// Over the limits, with a key and with a login token.
	for i := 0; i < 65; i++ {
		use(req{method: "GET", path: "/api/v1/cli/status", token: w.TestKey})
		use(req{method: "GET", path: "/api/v1/cli/programs", token: cli})
	}
	// The CLI login state in the page and the poll, as the CLI sends it.
	use(req{method: "GET", path: "/cli/login?state=" + url.QueryEscape(state)})
	use(req{method: "GET", path: "/api/v1/cli/auth/poll?state=" + url.QueryEscape(state)})
	// Processor events signed with each secret, and with the wrong one.
	for _, sec := range []string{connect, programSecret, connect + "x"} {
		for _, path := range []string{"/api/v1/webhooks/stripe", "/webhooks/stripe/" + pid} {
			ev := stripetest.CheckoutCompleted("acct_1NeverLogged").Set("metadata.svc_click_id", click)
			payload := ev.Payload()
			use(req{method: "POST", path: path, body: payload, header: map[string]string{"Stripe-Signature": stripetest.Sign(payload, sec, time.Now())}})
		}
	}
	// Regenerate the live key (the old one fails, the new one is secret
	// too), and sign out (the token fails at once).
	newKey := keep("regenerated live key", e.must(t, 200, req{method: "POST", path: "/api/v1/programs/" + pid + "/api-key", token: w.OwnerToken}).data()["api_key"].(string))
	use(req{method: "GET", path: "/api/v1/cli/status", token: w.LiveKey})
	use(req{method: "GET", path: "/api/v1/cli/status", token: newKey})
	e.must(t, 200, req{method: "DELETE", path: "/api/v1/auth/session", token: signin})
	e.must(t, 401, req{method: "GET", path: "/api/tracking/events/" + pid, token: signin})
	// Settings never return the signing secret.
	if rep := e.must(t, 200, req{method: "GET", path: "/api/v1/programs/" + pid + "/settings", token: w.OwnerToken}); strings.Contains(string(rep.Raw), programSecret) {
		t.Errorf("settings return the signing secret: %s", rep.Raw)
	}
	// Let the worker process what was queued (its logs count too).
	st.waitIdle(t, rdb, time.Minute)

	// No table holds a key or token in clear.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rows, err := st.db.QueryContext(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		tables = append(tables, n)
	}
	rows.Close()
	var patterns []string
	for _, s := range hashed {
		patterns = append(patterns, "%"+s+"%")
	}
	patterns = append(patterns, "%"+strings.TrimPrefix(programSecret, "whsec_")+"%")
	scanned := 0
	for _, tbl := range tables {
		var n int
		q := fmt.Sprintf(`SELECT count(*) FROM %s x WHERE row_to_json(x)::text LIKE ANY($1)`, tbl)
		if err := st.db.QueryRowContext(ctx, q, pq.Array(patterns)).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if n > 0 {
			t.Errorf("table %s holds a key, token or signing secret in clear (%d rows)", tbl, n)
		}
		var rowsIn int
		st.db.QueryRowContext(ctx, fmt.Sprintf(`SELECT count(*) FROM %s`, tbl)).Scan(&rowsIn)
		scanned += rowsIn
	}
	// The keys are there, hashed: each program and agent key has its row.
	if n := st.count(t, `SELECT count(*) FROM program_keys WHERE program_id = $1`, w.ProgramID); n != 2 {
		t.Errorf("%d key rows for the program, want its live and test keys", n)
	}
	// No Redis key or value holds a secret.
	redisKeys := 0
	iter := rdb.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		redisKeys++
		var val string
		switch typ := rdb.Type(ctx, k).Val(); typ {
		case "string":
			val = rdb.Get(ctx, k).Val()
		case "hash":
			val = fmt.Sprint(rdb.HGetAll(ctx, k).Val())
		case "list":
			val = fmt.Sprint(rdb.LRange(ctx, k, 0, -1).Val())
		case "set":
			val = fmt.Sprint(rdb.SMembers(ctx, k).Val())
		case "zset":
			val = fmt.Sprint(rdb.ZRange(ctx, k, 0, -1).Val())
		}
		secrets.Range(func(s, what any) bool {
			if strings.Contains(k, s.(string)) || strings.Contains(val, s.(string)) {
				t.Errorf("Redis key %.60q holds a secret (%s)", k, what)
			}
			return true
		})
	}
	if redisKeys == 0 {
		t.Errorf("Redis is empty: the rate limits did not use it")
	}
	sc.note("%d uses and misuses of %d keys and tokens; %d rows in %d tables and %d Redis keys hold none in clear; the logs are scanned when the processes stop",
		uses, len(all)+1, scanned, len(tables), redisKeys)
}
