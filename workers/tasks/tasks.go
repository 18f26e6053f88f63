// Package tasks names the asynq queues and task types of the service and
// builds their tasks. The edge, the ledger's enqueuer and cmd import only
// this small package, never the handlers in package workers.
package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/sony/gobreaker/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// Queue names, before the optional namespace.
const (
	QueueClicks        = "clicks"
	QueueVisits        = "visits"
	QueueProcessor     = "processor"
	QueueNotifications = "notifications"
	QueueWebhooks      = "webhooks"
	QueueEmails        = ledger.OutboxQueueEmails
	QueueMaintenance   = "maintenance"
)

// AllQueues lists every queue with its weight when one worker serves
// several (asynq's weighted priority).
var AllQueues = map[string]int{
	QueueClicks:        4,
	QueueVisits:        2,
	QueueProcessor:     4,
	QueueNotifications: 2,
	QueueWebhooks:      2,
	QueueEmails:        1,
	QueueMaintenance:   1,
}

// Task types.
const (
	TypeOutboxSweep      = "outbox:sweep"
	TypePartitionsEnsure = "partitions:ensure"
	TypeHistoryPrune     = "history:prune"
	TypeSessionsTally    = "sessions:tally"
)

// Namespace prefixes queue names. Production leaves it empty; tests give
// each test its own namespace, because asynq has no key prefix and shares
// one Redis.
type Namespace string

// Queue returns the full name of a queue.
func (ns Namespace) Queue(name string) string { return string(ns) + name }

// TrafficQueue is shard i of a traffic queue (QueueClicks or QueueVisits)
// spread over shards queues: the queue itself when shards is 1, else
// queue-i. Every shard is an asynq queue of its own, whose keys share one
// hash slot ({queue}), so in a Redis Cluster the shards spread over the
// primaries.
func TrafficQueue(queue string, i, shards int) string {
	if shards <= 1 {
		return queue
	}
	return queue + "-" + strconv.Itoa(i)
}

// TrafficQueues lists the queues of a traffic queue spread over shards
// queues that a worker drains: the queue itself when shards is 1; else
// every shard and the queue itself, which still holds what was queued
// while shards was 1.
func TrafficQueues(queue string, shards int) []string {
	if shards <= 1 {
		return []string{queue}
	}
	out := make([]string, 0, shards+1)
	for i := 0; i < shards; i++ {
		out = append(out, TrafficQueue(queue, i, shards))
	}
	return append(out, queue)
}

// trafficShard reads a shard's name (queue-i, as TrafficQueue writes it)
// into its traffic queue and index.
func trafficShard(name string) (queue string, i int, ok bool) {
	for _, q := range []string{QueueClicks, QueueVisits} {
		digits, found := strings.CutPrefix(name, q+"-")
		if !found {
			continue
		}
		n, err := strconv.Atoi(digits)
		if err != nil || n < 0 || strconv.Itoa(n) != digits {
			return "", 0, false
		}
		return q, n, true
	}
	return "", 0, false
}

// Queues maps the named queues (comma-separated, or "all"/"") to their
// full names and weights, with the click and visit traffic spread over
// shards queues each (TRAFFIC_SHARDS): "clicks" names every click queue
// (TrafficQueues), "clicks-2" only that shard.
func (ns Namespace) Queues(names string, shards int) (map[string]int, error) {
	if shards < 1 {
		shards = 1
	}
	out := make(map[string]int)
	add := func(q string, w int) {
		if q == QueueClicks || q == QueueVisits {
			for _, s := range TrafficQueues(q, shards) {
				out[ns.Queue(s)] = w
			}
			return
		}
		out[ns.Queue(q)] = w
	}
	if names == "" || names == "all" {
		for q, w := range AllQueues {
			add(q, w)
		}
		return out, nil
	}
	for _, q := range strings.Split(names, ",") {
		q = strings.TrimSpace(q)
		if w, ok := AllQueues[q]; ok {
			add(q, w)
			continue
		}
		base, i, ok := trafficShard(q)
		switch {
		case ok && shards > 1 && i < shards:
			out[ns.Queue(q)] = AllQueues[base]
		case ok && shards == 1:
			return nil, fmt.Errorf("queue %q is a shard, but TRAFFIC_SHARDS is 1: the %s traffic has the one queue %s", q, base, base)
		case ok:
			return nil, fmt.Errorf("queue %q is not a shard of TRAFFIC_SHARDS=%d: the %s shards are %s … %s",
				q, shards, base, TrafficQueue(base, 0, shards), TrafficQueue(base, shards-1, shards))
		default:
			return nil, fmt.Errorf("unknown queue %q (queues: clicks, visits, processor, notifications, webhooks, emails, maintenance, or one traffic shard such as clicks-0)", q)
		}
	}
	return out, nil
}

// SplitTraffic splits the namespace's full queue names (from Queues) into
// the click and visit queues (every shard) and the others.
func (ns Namespace) SplitTraffic(queues map[string]int) (traffic, others map[string]int) {
	traffic, others = map[string]int{}, map[string]int{}
	for q, w := range queues {
		name, inNS := strings.CutPrefix(q, string(ns))
		_, _, shard := trafficShard(name)
		if inNS && (name == QueueClicks || name == QueueVisits || shard) {
			traffic[q] = w
		} else {
			others[q] = w
		}
	}
	return traffic, others
}

