package reliability

import (
	"context"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/workers/redistest"
)

// TestFaultRollupsWorkerKilled: under click and sale load, the click
// worker is killed with SIGKILL mid-batch several times; its batches are
// redone by the next worker (asynq's lease), some after they were already
// committed. The rollups are written by the transactions that store the
// raw rows, so after the drain `partnerctl analytics verify`'s check finds
// 0 differences in every program; it also finds none mid-load, since it
// reads both in one snapshot.
func TestFaultRollupsWorkerKilled(t *testing.T) {
	t.Parallel()
	sc := report(t, "fault/rollups-worker-sigkill")
	st := sharedStack(t)
	rdb := redistest.Client(t)
	e := st.startEdge(t, nil)
	nSales := scale(60, 600)
	ws := mustWorlds(t, e.client, keysFor(nSales), map[string]any{"commission_type": "recurring_percent"})

	// The sales' customers: clicks stored by a worker before the load.
	saleClicks := make([]string, nSales)
	run(8, nSales, func(i int) { saleClicks[i] = mustClick(t, e.client, ws[i%len(ws)]) })
	first := st.startWorker(t, []string{"--queues", "clicks", "--scheduler=false", "--concurrency", "4"}, nil)
	st.waitCount(t, nSales, time.Minute, `SELECT count(*) FROM clicks`)
	first.Kill(t)

	// A backlog of click batches while no worker runs.
	n := scale(3000, 20000)
	var clicks tally
	run(16, n, func(i int) {
		rep, err := e.call(req{method: "POST", path: "/api/v1/track/click", body: ws[i%len(ws)].clickBody(),
			header: map[string]string{"X-Forwarded-For": ipOf(i)}})
		if err != nil {
			clicks.add(0)
			return
		}
		clicks.add(rep.Status)
	})
	if clicks.get(200) != n {
		t.Fatalf("clicks: %s of %d", clicks.String(), n)
	}

	// Sales and partial refunds run through the kills.
	var sales, refunds tally
	salesDone := make(chan struct{})
	go func() {
		defer close(salesDone)
		run(4, nSales, func(i int) {
			w := ws[i%len(ws)]
			txn := "rk-" + itoa(int64(i))
			rep, err := e.call(req{method: "POST", path: "/api/v1/track/sale", token: w.LiveKey,
				body: map[string]any{"transaction_id": txn, "amount_cents": 10000 + i, "click_id": saleClicks[i]}})
			if err != nil {
				sales.add(0)
				return
			}
			sales.add(rep.Status)
			if rep.Status != 200 || i%3 != 0 {
				return
			}
			rep, err = e.call(req{method: "POST", path: "/api/v1/track/refund", token: w.LiveKey,
				body: map[string]any{"transaction_id": txn, "refund_amount_cents": 2500, "refund_id": "r1"}})
			if err != nil {
				refunds.add(0)
				return
			}
			refunds.add(rep.Status)
		})
	}()

	queue := st.ns + "clicks"
	insp := asynq.NewInspectorFromRedisClient(rdb)
	kills := scale(3, 6)
	var orphans []string
	midLoad := -1
	for k := 0; k < kills; k++ {
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
		if k == 0 {
			midLoad = verifyAll(t, st, ws)
		}
	}
	killedAt := st.count(t, `SELECT count(*) FROM clicks`)
	<-salesDone

	// The drain: a worker redoes the rest and the orphaned batches.
	st.startWorker(t, []string{"--queues", "clicks", "--scheduler=false", "--concurrency", "4"}, nil)
	st.waitCount(t, nSales+n, 4*time.Minute, `SELECT count(*) FROM clicks`)
	for _, id := range orphans {
		if state := waitTaskDone(insp, queue, id, 3*time.Minute); state != "" {
			t.Errorf("orphaned batch %s is %s", id, state)
		}
	}
	stored := st.count(t, `SELECT count(*) FROM clicks`)
	counted := st.count(t, `SELECT COALESCE(sum(clicks), 0) FROM rollup_traffic_daily`)
	sc.counts(nSales+n, stored)
	diffs := verifyAll(t, st, ws)
	sc.note("%d workers killed, %d batches in hand, %d clicks stored by then; sales %s, refunds %s",
		kills, len(orphans), killedAt, sales.String(), refunds.String())
	sc.note("%d clicks stored, %d counted in the rollups; verify: %d differences mid-load, %d after the drain over %d programs",
		stored, counted, midLoad, diffs, len(ws))
	if sales.get(200) != nSales {
		t.Errorf("sales: %s of %d", sales.String(), nSales)
	}
	if stored != nSales+n || counted != stored {
		t.Errorf("clicks: %d accepted, %d stored, %d counted", nSales+n, stored, counted)
	}
	if diffs != 0 || midLoad != 0 {
		t.Errorf("verify: %d differences mid-load, %d after the drain, want 0", midLoad, diffs)
	}
}

// verifyAll runs the rollup verification of every world's program and
// returns the number of differences, logging each.
func verifyAll(t *testing.T, st *stack, ws []world) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := postgres.Open(ctx, st.dbURL, postgres.PoolConfig{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rollups := postgres.NewRollupService(db)
	total := 0
	for _, w := range ws {
		diffs, err := rollups.VerifyRollups(ctx, w.ProgramID, time.Time{}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		total += len(diffs)
		for _, d := range diffs {
			t.Logf("program %d: %s", w.ProgramID, d)
		}
	}
	return total
}
