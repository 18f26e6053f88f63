package stack

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

func inspector(redisURL string) (*asynq.Inspector, error) {
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		return nil, err
	}
	return asynq.NewInspector(asynq.RedisClientOpt{Addr: opt.Addr, DB: opt.DB, Username: opt.Username, Password: opt.Password}), nil
}

// QueuedTasks is how many tasks wait (pending, active, scheduled, retry,
// aggregating) in the asynq queues whose names start with ns.
func QueuedTasks(redisURL, ns string) (int64, error) {
	return countTasks(redisURL, ns, func(q *asynq.QueueInfo) int {
		return q.Pending + q.Active + q.Scheduled + q.Retry + q.Aggregating
	})
}

// BusyTasks is how many tasks are pending or running in the asynq queues
// whose names start with ns: the work a worker has in hand now (retries
// waiting out their delay are not).
func BusyTasks(redisURL, ns string) (int64, error) {
	return countTasks(redisURL, ns, func(q *asynq.QueueInfo) int { return q.Pending + q.Active })
}

// BusyClickTasks is BusyTasks of the click queues alone (ns+"clicks", and
// its shards ns+"clicks-N"): the click batches a worker has in hand, not
// its maintenance tasks.
func BusyClickTasks(redisURL, ns string) (int64, error) {
	return countTasks(redisURL, ns+"clicks", func(q *asynq.QueueInfo) int { return q.Pending + q.Active })
}

func countTasks(redisURL, ns string, count func(*asynq.QueueInfo) int) (int64, error) {
	insp, err := inspector(redisURL)
	if err != nil {
		return 0, err
	}
	defer insp.Close()
	queues, err := insp.Queues()
	if err != nil {
		return 0, err
	}
	var n int64
	for _, q := range queues {
		if !strings.HasPrefix(q, ns) {
			continue
		}
		info, err := insp.GetQueueInfo(q)
		if err != nil {
			return 0, err
		}
		n += int64(count(info))
	}
	return n, nil
}

// CleanNamespace deletes, from a shared Redis, the asynq queues whose
// names start with ns and every key of the namespace (ns… and asynq:{ns…}),
// and nothing else. The processes using them must have stopped.
func CleanNamespace(redisURL, ns string) error {
	if ns == "" {
		return errors.New("stack: refusing to clean an empty namespace")
	}
	insp, err := inspector(redisURL)
	if err != nil {
		return err
	}
	defer insp.Close()
	queues, err := insp.Queues()
	if err != nil {
		return err
	}
	var errs []error
	for _, q := range queues {
		if strings.HasPrefix(q, ns) {
			if err := insp.DeleteQueue(q, true); err != nil && !errors.Is(err, asynq.ErrQueueNotFound) {
				errs = append(errs, err)
			}
		}
	}
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, pattern := range []string{ns + "*", "asynq:{" + ns + "*"} {
		iter := rdb.Scan(ctx, 0, pattern, 1000).Iterator()
		var batch []string
		for iter.Next(ctx) {
			batch = append(batch, iter.Val())
			if len(batch) == 1000 {
				errs = append(errs, rdb.Unlink(ctx, batch...).Err())
				batch = batch[:0]
			}
		}
		if len(batch) > 0 {
			errs = append(errs, rdb.Unlink(ctx, batch...).Err())
		}
		errs = append(errs, iter.Err())
	}
	return errors.Join(errs...)
}
