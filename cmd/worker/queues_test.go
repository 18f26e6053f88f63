package main

import (
	"maps"
	"slices"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/workers/redistest"
)

// TestWorkerServesItsQueuesAlone runs the worker once per queue family, as
// docker-compose.yml does, and reads from its asynq heartbeat that each
// process serves exactly its queues.
func TestWorkerServesItsQueuesAlone(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc   string
		queues string
		want   []string
	}{
		{"Notifications", "notifications", []string{"notifications"}},
		{"Webhooks", "webhooks", []string{"webhooks"}},
		{"ClicksAndVisits", "clicks,visits", []string{"clicks", "visits"}},
		{"Processor", "processor", []string{"processor"}},
		{"Emails", "emails", []string{"emails"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			db := pgtest.New(t)
			rdb := redistest.Client(t)
			ns := redistest.Namespace(t, rdb)
			MustRunWorker(t, testEnv(db, ns), "--queues", tc.queues, "--scheduler=false", "--concurrency", "1")
			var want []string
			for _, q := range tc.want {
				want = append(want, ns.Queue(q))
			}
			insp := asynq.NewInspectorFromRedisClient(rdb)
			var served []string
			waitUntil(t, "the worker's heartbeat", func() bool {
				servers, _ := insp.Servers()
				for _, s := range servers {
					qs := slices.Sorted(maps.Keys(s.Queues))
					if len(qs) > 0 && len(qs[0]) > len(ns) && qs[0][:len(ns)] == string(ns) {
						served = qs
						return true
					}
				}
				return false
			})
			if !slices.Equal(served, want) {
				t.Fatalf("the worker serves %v, want %v", served, want)
			}
		})
	}
}