// OutboxPayload is the payload of every task relayed from the outbox: the
// outbox row's id, the consumer's idempotency key, and the message.
type OutboxPayload struct {
	OutboxID int64           `json:"outbox_id"`
	Data     json.RawMessage `json:"data"`
}

// OutboxTaskID is the asynq TaskID of an outbox message, so a message
// enqueued twice (relay and sweep) runs once while the task is stored.
func OutboxTaskID(id int64) string { return fmt.Sprintf("outbox-%d", id) }

// outboxRetention keeps finished outbox tasks long enough for their TaskID
// to dedupe a late second enqueue by the sweep.
const outboxRetention = time.Hour

// Enqueuer is the asynq implementation of ledger.Enqueuer.
type Enqueuer struct {
	Client    *asynq.Client
	Namespace Namespace
	MaxRetry  int
	// Breaker, when set, fails enqueues fast while Redis is unreachable, so
	// a sale's relay after commit does not wait out a Redis timeout; the
	// outbox sweep sends the messages once Redis is back.
	Breaker *gobreaker.CircuitBreaker[struct{}]
}

// NewRedisBreaker returns a breaker that opens after five consecutive Redis
// failures and tries again after five seconds.
func NewRedisBreaker(name string, onChange func(name string, from, to gobreaker.State)) *gobreaker.CircuitBreaker[struct{}] {
	return gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		Name:          name,
		Timeout:       5 * time.Second,
		ReadyToTrip:   func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= 5 },
		OnStateChange: onChange,
	})
}

var _ ledger.Enqueuer = (*Enqueuer)(nil)

// Enqueue enqueues each message with its outbox id as TaskID, stopping at
// the first failure; a TaskID conflict means the message is already queued.
func (e *Enqueuer) Enqueue(ctx context.Context, msgs []ledger.OutboxMessage) ([]int64, error) {
	sent := make([]int64, 0, len(msgs))
	for _, m := range msgs {
		payload, err := json.Marshal(OutboxPayload{OutboxID: m.ID, Data: m.Payload})
		if err != nil {
			return sent, err
		}
		opts := []asynq.Option{
			asynq.Queue(e.Namespace.Queue(m.Queue)),
			asynq.TaskID(OutboxTaskID(m.ID)),
			asynq.Retention(outboxRetention),
		}
		if n, ok := maxRetryByType[m.TaskType]; ok {
			opts = append(opts, asynq.MaxRetry(n))
		} else if e.MaxRetry > 0 {
			opts = append(opts, asynq.MaxRetry(e.MaxRetry))
		}
		if err := e.enqueue(ctx, asynq.NewTask(m.TaskType, payload), opts); err != nil {
			return sent, fmt.Errorf("enqueue outbox %d: %w", m.ID, err)
		}
		sent = append(sent, m.ID)
	}
	return sent, nil
}

// enqueue enqueues one task through the breaker; a TaskID conflict means
// the task is already queued, which is success.
func (e *Enqueuer) enqueue(ctx context.Context, task *asynq.Task, opts []asynq.Option) error {
	call := func() (struct{}, error) {
		_, err := e.Client.EnqueueContext(ctx, task, opts...)
		if errors.Is(err, asynq.ErrTaskIDConflict) {
			err = nil
		}
		return struct{}{}, err
	}
	if e.Breaker == nil {
		_, err := call()
		return err
	}
	_, err := e.Breaker.Execute(call)
	return err
}

// DecodeOutbox decodes an outbox task's payload; a payload that does not
// decode is not retried.
func DecodeOutbox(t *asynq.Task, data any) (int64, error) {
	var p OutboxPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil {
		return 0, fmt.Errorf("decode %s payload: %v: %w", t.Type(), err, asynq.SkipRetry)
	}
	if data != nil {
		if err := json.Unmarshal(p.Data, data); err != nil {
			return 0, fmt.Errorf("decode %s data: %v: %w", t.Type(), err, asynq.SkipRetry)
		}
	}
	return p.OutboxID, nil
}

// NewOutboxSweepTask builds the periodic outbox sweep.
func NewOutboxSweepTask() *asynq.Task { return asynq.NewTask(TypeOutboxSweep, nil) }

// NewPartitionsEnsureTask builds the periodic creation of future
// click and visit partitions.
func NewPartitionsEnsureTask() *asynq.Task { return asynq.NewTask(TypePartitionsEnsure, nil) }

// NewSessionsTallyTask builds the periodic tally of the rollups' unique
// visitors.
func NewSessionsTallyTask() *asynq.Task { return asynq.NewTask(TypeSessionsTally, nil) }

// NewHistoryPruneTask builds the periodic deletion of delivered history
// past its retention (sent outbox messages, webhook delivery attempts).
func NewHistoryPruneTask() *asynq.Task { return asynq.NewTask(TypeHistoryPrune, nil) }
