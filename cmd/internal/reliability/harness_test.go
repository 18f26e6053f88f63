package reliability

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ingest/apidoc/apitest"

	"github.com/hibiken/asynq"
	_ "github.com/lib/pq"
	"github.com/redis/go-redis/v9"

	"github.com/partnertrack/partnertrack/cmd/internal/faulttest"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/workers/redistest"
)

// opToken is the operator token of every edge the suite starts (a secret
// the log scans look for).
const opToken = "op_reliability_7f3a9c2e51d84b06"

// secrets are every key, token, signing secret and login state the suite
// hands out or configures; no process may ever log one (checked when each
// process ends, in every test).
var secrets sync.Map // secret → what it is

func secret(what, s string) {
	if len(s) >= 12 {
		secrets.Store(s, what)
	}
}

func init() { secret("operator token", opToken) }

// scanLogs fails the test when p logged any secret handed out so far.
func scanLogs(t *testing.T, p *faulttest.Process) {
	t.Helper()
	logs := p.Logs.Text()
	secrets.Range(func(k, v any) bool {
		if strings.Contains(logs, k.(string)) {
			t.Errorf("the %s logged a secret (%s)", p.Name, v)
		}
		return true
	})
}

// stack is the world of one scenario: a database, a Redis and a queue
// namespace, and the edges and workers started over them.
type stack struct {
	dbURL    string
	db       *sql.DB // the test's own connection, for counting rows
	redisURL string
	ns       string
	procs    []*faulttest.Process
	extra    map[string]string
}

// sharedStack runs over the shared servers: a fresh database cloned by
// pgtest, and a queue namespace of its own on the shared Redis.
func sharedStack(t *testing.T) *stack {
	t.Helper()
	pg := pgtest.New(t)
	rdb := redistest.Client(t)
	return &stack{dbURL: pg.URL, db: pg.DB.DB.DB, redisURL: redistest.URL(), ns: string(redistest.Namespace(t, rdb))}
}

