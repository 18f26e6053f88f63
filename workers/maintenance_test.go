package workers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/workers"
	"github.com/partnertrack/partnertrack/workers/redistest"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

// TestSessionsTallyHandler: the periodic task counts the sessions of
// stored clicks into the unique visitors, all of them in one run, and a
// run with nothing pending changes nothing; while click batches wait it
// yields to them, for at most 30 s.
func TestSessionsTallyHandler(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	fx := db.MustFixture(t, "pat")
	ctx := context.Background()
	clicks := make([]ledger.Click, 12)
	for i := range clicks {
		id := ledger.NewClickID(time.Now())
		at, _ := ledger.ClickTime(id)
		clicks[i] = ledger.Click{ID: id, OccurredAt: at, ProgramID: fx.ProgramID, PartnerID: &fx.PartnerID,
			SessionID: fmt.Sprintf("sess_%d", i%5)}
	}
	if _, err := postgres.NewTrafficStore(db.DB).WriteClicks(ctx, clicks); err != nil {
		t.Fatal(err)
	}
	visitors := func() (n int64) {
		t.Helper()
		if err := db.QueryRow(`SELECT COALESCE(sum(visitors), 0) FROM rollup_visitors_daily WHERE program_id = $1`,
			fx.ProgramID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := visitors(); n != 0 {
		t.Fatalf("%d visitors before the tally, want 0", n)
	}
	// While click batches wait in the queues, runs yield to them, but not
	// for longer than 30 s since the tally last ran, however many runs
	// come in that time.
	waiting := 11
	clock := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	h := &workers.SessionsTallyHandler{Housekeeper: postgres.NewHousekeeper(db.DB), Logger: quiet,
		Backlog: func(context.Context) (int, error) { return waiting, nil }, Now: func() time.Time { return clock }}
	for run := 1; run <= 40; run++ {
		if err := h.ProcessTask(ctx, tasks.NewSessionsTallyTask()); err != nil {
			t.Fatal(err)
		}
		if n := visitors(); n != 0 {
			t.Fatalf("run %d with 11 batches waiting tallied %d visitors, want it to yield", run, n)
		}
		if run%4 == 0 {
			clock = clock.Add(3 * time.Second) // 40 runs over 27 s
		}
	}
	clock = clock.Add(time.Second) // 31 s since the first yield
	for range 2 {
		if err := h.ProcessTask(ctx, tasks.NewSessionsTallyTask()); err != nil {
			t.Fatal(err)
		}
		if n := visitors(); n != 5 {
			t.Fatalf("%d visitors after the tally, want 5", n)
		}
	}
	// With no backlog, a run tallies at once.
	more := ledger.Click{ID: ledger.NewClickID(time.Now()), ProgramID: fx.ProgramID, SessionID: "sess_new"}
	more.OccurredAt, _ = ledger.ClickTime(more.ID)
	if _, err := postgres.NewTrafficStore(db.DB).WriteClicks(ctx, []ledger.Click{more}); err != nil {
		t.Fatal(err)
	}
	waiting = 10
	if err := h.ProcessTask(ctx, tasks.NewSessionsTallyTask()); err != nil {
		t.Fatal(err)
	}
	if n := visitors(); n != 6 {
		t.Fatalf("%d visitors after a run with 10 batches waiting, want 6", n)
	}
	diffs, err := postgres.NewRollupService(db.DB).VerifyRollups(ctx, fx.ProgramID, time.Time{}, time.Time{})
	if err != nil || len(diffs) != 0 {
		t.Fatalf("verify: %v %v", diffs, err)
	}
}

// TestClickBacklog counts the click batches pending in every click queue
// of the namespace, the shards' and the unsharded one's, and nothing
// from other queues.
func TestClickBacklog(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	ns := redistest.Namespace(t, rdb)
	insp := asynq.NewInspectorFromRedisClient(rdb)
	backlog := workers.ClickBacklog(insp, ns, 2)
	if n, err := backlog(context.Background()); err != nil || n != 0 {
		t.Fatalf("no queue yet: %d, %v", n, err)
	}
	client := asynq.NewClientFromRedisClient(rdb)
	for _, q := range []string{"clicks-0", "clicks-1", "clicks-1", "clicks", "visits-0", "maintenance"} {
		if _, err := client.Enqueue(tasks.NewClickBatchTask(nil), asynq.Queue(ns.Queue(q))); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := backlog(context.Background()); err != nil || n != 4 {
		t.Fatalf("backlog %d (%v), want 4", n, err)
	}
}
