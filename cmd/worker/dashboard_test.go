package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/chromedp"
	"github.com/hibiken/asynq"

	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/workers/redistest"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

// chromiumPath is the headless browser: $CHROMIUM, else Debian's chromium
// package. The test fails (never skips) when it is missing and says how to
// install it.
func chromiumPath(tb testing.TB) string {
	tb.Helper()
	path := os.Getenv("CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	found, err := exec.LookPath(path)
	if err != nil {
		tb.Fatalf("the dashboard test needs Chromium at %s (%v): install it with `apt-get install -y chromium` "+
			"(bash .ci/run does), or set CHROMIUM to a Chromium or Chrome binary", path, err)
	}
	return found
}

// browser starts headless Chromium with the flags this machine needs and
// answers every HTTP basic-auth challenge with user and password, the way
// a person types them into the browser's prompt. challenges counts them.
func browser(tb testing.TB, user, password string) (context.Context, *atomic.Int64) {
	tb.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(tb)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(tb.TempDir()),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	tb.Cleanup(func() { cancelCtx(); cancelAlloc() })

	// Every request pauses in the Fetch domain until it is continued; an
	// authentication challenge pauses until it is answered.
	paused := chromedp.Events(ctx, fetch.RequestPaused)
	auths := chromedp.Events(ctx, fetch.AuthRequired)
	go func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
		}
	}()
	var challenges atomic.Int64
	go func() {
		for ev, err := range auths {
			if err != nil {
				return
			}
			challenges.Add(1)
			chromedp.Call(ctx, fetch.ContinueWithAuth, fetch.ContinueWithAuthParams{RequestID: ev.RequestID,
				AuthChallengeResponse: &fetch.AuthChallengeResponse{
					Response: fetch.AuthChallengeResponseResponseProvideCredentials, Username: user, Password: password}})
		}
	}()
	handleAuth := true
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{HandleAuthRequests: &handleAuth}); err != nil {
		tb.Fatalf("start Chromium: %v", err)
	}
	return ctx, &challenges
}

// TestQueuesDashboardInChromium starts the real worker program on a test
// namespace and the edge next to it, opens /ops/queues in headless
// Chromium with HTTP basic auth (the operator token as password), and
// finds the worker's namespaced queues on the dashboard's home page and on
// its servers page.
func TestQueuesDashboardInChromium(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	rdb := redistest.Client(t)
	ns := redistest.Namespace(t, rdb)
	env := func() map[string]string { return testEnv(db, ns, "OPERATOR_TOKEN", "op-token-for-the-browser") }
	base := startEdge(t, env())
	MustRunWorker(t, env(), "--queues", "notifications,webhooks,maintenance", "--scheduler=true", "--concurrency", "2")

	// Give the notifications and webhooks queues a task each (the worker
	// drops a delivery to an endpoint that does not exist), so that they
	// exist in Redis next to the maintenance queue the scheduler fills.
	client := asynq.NewClientFromRedisClient(rdb)
	for queue, taskType := range map[string]string{tasks.QueueNotifications: "notification:probe", tasks.QueueWebhooks: tasks.TypeWebhookDeliver} {
		payload, _ := json.Marshal(map[string]any{"outbox_id": 0, "data": map[string]any{"endpoint_id": 999999, "message_id": "msg_probe", "body": "{}"}})
		if _, err := client.Enqueue(asynq.NewTask(taskType, payload), asynq.Queue(ns.Queue(queue))); err != nil {
			t.Fatal(err)
		}
	}
	names := []string{ns.Queue(tasks.QueueNotifications), ns.Queue(tasks.QueueWebhooks), ns.Queue(tasks.QueueMaintenance)}
	var conds []string
	for _, n := range names {
		conds = append(conds, "document.body.innerText.includes("+jsString(n)+")")
	}
	allListed := strings.Join(conds, " && ")

	ctx, challenges := browser(t, "operator", "op-token-for-the-browser")
	violations := cspViolations(t, ctx)
	page := func(path string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		defer cancel()
		err := chromedp.Do(ctx,
			chromedp.Navigate(base+path),
			chromedp.Poll[chromedp.Void](allListed, chromedp.WithPollingTimeout(60*time.Second)))
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string]("document.body.innerText"))
		if err != nil {
			t.Fatalf("%s: %v (the page says: %.2000s; policy violations: %q)", path, err, text, violations())
		}
		return text
	}
	home := page("/ops/queues")
	servers := page("/ops/queues/servers")
	for _, n := range names {
		if !strings.Contains(home, n) || !strings.Contains(servers, n) {
			t.Fatalf("queue %s missing:\nhome: %.2000s\nservers: %.2000s", n, home, servers)
		}
	}
	if challenges.Load() == 0 {
		t.Fatal("the browser was never asked for credentials: the dashboard answered without the operator token")
	}
	if v := violations(); len(v) > 0 {
		t.Fatalf("the dashboard's Content-Security-Policy blocked parts of it:\n%s", strings.Join(v, "\n"))
	}
}

// cspViolations collects what the browser logs about a
// Content-Security-Policy refusing a script, style, font or connection of
// the page (Chromium reports each on its Log domain), and returns a
// function that lists them so far.
func cspViolations(tb testing.TB, ctx context.Context) func() []string {
	tb.Helper()
	var mu sync.Mutex
	var seen []string
	entries := chromedp.Events(ctx, cdplog.EntryAdded)
	go func() {
		for ev, err := range entries {
			if err != nil {
				return
			}
			if ev.Entry != nil && strings.Contains(ev.Entry.Text, "Content Security Policy") {
				mu.Lock()
				seen = append(seen, ev.Entry.Text)
				mu.Unlock()
			}
		}
	}()
	if _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); err != nil {
		tb.Fatalf("browser log: %v", err)
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
