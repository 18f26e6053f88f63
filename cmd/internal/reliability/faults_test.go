package reliability

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/lib/pq"

	"github.com/partnertrack/partnertrack/cmd/internal/faulttest"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/workers/redistest"
)

// TestFaultRedisCrashDuringClicks: Redis (with its append-only file
// fsynced before each reply, as docker-compose runs it) is killed while
// clicks pour in, and comes back.
// Clicks keep landing throughout: while Redis is away the edge writes each
// batch straight to Postgres (its breaker opens on the first failed batch). No
// worker runs during the load, so every click Redis acknowledged before
// the crash must come back from the append-only file. Every click the
// edge answered 200 is in Postgres once a worker has drained the queue,
// exactly once.
func TestFaultRedisCrashDuringClicks(t *testing.T) {
	t.Parallel()
	sc := report(t, "fault/redis-crash-during-clicks")
	pg := pgtest.New(t)
	rd := faulttest.StartRedis(t, faulttest.RedisOptions{AppendOnly: true, FsyncAlways: true})
	st := ownStack(t, pg.URL, rd.URL())
	e := st.startEdge(t, nil)
	w := mustWorld(t, e.client, nil)

	var mu sync.Mutex
	var accepted []string
	var answers tally
	stop := make(chan struct{})
	done := make(chan int)
	go func() {
		done <- runUntil(4, stop, func(i int) {
			time.Sleep(2 * time.Millisecond) // a steady load, not a benchmark
			rep, err := e.call(req{method: "POST", path: "/api/v1/track/click", body: w.clickBody(),
				header: map[string]string{"X-Forwarded-For": ipOf(i)}})
			if err != nil {
				answers.add(0)
				return
			}
			answers.add(rep.Status)
			if id, _ := rep.Body["click_id"].(string); rep.Status == 200 && id != "" {
				mu.Lock()
				accepted = append(accepted, id)
				mu.Unlock()
			}
		})
	}()
	// The first failing batch waits out the edge's 50 ms Redis deadline
	// and opens the breaker; one batch a second probes Redis after that.
	outages, outage := scale(1, 3), scale(4*time.Second, 15*time.Second)
	for o := 0; o < outages; o++ {
		time.Sleep(scale(1500*time.Millisecond, 8*time.Second))
		rd.Kill(t)
		time.Sleep(outage)
		rd.Start(t)
	}
	time.Sleep(scale(1500*time.Millisecond, 8*time.Second))
	close(stop)
	sent := <-done

	mu.Lock()
	ids := append([]string(nil), accepted...)
	mu.Unlock()
	sc.counts(len(ids), 0)
	sc.note("%d sent: %s; %d Redis crashes", sent, answers.String(), outages)
	if answers.get(200) != sent {
		t.Errorf("clicks not accepted while Redis was away: %s of %d", answers.String(), sent)
	}
	// The fallback was taken: batches were written straight to Postgres
	// (a long outage also opens the breaker).
	diverted := e.Logs.Count("queue write failed: batch written to Postgres")
	breaker := e.Logs.Count("circuit breaker changed state")
	sc.note("%d batches diverted to Postgres, breaker changed state %d times", diverted, breaker)
	if diverted == 0 {
		t.Errorf("no batch was written straight to Postgres: the outage was not seen")
	}
	if soak && breaker == 0 {
		t.Errorf("the queue breaker never opened during %s outages", outage)
	}
	direct := st.count(t, `SELECT count(*) FROM clicks`)
	sc.note("%d written by the edge, %d queued", direct, len(ids)-direct)
	if direct == len(ids) {
		t.Errorf("every click went straight to Postgres: nothing was queued in Redis across the crash")
	}
	st.startWorker(t, []string{"--queues", "clicks", "--scheduler=false", "--concurrency", "2"}, nil)
	st.waitCount(t, len(ids), scale(90*time.Second, 5*time.Minute),
		`SELECT count(*) FROM clicks WHERE click_id = ANY($1)`, pq.Array(ids))
	stored := st.count(t, `SELECT count(*) FROM clicks`)
	sc.counts(len(ids), stored)
	if stored != len(ids) {
		t.Errorf("clicks stored %d, accepted %d", stored, len(ids))
	}
}