// ownStack runs over the given DSN and Redis URL (servers of the test's
// own, which it may stop).
func ownStack(t *testing.T, dbURL, redisURL string) *stack {
	t.Helper()
	db, err := sql.Open("postgres", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(8)
	t.Cleanup(func() { db.Close() })
	return &stack{dbURL: dbURL, db: db, redisURL: redisURL, ns: "rel:"}
}

// env is the environment of a process of the stack.
func (st *stack) env(extra map[string]string) map[string]string {
	e := map[string]string{
		"DATABASE_URL":    st.dbURL,
		"REDIS_URL":       st.redisURL,
		"QUEUE_NAMESPACE": st.ns,
		"LISTEN_ADDR":     "127.0.0.1:0",
		"OPERATOR_TOKEN":  opToken,
		"PUBLIC_BASE_URL": "http://track.test",
		// Tests pose as many clients through X-Forwarded-For.
		"TRUSTED_PROXIES": "127.0.0.1/32",
		"LOG_LEVEL":       "info",
		"LOG_FORMAT":      "json",
	}
	for k, v := range st.extra {
		e[k] = v
	}
	for k, v := range extra {
		e[k] = v
	}
	return e
}

// edge is a running edge binary.
type edge struct {
	*faulttest.Process
	Addr string
	*client
}

// startEdge starts an edge and waits until it listens. When the test
// ends, after the edge was stopped, its logs are scanned for secrets.
func (st *stack) startEdge(t *testing.T, extra map[string]string) *edge {
	t.Helper()
	env := st.env(extra)
	secret("Stripe webhook secret", env["STRIPE_WEBHOOK_SECRET"])
	var p *faulttest.Process
	t.Cleanup(func() {
		if p != nil {
			scanLogs(t, p)
		}
	})
	p = faulttest.StartProcess(t, bins["edge"], nil, env)
	st.procs = append(st.procs, p)
	line := p.WaitLog(t, "edge listening", 60*time.Second)
	addr, _ := line["addr"].(string)
	return &edge{Process: p, Addr: addr, client: newClient(t, "http://"+addr)}
}

// startWorker starts a worker with the given flags and waits until it runs.
func (st *stack) startWorker(t *testing.T, args []string, extra map[string]string) *faulttest.Process {
	t.Helper()
	var p *faulttest.Process
	t.Cleanup(func() {
		if p != nil {
			scanLogs(t, p)
		}
	})
	// At its normal priority: here it shares the machine with the other
	// packages' tests, not with an edge it should yield to, and a worker
	// yielding to them would only make the suite slower.
	args = append([]string{"--nice", "0"}, args...)
	p = faulttest.StartProcess(t, bins["worker"], args, st.env(extra))
	st.procs = append(st.procs, p)
	p.WaitLog(t, "worker started", 60*time.Second)
	return p
}

// count runs a counting query.
func (st *stack) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := st.db.QueryRowContext(ctx, query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// waitCount polls a counting query until it returns want, and fails the
// test with the last count after timeout.
func (st *stack) waitCount(t *testing.T, want int, timeout time.Duration, query string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var n int
		err := st.db.QueryRow(query, args...).Scan(&n)
		if err == nil && n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d after %s (err %v), want %d", query, n, timeout, err, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitIdle waits until the stack's workers have taken every task queued
// in its namespace on rdb (none pending or running) and the outbox holds
// nothing unsent, and fails the test with what is left after timeout.
func (st *stack) waitIdle(t *testing.T, rdb redis.UniversalClient, timeout time.Duration) {
	t.Helper()
	insp := asynq.NewInspectorFromRedisClient(rdb)
	deadline := time.Now().Add(timeout)
	for {
		var busy []string
		queues, err := insp.Queues()
		if err != nil {
			busy = append(busy, err.Error())
		}
		for _, q := range queues {
			if !strings.HasPrefix(q, st.ns) {
				continue
			}
			if info, err := insp.GetQueueInfo(q); err != nil {
				busy = append(busy, q+": "+err.Error())
			} else if info.Pending+info.Active > 0 {
				busy = append(busy, fmt.Sprintf("%s: %d pending, %d active", q, info.Pending, info.Active))
			}
		}
		if n := st.count(t, `SELECT count(*) FROM outbox WHERE sent_at IS NULL`); n > 0 {
			busy = append(busy, fmt.Sprintf("%d outbox messages unsent", n))
		}
		if len(busy) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the workers are not idle after %s: %s", timeout, strings.Join(busy, "; "))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// client calls an edge.
type client struct {
	base  string
	http  *http.Client
	calls atomic.Int64 // calls sent, for tests that must know none came between two of theirs
}

// newClient returns a client of the edge at base whose every exchange is
// checked against the OpenAPI document.
func newClient(t *testing.T, base string) *client {
	tr := &http.Transport{
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     30 * time.Second,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
	}
	return &client{base: base, http: &http.Client{Transport: apitest.Default(t).Transport(t, tr), Timeout: 60 * time.Second}}
}

// reply is an edge's answer.
type reply struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    []byte
}

// data is the data object of a reply (nil when absent).
func (r reply) data() map[string]any {
	d, _ := r.Body["data"].(map[string]any)
	return d
}

// errObj is the error object of a reply (nil when absent).
func (r reply) errObj() map[string]any {
	e, _ := r.Body["error"].(map[string]any)
	return e
}

func (r reply) String() string { return fmt.Sprintf("%d %s", r.Status, r.Raw) }

// req is one request: body is a string or []byte sent as is, or a value
// encoded as JSON; token goes in Authorization: Bearer.
type req struct {
	method, path, token string
	body                any
	header              map[string]string
}

// call sends a request; a transport error is returned, not fatal (the
// fault tests count them).
func (c *client) call(r req) (reply, error) {
	c.calls.Add(1)
	var rd io.Reader
	switch b := r.body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			return reply{}, err
		}
		rd = bytes.NewReader(buf)
	}
	hr, err := http.NewRequest(r.method, c.base+r.path, rd)
	if err != nil {
		return reply{}, err
	}
	if rd != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	if r.token != "" {
		hr.Header.Set("Authorization", "Bearer "+r.token)
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, err
	}
	out := reply{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	if len(raw) > 0 && raw[0] == '{' {
		json.Unmarshal(raw, &out.Body)
	}
	return out, nil
}

// must sends a request and fails the test unless it answers status.
func (c *client) must(t *testing.T, status int, r req) reply {
	t.Helper()
	rep, err := c.call(r)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	if rep.Status != status {
		t.Fatalf("%s %s: %s, want %d", r.method, r.path, rep, status)
	}
	return rep
}

// ipOf is a distinct client address per n, sent in X-Forwarded-For (the
// edges trust 127.0.0.1 as a proxy), so that per-IP limits do not throttle
// the load.
func ipOf(n int) string {
	return fmt.Sprintf("10.%d.%d.%d", (n>>16)&255, (n>>8)&255, n&255)
}

var ipCounter atomic.Int64

// nextIP is a fresh client address.
func nextIP() string { return ipOf(int(ipCounter.Add(1))) }

func num(v any) int64 {
	switch x := v.(type) {
	case float64:
		return int64(x)
	case json.Number:
		n, _ := x.Int64()
		return n
	}
	return 0
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// world is what the operator API provisions: a workspace with its owner,
// a program with an enrolled partner and an active link, the owner's
// dashboard token, and the program's live and test keys.
type world struct {
	WorkspaceID, OwnerID, ProgramID, PartnerID, LinkID int64
	Code, OwnerEmail, OwnerToken, LiveKey, TestKey     string
}

var worldCount atomic.Int64

// mustWorld provisions a world through the operator and owner APIs.
// program holds extra program fields (commission_type, lead_auth, …).
func mustWorld(t *testing.T, c *client, program map[string]any) world {
	t.Helper()
	n := itoa(worldCount.Add(1))
	var w world
	w.OwnerEmail = "owner" + n + "@brand.example"
	d := c.must(t, 201, req{method: "POST", path: "/api/operator/v1/workspaces", token: opToken,
		body: map[string]any{"name": "Brand " + n, "owner_email": w.OwnerEmail}}).data()
	w.WorkspaceID, w.OwnerID = num(d["id"]), num(d["owner_user_id"])
	p := map[string]any{"workspace_id": w.WorkspaceID, "name": "Program " + n, "domain": "brand" + n + ".example",
		"commission_type": "percent", "commission_rate": 20}
	for k, v := range program {
		p[k] = v
	}
	w.ProgramID = num(c.must(t, 201, req{method: "POST", path: "/api/operator/v1/programs", token: opToken, body: p}).data()["id"])
	pid := itoa(w.ProgramID)
	w.PartnerID = num(c.must(t, 201, req{method: "POST", path: "/api/operator/v1/programs/" + pid + "/partners", token: opToken,
		body: map[string]any{"email": "partner" + n + "@partner.example", "name": "Partner " + n}}).data()["id"])
	w.Code = "ref-" + n + "-" + pid
	w.LinkID = num(c.must(t, 201, req{method: "POST", path: "/api/operator/v1/programs/" + pid + "/links", token: opToken,
		body: map[string]any{"partner_id": w.PartnerID, "code": w.Code}}).data()["id"])
	w.OwnerToken = c.must(t, 201, req{method: "POST", path: "/api/operator/v1/users/" + itoa(w.OwnerID) + "/sessions", token: opToken}).data()["token"].(string)
	defer func() {
		secret("live key", w.LiveKey)
		secret("test key", w.TestKey)
		secret("dashboard token", w.OwnerToken)
	}()
	w.LiveKey = c.must(t, 200, req{method: "POST", path: "/api/v1/programs/" + pid + "/api-key", token: w.OwnerToken}).data()["api_key"].(string)
	w.TestKey = c.must(t, 200, req{method: "POST", path: "/api/v1/programs/" + pid + "/api-key", token: w.OwnerToken,
		body: map[string]any{"mode": "test"}}).data()["api_key"].(string)
	return w
}

// clickBody is a click on the world's link.
func (w world) clickBody() map[string]any {
	return map[string]any{"affiliate_url": "https://brand.example/landing?aff=" + w.Code}
}

// mustWorlds provisions k worlds. Sales and refunds share a limit of 120
// a minute per API key, so a load of sales is spread over several
// programs' keys (sale i of world i%k).
func mustWorlds(t *testing.T, c *client, k int, program map[string]any) []world {
	t.Helper()
	ws := make([]world, k)
	for i := range ws {
		ws[i] = mustWorld(t, c, program)
	}
	return ws
}

// keysFor is how many programs' keys carry n sale or refund calls within
// a minute, with room for retries.
func keysFor(n int) int { return n/60 + 1 }

// mustClick records a click through the edge, from a fresh client
// address, and returns its id.
func mustClick(t *testing.T, c *client, w world) string {
	t.Helper()
	rep := c.must(t, 200, req{method: "POST", path: "/api/v1/track/click", body: w.clickBody(),
		header: map[string]string{"X-Forwarded-For": nextIP()}})
	id, _ := rep.Body["click_id"].(string)
	if id == "" {
		t.Fatalf("click without click_id: %s", rep)
	}
	return id
}

// run calls fn(i) for i in [0, n) from workers goroutines and waits.
func run(workers, n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// runUntil calls fn(i) with increasing i from workers goroutines until
// stop is closed, and returns how many calls were made.
func runUntil(workers int, stop <-chan struct{}, fn func(i int)) int {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				fn(int(next.Add(1)) - 1)
			}
		}()
	}
	wg.Wait()
	return int(next.Load())
}

// tally counts answers by status (0: a transport error).
type tally struct {
	mu sync.Mutex
	n  map[int]int
}

func (t *tally) add(status int) {
	t.mu.Lock()
	if t.n == nil {
		t.n = make(map[int]int)
	}
	t.n[status]++
	t.mu.Unlock()
}

func (t *tally) get(status int) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n[status]
}

func (t *tally) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var parts []string
	for _, s := range []int{200, 201, 400, 401, 403, 404, 409, 413, 429, 500, 503, 0} {
		if n := t.n[s]; n > 0 {
			name := strconv.Itoa(s)
			if s == 0 {
				name = "transport error"
			}
			parts = append(parts, fmt.Sprintf("%s×%d", name, n))
		}
	}
	for s, n := range t.n {
		switch s {
		case 200, 201, 400, 401, 403, 404, 409, 413, 429, 500, 503, 0:
		default:
			parts = append(parts, fmt.Sprintf("%d×%d", s, n))
		}
	}
	return strings.Join(parts, " ")
}
