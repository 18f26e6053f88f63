package workers_test

import (
	"testing"

	"github.com/hibiken/asynq"

	"github.com/partnertrack/partnertrack/workers"
	"github.com/partnertrack/partnertrack/workers/redistest"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

// TestSchedulerRegistersMaintenance runs the real scheduler and finds each
// periodic task among its entries, on the maintenance queue: the
// commission approval every minute and the processor sweep.
func TestSchedulerRegistersMaintenance(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	ns := redistest.Namespace(t, rdb)
	conn, err := asynq.ParseRedisURI(redistest.URL())
	if err != nil {
		t.Fatal(err)
	}
	s, err := workers.NewScheduler(conn, ns, discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	insp := asynq.NewInspectorFromRedisClient(rdb)
	for _, want := range []struct{ taskType, spec string }{
		{tasks.TypeCommissionsApprove, "@every 1m"},
		{tasks.TypeHistoryPrune, "@every 1h"},
		{tasks.TypeCommissionDigest, "@every 1h"},
		{tasks.TypeProcessorSweep, ""}, // any schedule
		{tasks.TypeSessionsTally, "@every 2s"},
	} {
		waitFor(t, "scheduler entry "+want.taskType, func() bool {
			entries, _ := insp.SchedulerEntries()
			for _, e := range entries {
				if e.Task.Type() != want.taskType || (want.spec != "" && e.Spec != want.spec) {
					continue
				}
				for _, o := range e.Opts {
					if o.Type() == asynq.QueueOpt && o.Value() == ns.Queue(tasks.QueueMaintenance) {
						return true
					}
				}
			}
			return false
		})
	}
}
