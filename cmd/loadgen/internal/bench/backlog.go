package bench

import (
	"context"
	"database/sql"
	"time"

	"github.com/partnertrack/partnertrack/cmd/loadgen/internal/stack"
)

// backlogSampler samples, once a second, how many accepted clicks are not
// yet in Postgres and how many tasks wait in the namespace's queues.
//
// What is in Postgres is read from its statistics (clicksInserted), not
// counted: counting the program's clicks reads every one of them, about
// half a second of a core at 600 k clicks, once a second, taken from the
// system it measures. The statistics lag the inserts by up to about a
// second, so a sampled backlog is at most a second of load too high,
// never too low. Nothing else inserts clicks during the phase. The
// starting point is the larger of the statistics and a count of the
// rows (clicksBase): a backend that went idle may report the inserts of
// the phase before only some seconds later, which would otherwise be
// taken for this phase's and read the backlog low.
type backlogSampler struct {
	b        *bench
	before   int64 // clicksInserted when the phase began
	accepted *counter
	maxLag   int64
	maxTasks int64
}

func newBacklogSampler(b *bench, before int64, accepted *counter) *backlogSampler {
	return &backlogSampler{b: b, before: before, accepted: accepted}
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
		if n, err := s.b.clicksInserted(ctx); err == nil {
			if lag := acc - (n - s.before); lag > s.maxLag {
				s.maxLag = lag
			}
		}
		if tasks, err := stack.QueuedTasks(s.b.cfg.RedisURL, s.b.ns); err == nil && tasks > s.maxTasks {
			s.maxTasks = tasks
		}
	}
}

// clicksInserted is how many rows Postgres's statistics say were inserted
// into the clicks partitions so far.
func (b *bench) clicksInserted(ctx context.Context) (int64, error) {
	var n int64
	err := b.db.QueryRowContext(ctx, `
		SELECT COALESCE(sum(n_tup_ins), 0)::bigint FROM pg_stat_user_tables
		WHERE relid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'clicks'::regclass)`).Scan(&n)
	return n, err
}

// clicksBase is where a backlog sampler starts: the inserts the
// statistics report, or the rows in the clicks table if more (the
// statistics of the last inserts still unreported), so that a late
// report can only read the backlog high.
func (b *bench) clicksBase(ctx context.Context) (int64, error) {
	inserted, err := b.clicksInserted(ctx)
	if err != nil {
		return 0, err
	}
	var rows int64
	if err := b.db.QueryRowContext(ctx, `SELECT count(*) FROM clicks`).Scan(&rows); err != nil {
		return 0, err
	}
	return max(inserted, rows), nil
}

// settle waits, before a measured phase, until the worker has no task
// pending or running (the notifications, processor events and clicks of
// the phases before), so that each phase measures its own work and not
// the backlog of the one before it on the same two cores, then
// checkpoints Postgres (see checkpoint). It gives up waiting after
// drainWait and says so; the wait, when there was one, is noted.
func (b *bench) settle(ctx context.Context, before string) {
	defer b.checkpoint(ctx, before)
	start := time.Now()
	for {
		n, err := stack.BusyTasks(b.cfg.RedisURL, b.ns)
		if err == nil && n == 0 {
			break
		}
		if time.Since(start) > b.p.drainWait {
			b.note("%s: the worker still had %d tasks in hand after %s; measured anyway", before, n, b.p.drainWait)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
	if waited := time.Since(start); waited >= time.Second {
		b.note("%s: waited %s for the worker to finish the tasks of the phases before", before, waited.Round(100*time.Millisecond))
	}
}

// checkpoint runs a Postgres checkpoint before a measured phase. The WAL of
// the phases before (hundreds of thousands of clicks) otherwise forces a
// checkpoint once max_wal_size is reached (1 GB on the shared server): in
// each of the six runs of 2026-11-21 one started about a minute before
// the listing and spread its writes over the refund phases, which were
// measured against a raw transaction that ran without one. So every
// Postgres phase, the raw sale transaction's too, starts right after a
// checkpoint, and none is forced in the middle of a phase of ten or
// twenty seconds. A checkpoint that fails (a role without the right) is
// noted and the phase runs anyway.
func (b *bench) checkpoint(ctx context.Context, before string) {
	db, err := sql.Open("postgres", b.cfg.AdminURL)
	if err == nil {
		_, err = db.ExecContext(ctx, `CHECKPOINT`)
		db.Close()
	}
	if err != nil {
		b.note("%s: no checkpoint before the phase: %v", before, err)
	}
}
