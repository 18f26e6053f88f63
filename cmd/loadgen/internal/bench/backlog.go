package bench

import (
	"context"
	"time"

	"github.com/partnertrack/partnertrack/cmd/loadgen/internal/stack"
)

// backlogSampler samples, once a second, how many accepted clicks are not
// yet in Postgres and how many tasks wait in the namespace's queues.
type backlogSampler struct {
	b         *bench
	programID int64
	before    int64
	accepted  *counter
	maxLag    int64
	maxTasks  int64
}

func newBacklogSampler(b *bench, programID, before int64, accepted *counter) *backlogSampler {
	return &backlogSampler{b: b, programID: programID, before: before, accepted: accepted}
}

func (s *backlogSampler) run(ctx context.Context, stop <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		acc := s.accepted.Load()
		if n, err := s.b.clicksIn(ctx, s.programID); err == nil {
			if lag := acc - (n - s.before); lag > s.maxLag {
				s.maxLag = lag
			}
		}
		if tasks, err := stack.QueuedTasks(s.b.cfg.RedisURL, s.b.ns); err == nil && tasks > s.maxTasks {
			s.maxTasks = tasks
		}
	}
}
