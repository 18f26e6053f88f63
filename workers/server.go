package workers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/notify"
	"github.com/partnertrack/partnertrack/notify/mail"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

// Handlers are the dependencies of every task handler.
type Handlers struct {
	Outbox      ledger.OutboxRelay
	Housekeeper ledger.Housekeeper
	Commissions ledger.CommissionService // commission approval after the hold
	Inbox       *notify.Inbox            // in-app notifications
	Traffic     ledger.TrafficStore      // click and visit batches
	// Redis and Namespace let the click handler delete the pending
	// records of the clicks it stored; a nil Redis leaves them to expire.
	Redis     redis.UniversalClient
	Namespace tasks.Namespace
	// ClickBacklog counts the click batches waiting in the queues (the
	// session tally yields to them); nil: the tally never yields.
	ClickBacklog func(context.Context) (int, error)
	Webhooks     *notify.Sender // brand webhooks
	// Mailer sends emails; nil when the worker does not serve the emails
	// queue, and then no email handler is registered.
	Mailer mail.Mailer
	// Processor processes payment-processor events; ProcessorInbox queues
	// the stored ones whose enqueue failed (the maintenance sweep).
	Processor      ledger.PaymentEventService
	ProcessorInbox ledger.ProcessorInbox
	// Digests sends the daily commission digests; nil registers no
	// handler for them.
	Digests ledger.CommissionDigester
	Logger  *slog.Logger
}

// NewMux routes each task type to its handler.
func NewMux(h Handlers) *asynq.ServeMux {
	mux := asynq.NewServeMux()
	mux.Handle(tasks.TypeOutboxSweep, &OutboxSweepHandler{Outbox: h.Outbox, Logger: h.Logger})
	mux.Handle(tasks.TypePartitionsEnsure, &PartitionsHandler{Housekeeper: h.Housekeeper})
	mux.Handle(tasks.TypeSessionsTally, &SessionsTallyHandler{Housekeeper: h.Housekeeper, Backlog: h.ClickBacklog, Logger: h.Logger})
	mux.Handle(tasks.TypeHistoryPrune, &PruneHandler{Housekeeper: h.Housekeeper, Retention: ledger.DefaultRetention, Logger: h.Logger})
	mux.Handle(tasks.TypeCommissionsApprove, &CommissionApprovalHandler{Commissions: h.Commissions, Logger: h.Logger})
	mux.Handle(tasks.TypeNotificationDeliver, &NotificationHandler{Inbox: h.Inbox})
	mux.Handle(tasks.TypeClickBatch, &ClickBatchHandler{Store: h.Traffic, Redis: h.Redis, Namespace: h.Namespace, Logger: h.Logger})
	mux.Handle(tasks.TypeVisitBatch, &VisitBatchHandler{Store: h.Traffic, Logger: h.Logger})
	mux.Handle(tasks.TypeWebhookDeliver, &WebhookHandler{Sender: h.Webhooks})
	mux.Handle(tasks.TypeProcessorEvent, &ProcessorHandler{Events: h.Processor, Logger: h.Logger})
	mux.Handle(tasks.TypeProcessorSweep, &ProcessorSweepHandler{Inbox: h.ProcessorInbox, Logger: h.Logger})
	if h.Mailer != nil {
		mux.Handle(tasks.TypeEmailSend, &EmailHandler{Mailer: h.Mailer, Logger: h.Logger})
	}
	if h.Digests != nil {
		mux.Handle(tasks.TypeCommissionDigest, &CommissionDigestHandler{Digests: h.Digests, Logger: h.Logger})
	}
	return mux
}

// ServerConfig configures a worker process.
type ServerConfig struct {
	Queues      map[string]int // full queue names and weights
	Concurrency int
	Logger      *slog.Logger
	// Retry is the retry policy; zero values take the defaults.
	Retry RetryPolicy
	// DelayedTaskCheckInterval is how often retried and scheduled tasks
	// are moved back to their queue (asynq's default, 5 s, when zero), and
	// TaskCheckInterval how often empty queues are polled (1 s); tests
	// shorten them.
	DelayedTaskCheckInterval time.Duration
	TaskCheckInterval        time.Duration
}

// NewServer returns an asynq server over the shared Redis client.
func NewServer(client redis.UniversalClient, cfg ServerConfig) *asynq.Server {
	logger := cfg.Logger
	if cfg.Retry.Webhooks == (notify.Backoff{}) {
		cfg.Retry.Webhooks = notify.DefaultBackoff
	}
	return asynq.NewServerFromRedisClient(client, asynq.Config{
		Concurrency:              cfg.Concurrency,
		Queues:                   cfg.Queues,
		Logger:                   asynqLogger{logger},
		IsFailure:                isFailure,
		RetryDelayFunc:           cfg.Retry.retryDelay,
		DelayedTaskCheckInterval: cfg.DelayedTaskCheckInterval,
		TaskCheckInterval:        cfg.TaskCheckInterval,
		ErrorHandler: asynq.ErrorHandlerFunc(func(ctx context.Context, task *asynq.Task, err error) {
			id, _ := asynq.GetTaskID(ctx)
			retried, _ := asynq.GetRetryCount(ctx)
			maxRetry, _ := asynq.GetMaxRetry(ctx)
			level := slog.LevelWarn
			switch {
			case !isFailure(err):
				level = slog.LevelDebug // deferred behind an open breaker; no retry spent
			case retried >= maxRetry || errors.Is(err, asynq.SkipRetry):
				level = slog.LevelError // archived: visible in the dashboard's archive
			}
			logger.Log(ctx, level, "task failed", "type", task.Type(), "task_id", id,
				"retried", retried, "max_retry", maxRetry, "err", err)
		}),
	})
}

// NewScheduler returns the one scheduler of the deployment with the
// periodic maintenance tasks registered.
func NewScheduler(conn asynq.RedisConnOpt, ns tasks.Namespace, logger *slog.Logger) (*asynq.Scheduler, error) {
	s := asynq.NewScheduler(conn, &asynq.SchedulerOpts{Logger: asynqLogger{logger}})
	q := asynq.Queue(ns.Queue(tasks.QueueMaintenance))
	for _, e := range []struct {
		spec string
		task *asynq.Task
	}{
		{"@every 5s", tasks.NewOutboxSweepTask()},
		{"@every 10s", tasks.NewProcessorSweepTask()},
		{"@every 2s", tasks.NewSessionsTallyTask()},
		{"@every 1h", tasks.NewPartitionsEnsureTask()},
		{"@every 1h", tasks.NewHistoryPruneTask()},
		{"@every 1m", tasks.NewCommissionsApproveTask()},
		{"@every 1h", tasks.NewCommissionDigestTask()},
	} {
		// A periodic task must not carry a fixed TaskID (asynq would refuse
		// every run after the first while the first is retained).
		if _, err := s.Register(e.spec, e.task, q, asynq.MaxRetry(1)); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// asynqLogger sends asynq's own log lines to slog.
type asynqLogger struct{ l *slog.Logger }

func (a asynqLogger) Debug(args ...any) { a.l.Debug(sprint(args)) }
func (a asynqLogger) Info(args ...any)  { a.l.Info(sprint(args)) }
func (a asynqLogger) Warn(args ...any)  { a.l.Warn(sprint(args)) }
func (a asynqLogger) Error(args ...any) { a.l.Error(sprint(args)) }
func (a asynqLogger) Fatal(args ...any) { a.l.Error(sprint(args)) }

func sprint(args []any) string { return fmt.Sprint(args...) }