// TestFaultRedisCrashDuringSales: Redis is killed while sales and refunds
// come in, and comes back. Sales and refunds commit in Postgres and answer
// 200 throughout; the partner notifications the refunds write wait in the
// outbox while Redis is away and are delivered, once each, after it
// returns (the worker's scheduled outbox sweep queues them).
func TestFaultRedisCrashDuringSales(t *testing.T) {
	t.Parallel()
	sc := report(t, "fault/redis-crash-during-sales")
	pg := pgtest.New(t)
	rd := faulttest.StartRedis(t, faulttest.RedisOptions{AppendOnly: true})
	st := ownStack(t, pg.URL, rd.URL())
	e := st.startEdge(t, nil)
	st.startWorker(t, []string{"--concurrency", "4"}, nil)
	// One customer per sale: clicks recorded (and in Postgres) first. A
	// sale and its refund are two calls of the key's 120 a minute.
	n := scale(60, 1500)
	ws := mustWorlds(t, e.client, keysFor(2*n), nil)
	clicks := make([]string, n)
	run(4, n, func(i int) { clicks[i] = mustClick(t, e.client, ws[i%len(ws)]) })
	st.waitCount(t, n, time.Minute, `SELECT count(*) FROM clicks`)

	// Each worker goroutine sells to a customer, then refunds half of it.
	var sales, refunds tally
	var unsentDuringOutage int
	var next int64
	var mu sync.Mutex
	take := func() int {
		mu.Lock()
		defer mu.Unlock()
		if next >= int64(n) {
			return -1
		}
		next++
		return int(next - 1)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		runUntil(4, stop, func(int) {
			i := take()
			if i < 0 {
				time.Sleep(10 * time.Millisecond)
				return
			}
			time.Sleep(scale(40*time.Millisecond, 10*time.Millisecond))
			txn, key := "txn-"+itoa(int64(i)), ws[i%len(ws)].LiveKey
			rep, err := e.call(req{method: "POST", path: "/api/v1/track/sale", token: key,
				body: map[string]any{"transaction_id": txn, "amount_cents": 10000, "click_id": clicks[i]}})
			if err != nil {
				sales.add(0)
				return
			}
			sales.add(rep.Status)
			if rep.Status != 200 {
				t.Errorf("sale %s: %s", txn, rep)
				return
			}
			rep, err = e.call(req{method: "POST", path: "/api/v1/track/refund", token: key,
				body: map[string]any{"transaction_id": txn, "refund_amount_cents": 5000, "refund_id": "r1", "reason": "refund"}})
			if err != nil {
				refunds.add(0)
				return
			}
			refunds.add(rep.Status)
			if rep.Status != 200 || rep.Body["status"] != "refunded" {
				t.Errorf("refund %s: %s", txn, rep)
			}
		})
	}()
	// Crash Redis once a quarter of the customers have bought.
	waitLoad(t, "a quarter of the customers bought", func() bool { mu.Lock(); defer mu.Unlock(); return next >= int64(n/4) })
	rd.Kill(t)
	time.Sleep(scale(3*time.Second, 20*time.Second))
	unsentDuringOutage = st.count(t, `SELECT count(*) FROM outbox WHERE sent_at IS NULL`)
	rd.Start(t)
	// Let the rest of the customers buy after Redis is back.
	waitLoad(t, "every customer bought", func() bool { mu.Lock(); defer mu.Unlock(); return next >= int64(n) })
	close(stop)
	<-done

	accepted := sales.get(200)
	stored := st.count(t, `SELECT count(*) FROM sales`)
	sc.counts(accepted, stored)
	sc.note("sales %s; refunds %s; %d notifications waited in the outbox during the outage", sales.String(), refunds.String(), unsentDuringOutage)
	if accepted != n || stored != n {
		t.Errorf("sales: %d accepted, %d stored, want %d", accepted, stored, n)
	}
	if c := st.count(t, `SELECT count(*) FROM commissions WHERE status = 'refunded'`); c != n {
		t.Errorf("%d refunded commissions, want %d", c, n)
	}
	if r := st.count(t, `SELECT count(*) FROM refunds`); r != refunds.get(200) || r != n {
		t.Errorf("refunds: %d stored, %d accepted, want %d", r, refunds.get(200), n)
	}
	if unsentDuringOutage == 0 {
		t.Errorf("no notification waited in the outbox while Redis was away: the outage was not seen")
	}
	// Every refund's notification is delivered once, after Redis returns.
	outbox := st.count(t, `SELECT count(*) FROM outbox WHERE task_type = 'notification:deliver'`)
	if outbox != n {
		t.Errorf("%d notification outbox rows, want one per refund (%d)", outbox, n)
	}
	st.waitCount(t, outbox, scale(time.Minute, 3*time.Minute), `SELECT count(*) FROM notifications`)
	st.waitCount(t, 0, time.Minute, `SELECT count(*) FROM outbox WHERE sent_at IS NULL`)
	if d := st.count(t, `SELECT count(*) FROM notifications n JOIN outbox o ON o.id = n.outbox_id`); d != outbox {
		t.Errorf("%d notifications match an outbox row, want %d", d, outbox)
	}
	sc.note("%d notifications delivered", outbox)
}

