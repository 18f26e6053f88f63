package stack

import (
	"testing"

	"github.com/hibiken/asynq"

	"github.com/partnertrack/partnertrack/workers/redistest"
)

// TestBusyClickTasks counts the pending tasks of the namespace's click
// queues (the unsharded one and the shards) and nothing else, where
// BusyTasks counts every queue of the namespace.
func TestBusyClickTasks(t *testing.T) {
	rdb := redistest.Client(t)
	ns := string(redistest.Namespace(t, rdb))
	client := asynq.NewClientFromRedisClient(rdb)
	for _, q := range []string{"clicks", "clicks-0", "clicks-1", "maintenance", "visits"} {
		if _, err := client.Enqueue(asynq.NewTask("t", nil), asynq.Queue(ns+q)); err != nil {
			t.Fatal(err)
		}
	}
	clicks, err := BusyClickTasks(redistest.URL(), ns)
	if err != nil || clicks != 3 {
		t.Fatalf("click tasks %d (%v), want 3", clicks, err)
	}
	all, err := BusyTasks(redistest.URL(), ns)
	if err != nil || all != 5 {
		t.Fatalf("all tasks %d (%v), want 5", all, err)
	}
}
