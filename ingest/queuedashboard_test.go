package ingest

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/hibiken/asynq"
	"github.com/hibiken/asynqmon"

	"github.com/partnertrack/partnertrack/workers/redistest"
)

// withQueuesDashboard mounts the real asynq dashboard over the test Redis.
func withQueuesDashboard(t *testing.T) func(*Services, *Options) {
	t.Helper()
	redistest.Client(t)
	conn, err := asynq.ParseRedisURI(redistest.URL())
	if err != nil {
		t.Fatal(err)
	}
	h := asynqmon.New(asynqmon.Options{RootPath: "/ops/queues", RedisConnOpt: conn})
	t.Cleanup(func() { h.Close() })
	return func(_ *Services, opts *Options) { opts.Queues = h }
}

// doQueues is do for the queue dashboard: while an answer is asynq's
// "queue … does not exist", it asks again. The dashboard lists every queue
// of the shared test Redis and then reads each, and a test running beside
// this one may delete its queues in between (redistest.Namespace does
// when its test ends); the dashboard then fails the whole list. Any other
// answer, and the twentieth, is returned.
func doQueues(t *testing.T, app *fiber.App, r req) response {
	t.Helper()
	for try := 1; ; try++ {
		res := do(t, app, r)
		if res.Status != 500 || !bytes.Contains(res.Raw, []byte("does not exist")) || try == 20 {
			return res
		}
	}
}

func basic(user, password string) map[string]string {
	return map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))}
}

func TestOpsQueuesGuard(t *testing.T) {
	b := setup(t)
	app := newTestServer(b.db, b.clock, withQueuesDashboard(t)).App()
	for _, tc := range []struct {
		desc   string
		method string
		path   string
		header map[string]string
		status int
	}{
		{"ErrNoToken", "GET", "/ops/queues", nil, 401},
		{"ErrNoTokenAPI", "GET", "/ops/queues/api/queues", nil, 401},
		{"ErrWrongBearer", "GET", "/ops/queues", bearer("nope"), 401},
		{"ErrWrongBasic", "GET", "/ops/queues", basic("ops", "nope"), 401},
		{"ErrTokenAsUser", "GET", "/ops/queues", basic(testOperatorToken, ""), 401},
		{"ErrBadBasic", "GET", "/ops/queues", map[string]string{"Authorization": "Basic !!!"}, 401},
		{"ErrProgramKeyLike", "GET", "/ops/queues", bearer("aff_x"), 401},
		{"OKBearer", "GET", "/ops/queues/", operator(), 200},
		{"OKWithoutSlash", "GET", "/ops/queues", operator(), 200},
		{"OKBasic", "GET", "/ops/queues/", basic("ops", testOperatorToken), 200},
		{"OKBasicAnyUser", "GET", "/ops/queues/queues", basic("", testOperatorToken), 200},
		{"OKAPI", "GET", "/ops/queues/api/queues", operator(), 200},
		{"ErrReadOnlyPause", "POST", "/ops/queues/api/queues/default:pause", operator(), 403},
		{"ErrReadOnlyDelete", "DELETE", "/ops/queues/api/queues/default", basic("ops", testOperatorToken), 403},
		{"ErrPrefixOnly", "GET", "/ops/queuesx", operator(), 404},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			r := doQueues(t, app, req{tc.method, tc.path, nil, tc.header})
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d: %.300s", r.Status, tc.status, r.Raw)
			}
			switch tc.status {
			case 401:
				if got := r.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Basic realm=") {
					t.Fatalf("WWW-Authenticate %q", got)
				}
				assertError(t, r, 401, msgOpsToken)
			case 403:
				assertError(t, r, 403, msgOpsReadOnly)
			case 200:
				if strings.HasSuffix(tc.path, "/api/queues") {
					if _, ok := r.Body["queues"]; !ok {
						t.Fatalf("queue list %s", r.Raw)
					}
				} else if !strings.Contains(string(r.Raw), "<html") {
					t.Fatalf("dashboard page %.300s", r.Raw)
				}
			}
		})
	}
}

// TestOpsQueuesWritable: with OPS_QUEUES_READONLY=false, changes reach
// the dashboard (which pauses and resumes a queue of this test).
func TestOpsQueuesWritable(t *testing.T) {
	b := setup(t)
	rdb := redistest.Client(t)
	ns := redistest.Namespace(t, rdb)
	queue := ns.Queue("notifications")
	if _, err := asynq.NewClientFromRedisClient(rdb).Enqueue(asynq.NewTask("x", nil), asynq.Queue(queue)); err != nil {
		t.Fatal(err)
	}
	app := newTestServerConfig(b.db, b.clock, func(cfg *Config) { cfg.OpsQueuesWritable = true }, withQueuesDashboard(t)).App()
	if r := do(t, app, req{"POST", "/ops/queues/api/queues/" + queue + ":pause", nil, operator()}); r.Status != 204 && r.Status != 200 {
		t.Fatalf("pause: %d %s", r.Status, r.Raw)
	}
	info, err := asynq.NewInspectorFromRedisClient(rdb).GetQueueInfo(queue)
	if err != nil || !info.Paused {
		t.Fatalf("queue %+v, %v; want paused", info, err)
	}
}

// TestOpsWithoutOperatorToken: no operator token, no dashboard.
func TestOpsWithoutOperatorToken(t *testing.T) {
	b := setup(t)
	app := newTestServerConfig(b.db, b.clock, func(cfg *Config) { cfg.OperatorToken = "" }, withQueuesDashboard(t)).App()
	if r := do(t, app, req{"GET", "/ops/queues", nil, bearer("")}); r.Status != 404 {
		t.Fatalf("status %d", r.Status)
	}
}
