package workers

import (
	"errors"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/partnertrack/partnertrack/workers/tasks"
)

// TestRetryDelayTrafficBatches: a click or visit batch's first retry comes
// after 1 to 3 s (a killed worker's batch is redone a minute sooner);
// later retries, and other task types, keep asynq's schedule.
func TestRetryDelayTrafficBatches(t *testing.T) {
	var p RetryPolicy
	err := errors.New("write failed")
	for _, typ := range []string{tasks.TypeClickBatch, tasks.TypeVisitBatch} {
		task := asynq.NewTask(typ, nil)
		for range 50 {
			if d := p.retryDelay(0, asynq.ErrLeaseExpired, task); d < time.Second || d >= 3*time.Second {
				t.Fatalf("%s first retry after %v, want 1 s to 3 s", typ, d)
			}
			if d := p.retryDelay(2, err, task); d < 31*time.Second {
				t.Fatalf("%s third retry after %v, want asynq's schedule (at least 2^4+15 s)", typ, d)
			}
		}
	}
	if d := p.retryDelay(0, err, asynq.NewTask(tasks.TypeOutboxSweep, nil)); d < 15*time.Second {
		t.Fatalf("a maintenance task's first retry after %v, want asynq's 15 s or more", d)
	}
}