// TestFaultPostgresRestartDuringSales: the edge's Postgres is restarted
// (fast shutdown: every connection closed, open transactions rolled back)
// while sales come in; in the long version also crashed (immediate
// shutdown, recovery from the WAL). During the gap the edge answers 500
// in the sale envelope (code internal_error, "Sale tracking failed"),
// never hangs and never drops a connection; afterwards it recovers by
// itself. A client retries each 500, as the spec says: a retry answers 200,
// or 409 when the first attempt had committed. In the end every sale is
// stored exactly once, each with its commission and platform fee: no
// partial write.
func TestFaultPostgresRestartDuringSales(t *testing.T) {
	t.Parallel()
	sc := report(t, "fault/postgres-restart-during-sales")
	pgs := faulttest.StartPostgres(t)
	rdb := redistest.Client(t)
	st := ownStack(t, pgs.CreateDatabase(t, "partnertrack"), redistest.URL())
	st.ns = string(redistest.Namespace(t, rdb))
	e := st.startEdge(t, nil)
	worker := st.startWorker(t, []string{"--concurrency", "4"}, nil)
	// n sales under load, then quiet more after a restart in a quiet
	// moment (the pools then hold only connections the restart broke).
	n, quiet := scale(150, 3000), 20
	ws := mustWorlds(t, e.client, keysFor(n+quiet), nil)
	clicks := make([]string, n+quiet)
	run(4, n+quiet, func(i int) { clicks[i] = mustClick(t, e.client, ws[i%len(ws)]) })
	st.waitCount(t, n+quiet, time.Minute, `SELECT count(*) FROM clicks`)

	sale := func(i int) (reply, error) {
		return e.call(req{method: "POST", path: "/api/v1/track/sale", token: ws[i%len(ws)].LiveKey,
			body: map[string]any{"transaction_id": "txn-" + itoa(int64(i)), "amount_cents": 2500, "click_id": clicks[i]}})
	}
	var first tally
	var upAt atomic.Pointer[time.Time]
	var afterUp atomic.Int64 // 500s of requests sent once Postgres was back
	var mu sync.Mutex
	var failed []int // answered 500: to retry
	next := make(chan int)
	go func() {
		defer close(next)
		for i := 0; i < n; i++ {
			next <- i
			time.Sleep(scale(25*time.Millisecond, 90*time.Millisecond))
		}
	}()
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		var wg sync.WaitGroup
		for g := 0; g < 6; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					began := time.Now()
					rep, err := sale(i)
					if err != nil {
						first.add(0)
						t.Errorf("sale %d: transport error %v (the edge must answer)", i, err)
						continue
					}
					first.add(rep.Status)
					switch rep.Status {
					case 200:
					case 500:
						if up := upAt.Load(); up != nil && began.After(*up) {
							afterUp.Add(1)
						}
						e := rep.errObj()
						if rep.Body["data"] != nil || e == nil || e["code"] != "internal_error" || e["message"] != "Sale tracking failed" {
							t.Errorf("sale %d: a 500 outside the sale envelope: %s", i, rep)
						}
						mu.Lock()
						failed = append(failed, i)
						mu.Unlock()
					default:
						t.Errorf("sale %d: %s", i, rep)
					}
				}
			}()
		}
		wg.Wait()
	}()
	// Clicks go on meanwhile: the link cache answers the known code and
	// the batches wait in Redis until the worker can write them.
	var clickMu sync.Mutex
	var clickIDs []string
	var clickAnswers tally
	stopClicks := make(chan struct{})
	clicksDone := make(chan struct{})
	go func() {
		defer close(clicksDone)
		runUntil(2, stopClicks, func(i int) {
			rep, err := e.call(req{method: "POST", path: "/api/v1/track/click", body: ws[0].clickBody(),
				header: map[string]string{"X-Forwarded-For": nextIP()}})
			if err != nil {
				clickAnswers.add(0)
				return
			}
			clickAnswers.add(rep.Status)
			if id, _ := rep.Body["click_id"].(string); rep.Status == 200 {
				clickMu.Lock()
				clickIDs = append(clickIDs, id)
				clickMu.Unlock()
			}
			time.Sleep(20 * time.Millisecond)
		})
	}()
	restarts := scale(1, 3)
	for r := 0; r < restarts; r++ {
		time.Sleep(scale(800*time.Millisecond, 8*time.Second))
		upAt.Store(nil)
		if r%2 == 1 {
			pgs.Crash(t)
		} else {
			pgs.Stop(t)
		}
		time.Sleep(scale(2*time.Second, 5*time.Second))
		pgs.Start(t)
		now := time.Now()
		upAt.Store(&now)
	}
	<-loadDone
	close(stopClicks)
	<-clicksDone

	// Clients retry what failed; the edge has recovered by itself.
	var retried tally
	for _, i := range failed {
		for deadline := time.Now().Add(time.Minute); ; {
			rep, err := sale(i)
			if err == nil && (rep.Status == 200 || rep.Status == 409) {
				retried.add(rep.Status)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("sale %d still failing a minute after Postgres came back: %v %v", i, rep, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	// A restart in a quiet moment: the next sales succeed at once.
	pgs.Stop(t)
	pgs.Start(t)
	var afterQuiet tally
	for i := n; i < n+quiet; i++ {
		rep, err := sale(i)
		if err != nil {
			afterQuiet.add(0)
			continue
		}
		afterQuiet.add(rep.Status)
	}
	if afterQuiet.get(200) != quiet {
		t.Errorf("sales right after a quiet restart: %s, want 200×%d", afterQuiet.String(), quiet)
	}
	n += quiet

	accepted := first.get(200) + retried.get(200) + retried.get(409) + afterQuiet.get(200)
	stored := st.count(t, `SELECT count(*) FROM sales`)
	sc.counts(accepted, stored)
	sc.note("first answers %s (%d of the 500s after Postgres was back); retries of the 500s %s; %d restarts under load; after a quiet restart %s",
		first.String(), afterUp.Load(), retried.String(), restarts, afterQuiet.String())
	if first.get(500) == 0 {
		t.Errorf("no sale failed while Postgres was down: the outage was not seen")
	}
	if n := afterUp.Load(); n > 0 {
		t.Errorf("%d sales sent once Postgres was back answered 500: the edge did not recover by itself", n)
	}
	if accepted != n || stored != n {
		t.Errorf("sales: %d accepted (after retries), %d stored, want %d", accepted, stored, n)
	}
	if d := st.count(t, `SELECT count(DISTINCT processor_event_id) FROM sales`); d != n {
		t.Errorf("%d distinct transaction ids stored, want %d", d, n)
	}
	for _, q := range []string{
		`SELECT count(*) FROM sales s WHERE (SELECT count(*) FROM commissions c WHERE c.sale_id = s.id) <> 1`,
		`SELECT count(*) FROM sales s WHERE (SELECT count(*) FROM platform_fees f WHERE f.sale_id = s.id) <> 1`,
		`SELECT count(*) FROM sales s JOIN customers c ON c.id = s.customer_id WHERE c.status <> 'conversion'`,
	} {
		if bad := st.count(t, q); bad != 0 {
			t.Errorf("partial writes: %d sales fail %s", bad, q)
		}
	}
	// Every click accepted during the restarts reaches Postgres (the
	// worker retries the batches that failed while it was down).
	sc.note("clicks meanwhile %s", clickAnswers.String())
	if clickAnswers.get(200) == 0 || clickAnswers.get(200) != len(clickIDs) || clickAnswers.get(0)+clickAnswers.get(500) > 0 {
		t.Errorf("clicks while Postgres restarted: %s (the link cache answers the known code)", clickAnswers.String())
	}
	st.waitCount(t, len(clickIDs), 3*time.Minute, `SELECT count(*) FROM clicks WHERE click_id = ANY($1)`, pq.Array(clickIDs))
	// Both processes are still up and the edge is ready again.
	if e.Exited() || worker.Exited() {
		t.Errorf("a process exited: edge %v, worker %v", e.Exited(), worker.Exited())
	}
	rep, err := e.call(req{method: "GET", path: "/readyz"})
	if err != nil || rep.Status != 200 || rep.Body["status"] != "ready" {
		t.Errorf("readyz after recovery: %v %v", rep, err)
	}
}

// TestFaultWorkerKilledMidBatch: a worker is killed with SIGKILL while it
// writes click batches into Postgres. The batches it held are redone by
// another worker once their lease expires (asynq gives an unacknowledged
// task back after its 30 s lease, and the recoverer's 30 s margin), and
// the idempotent write (one INSERT … SELECT FROM unnest … ON CONFLICT
// DO NOTHING) stores each click once, whether or not the killed worker had
// committed it.
func TestFaultWorkerKilledMidBatch(t *testing.T) {
	t.Parallel()
	sc := report(t, "fault/worker-sigkill-mid-batch")
	st := sharedStack(t)
	rdb := redistest.Client(t)
	e := st.startEdge(t, nil)
	w := mustWorld(t, e.client, nil)

	// A backlog of click batches while no worker runs.
	n := scale(3000, 20000)
	var mu sync.Mutex
	var accepted []string
	var answers tally
	run(16, n, func(i int) {
		rep, err := e.call(req{method: "POST", path: "/api/v1/track/click", body: w.clickBody(),
			header: map[string]string{"X-Forwarded-For": ipOf(i)}})
		if err != nil {
			answers.add(0)
			return
		}
		answers.add(rep.Status)
		if id, _ := rep.Body["click_id"].(string); rep.Status == 200 && id != "" {
			mu.Lock()
			accepted = append(accepted, id)
			mu.Unlock()
		}
	})
	if answers.get(200) != n {
		t.Fatalf("clicks: %s of %d", answers.String(), n)
	}
	queue := st.ns + "clicks"
	insp := asynq.NewInspectorFromRedisClient(rdb)
	info, err := insp.GetQueueInfo(queue)
	if err != nil {
		t.Fatal(err)
	}
	sc.note("%d clicks in %d batches", n, info.Pending)

	// Kill workers in the middle of the drain until one dies holding
	// batches (tasks left active with no live worker).
	kills := scale(1, 3)
	var orphans []string
	for k := 0; k < kills; k++ {
		for attempt := 0; ; attempt++ {
			before := st.count(t, `SELECT count(*) FROM clicks`)
			wk := st.startWorker(t, []string{"--queues", "clicks", "--scheduler=false", "--concurrency", "8"}, nil)
			deadline := time.Now().Add(30 * time.Second)
			for st.count(t, `SELECT count(*) FROM clicks`) == before && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			wk.Kill(t)
			active, err := insp.ListActiveTasks(queue)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range active {
				orphans = append(orphans, a.ID)
			}
			if len(active) > 0 {
				break
			}
			if attempt == 5 {
				t.Fatalf("six workers killed while batches were written, none held a batch")
			}
		}
	}
	killedAt := st.count(t, `SELECT count(*) FROM clicks`)
	sc.note("%d workers killed with %d batches in hand, %d clicks stored by then", kills, len(orphans), killedAt)

	// A worker started later redoes the orphaned batches.
	time.Sleep(2 * time.Second)
	st.startWorker(t, []string{"--queues", "clicks", "--scheduler=false", "--concurrency", "4"}, nil)
	st.waitCount(t, len(accepted), 4*time.Minute, `SELECT count(*) FROM clicks WHERE click_id = ANY($1)`, pq.Array(accepted))
	stored := st.count(t, `SELECT count(*) FROM clicks`)
	sc.counts(len(accepted), stored)
	if stored != len(accepted) {
		t.Errorf("clicks stored %d, accepted %d", stored, len(accepted))
	}
	// The killed worker may have committed a batch without acknowledging
	// it: its clicks are all stored already, but the task itself only runs
	// again once asynq's recoverer finds its lease expired (30 s after the
	// lease ran out, then every minute) and the first retry delay of a
	// traffic batch (1 to 3 s) passes. Wait for each orphan to be redone.
	for _, id := range orphans {
		if state := waitTaskDone(insp, queue, id, 3*time.Minute); state != "" {
			t.Errorf("orphaned batch %s is %s", id, state)
		}
	}
	if archived, _ := insp.ListArchivedTasks(queue); len(archived) > 0 {
		t.Errorf("%d batches archived", len(archived))
	}
}

// waitTaskDone waits until the task is completed or gone (finished
// without retention) and returns "", or returns the state it is left in
// when the time is up.
func waitTaskDone(insp *asynq.Inspector, queue, id string, within time.Duration) string {
	deadline := time.Now().Add(within)
	for {
		ti, err := insp.GetTaskInfo(queue, id)
		if err != nil || ti.State == asynq.TaskStateCompleted {
			return ""
		}
		if time.Now().After(deadline) {
			return ti.State.String()
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// TestFaultEdgeSIGTERMUnderLoad: the edge is sent SIGTERM while sales pour
// in. Requests already in flight finish and are answered (one is held in
// Postgres behind a row lock the test keeps until after the signal, one is
// still sending its body when the signal comes); new connections are
// refused at once; the process exits 0 once the in-flight ones are done.
// Every sale answered 200 is stored, and no sale that was not answered 200
// is: a request cut off by the shutdown was never processed.
func TestFaultEdgeSIGTERMUnderLoad(t *testing.T) {
	t.Parallel()
	sc := report(t, "fault/edge-sigterm-under-load")
	st := sharedStack(t)
	e := st.startEdge(t, nil)
	n := scale(600, 4000) // customers available to the load
	ws := mustWorlds(t, e.client, keysFor(n), nil)
	held := mustWorld(t, e.client, nil) // its sale is held by a row lock
	slow := mustWorld(t, e.client, nil) // its sale's body arrives slowly
	clicks := make([]string, n)
	run(8, n, func(i int) { clicks[i] = mustClick(t, e.client, ws[i%len(ws)]) })
	heldClick := mustClick(t, e.client, held)
	slowClick := mustClick(t, e.client, slow)
	st.startWorker(t, []string{"--queues", "clicks", "--scheduler=false", "--concurrency", "2"}, nil)
	st.waitCount(t, n+2, time.Minute, `SELECT count(*) FROM clicks`)

	saleBody := func(txn, click string) map[string]any {
		return map[string]any{"transaction_id": txn, "amount_cents": 1999, "click_id": click}
	}
	// 3. The load: each goroutine sells to the next customer.
	var mu sync.Mutex
	answered := map[string]int{} // transaction id → status (0: transport error)
	var answers tally
	var nextCustomer atomic.Int64
	stop := make(chan struct{})
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		runUntil(8, stop, func(int) {
			i := int(nextCustomer.Add(1)) - 1
			if i >= n {
				time.Sleep(10 * time.Millisecond)
				return
			}
			txn := "txn-" + itoa(int64(i))
			rep, err := e.call(req{method: "POST", path: "/api/v1/track/sale", token: ws[i%len(ws)].LiveKey, body: saleBody(txn, clicks[i])})
			status := rep.Status
			if err != nil {
				status = 0
			}
			answers.add(status)
			mu.Lock()
			answered[txn] = status
			mu.Unlock()
			time.Sleep(30 * time.Millisecond)
		})
	}()
	time.Sleep(scale(500*time.Millisecond, 9*time.Second))

	// The in-flight requests start a moment before the signal: they must
	// outlive it, within the edge's 10 s request deadline and read timeout.
	// 1. A sale held in Postgres: the test locks the program row, which
	// the sale's insert must share (its foreign key).
	lock, err := st.db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback()
	var holder int
	if err := lock.QueryRow(`SELECT pg_backend_pid() FROM programs WHERE id = $1 FOR UPDATE`, held.ProgramID).Scan(&holder); err != nil {
		t.Fatal(err)
	}
	heldDone := make(chan reply, 1)
	go func() {
		rep, err := e.call(req{method: "POST", path: "/api/v1/track/sale", token: held.LiveKey, body: saleBody("txn-held", heldClick)})
		if err != nil {
			t.Errorf("held sale: %v", err)
		}
		heldDone <- rep
	}()
	st.waitCount(t, 1, 30*time.Second, `SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, holder)

	// 2. A sale whose body is still arriving when the signal comes.
	conn, err := net.DialTimeout("tcp", e.Addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	slowBody, _ := json.Marshal(saleBody("txn-slow", slowClick))
	half := len(slowBody) / 2
	fmt.Fprintf(conn, "POST /api/v1/track/sale HTTP/1.1\r\nHost: edge\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		slow.LiveKey, len(slowBody), slowBody[:half])

	time.Sleep(500 * time.Millisecond)
	e.Signal(t, syscall.SIGTERM)
	signalledAt := nextCustomer.Load()

	// New connections are refused at once.
	err = faulttestWait(5*time.Second, func() error {
		c, err := net.DialTimeout("tcp", e.Addr, time.Second)
		if err == nil {
			c.Close()
			return fmt.Errorf("a new connection was accepted after SIGTERM")
		}
		return nil
	})
	if err != nil {
		t.Errorf("%v", err)
	}
	// The process waits for the held sale and the slow body.
	time.Sleep(time.Second)
	if e.Exited() {
		t.Fatalf("the edge exited with requests in flight:\n%s", e.Logs.Text())
	}
	conn.Write(slowBody[half:])
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	slowResp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Errorf("slow sale: no answer: %v", err)
	} else if slowResp.StatusCode != 200 {
		t.Errorf("slow sale: %d", slowResp.StatusCode)
	}
	if err := lock.Commit(); err != nil {
		t.Fatal(err)
	}
	if rep := <-heldDone; rep.Status != 200 {
		t.Errorf("held sale: %s", rep)
	}
	code, err := e.Wait(30 * time.Second)
	if err != nil || code != 0 {
		t.Errorf("edge exit: code %d, %v\n%s", code, err, e.Logs.Text())
	}
	if e.Logs.Count("edge stopped") != 1 {
		t.Errorf("the edge did not log its stop")
	}
	close(stop)
	<-loadDone

	// What was answered 200 is stored, and nothing else.
	ok := map[string]bool{"txn-held": true, "txn-slow": true}
	for txn, status := range answered {
		if status == 200 {
			ok[txn] = true
		}
	}
	rows, err := st.db.Query(`SELECT processor_event_id FROM sales`)
	if err != nil {
		t.Fatal(err)
	}
	stored := 0
	for rows.Next() {
		var txn string
		rows.Scan(&txn)
		stored++
		if !ok[txn] {
			t.Errorf("sale %s stored but answered %d", txn, answered[txn])
		}
	}
	rows.Close()
	sc.counts(len(ok), stored)
	sc.note("load: %s; %d sales begun before the signal; plus a sale held by a lock and one with a slow body, both answered 200", answers.String(), signalledAt)
	if stored != len(ok) {
		t.Errorf("stored %d sales, answered 200 to %d", stored, len(ok))
	}
	for txn, status := range answered {
		if status != 200 && status != 0 {
			t.Errorf("sale %s: status %d during shutdown (want 200, or a refused connection)", txn, status)
		}
	}
}

// waitLoad polls cond while a load runs, and fails the test after a
// generous bound instead of hanging when the load stalls.
func waitLoad(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(scale(3*time.Minute, 15*time.Minute)); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the load stalled: not yet %s", what)
		}
	}
}

// faulttestWait polls check every 50 ms until it returns nil or timeout.
func faulttestWait(timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}
