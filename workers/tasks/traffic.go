package tasks

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/hibiken/asynq"

	"github.com/partnertrack/partnertrack/ledger"
)

// Task types of the click and visit queues: one task carries a whole
// batch (asynq keeps about 700 bytes of Redis per task, so a task per
// click would cost more than the click).
const (
	TypeClickBatch = "click:batch"
	TypeVisitBatch = "visit:batch"
)

// PendingClickTTL is how long the edge keeps a click's record in Redis
// for a lead or sale that names a click whose batch has not reached
// Postgres yet: far past the worst queue delay.
const PendingClickTTL = 24 * time.Hour

// Key returns the namespaced name of a plain Redis key (the pending-click
// hashes, the cache invalidation channel), so that tests isolate their
// keys the way they isolate their queues.
func (ns Namespace) Key(name string) string { return string(ns) + name }

// PendingClicksKey is the Redis hash that holds the records of the clicks
// of the second at whose batch went to queue (a traffic queue's shard,
// TrafficQueue; field: click id, value: the click's wire form). A click id
// carries its time, so a reader finds the hash from the id alone, in each
// shard. One hash per second lets the edge write a whole batch with one
// HSET and one EXPIRE instead of a key per click, and keeps each hash
// small enough to expire without stalling Redis. The hash carries the
// queue's hash tag, {<full queue name>}, as asynq's keys of that queue do,
// so that a batch's records and its task live on one Redis Cluster node
// (REDIS_WAIT_REPLICAS waits on that node for both).
func (ns Namespace) PendingClicksKey(queue string, at time.Time) string {
	return ns.PendingClicksKeyOf(ns.Queue(queue), at)
}

// PendingClicksKeyOf is PendingClicksKey of a queue named as asynq names
// it (asynq.GetQueueName in a task's handler: the namespaced shard).
func (ns Namespace) PendingClicksKeyOf(asynqQueue string, at time.Time) string {
	return ns.Key("clicks:pending:{" + asynqQueue + "}:" + strconv.FormatInt(at.Unix(), 10))
}

// ReplicatedKey is a small key in queue's hash slot that the edge
// overwrites after queuing a batch without records (visits) when it waits
// for replicas: WAIT counts only the writes of its own connection, and
// asynq enqueues on a connection of its pool, so a write of the edge's
// own, on the same primary and after the task, is what the replicas
// acknowledge.
func (ns Namespace) ReplicatedKey(queue string) string {
	return ns.Key("traffic:replicated:{" + ns.Queue(queue) + "}")
}

// clickWire is a click as the queue and its pending record carry it.
// Keys are short because a batch carries hundreds of clicks; the time is
// not carried, because the click id holds it.
type clickWire struct {
	ID          string `json:"id"`
	ProgramID   int64  `json:"pg"`
	PartnerID   *int64 `json:"pa,omitempty"`
	LinkID      *int64 `json:"ln,omitempty"`
	IsTest      bool   `json:"t,omitempty"`
	SessionID   string `json:"s,omitempty"`
	PageURL     string `json:"u,omitempty"`
	ReferrerURL string `json:"r,omitempty"`
	GeoCountry  string `json:"gc,omitempty"`
	GeoRegion   string `json:"gr,omitempty"`
	GeoCity     string `json:"gy,omitempty"`
	DeviceType  string `json:"dt,omitempty"`
	DeviceOS    string `json:"os,omitempty"`
	BrowserName string `json:"b,omitempty"`
	IP          string `json:"ip,omitempty"`
	UserAgent   string `json:"ua,omitempty"`
}

// EncodeClick returns a click's wire form: the value of its pending
// record and its element in a batch payload (appendClickWire).
func EncodeClick(c *ledger.Click) ([]byte, error) {
	n := len(c.ID) + len(c.SessionID) + len(c.PageURL) + len(c.ReferrerURL) + len(c.GeoCountry) + len(c.GeoRegion) +
		len(c.GeoCity) + len(c.DeviceType) + len(c.DeviceOS) + len(c.BrowserName) + len(c.IP) + len(c.UserAgent)
	// Keys and numbers, and room for escapes (an & in a URL takes six
	// bytes), so that one allocation holds it.
	return appendClickWire(make([]byte, 0, 128+n+n/4), c), nil
}

// The wire forms of clicks and visits are read with the JSON v2 decoder
// (go-json-experiment/json, the design of encoding/json/v2): a batch of
// clicks decodes 2.7 times as fast as with encoding/json, which took a
// third of the click worker's CPU (docs/decisions.md). Where v2 is
// stricter than v1 (member names matched exactly, no duplicate names,
// valid UTF-8 only) nothing changes: the edge writes exact names once
// each and valid UTF-8, as encoding/json did (TestWireDecodesAsV1).

// DecodeClick reads a click's wire form.
func DecodeClick(b []byte) (*ledger.Click, error) {
	var w clickWire
	if err := jsonv2.Unmarshal(b, &w); err != nil {
		return nil, err
	}
	return w.click()
}

func (w *clickWire) click() (*ledger.Click, error) {
	at, ok := ledger.ClickTime(w.ID)
	if !ok {
		return nil, fmt.Errorf("%q is not a click id", w.ID)
	}
	return &ledger.Click{
		ID: w.ID, OccurredAt: at, ProgramID: w.ProgramID, PartnerID: w.PartnerID, LinkID: w.LinkID,
		IsTest: w.IsTest, SessionID: w.SessionID, PageURL: w.PageURL, ReferrerURL: w.ReferrerURL,
		GeoCountry: w.GeoCountry, GeoRegion: w.GeoRegion, GeoCity: w.GeoCity,
		DeviceType: w.DeviceType, DeviceOS: w.DeviceOS, BrowserName: w.BrowserName,
		IP: w.IP, UserAgent: w.UserAgent,
	}, nil
}

// NewClickBatchTask builds the task of one batch from the clicks' wire
// forms (EncodeClick), joined into a JSON array without re-encoding.
func NewClickBatchTask(encoded [][]byte) *asynq.Task {
	return asynq.NewTask(TypeClickBatch, joinArray(encoded))
}

// DecodeClickBatch reads a click batch; a payload that does not decode is
// not retried.
func DecodeClickBatch(t *asynq.Task) ([]ledger.Click, error) {
	var ws []clickWire
	if err := jsonv2.Unmarshal(t.Payload(), &ws); err != nil {
		return nil, fmt.Errorf("decode %s payload: %v: %w", t.Type(), err, asynq.SkipRetry)
	}
	out := make([]ledger.Click, 0, len(ws))
	for i := range ws {
		c, err := ws[i].click()
		if err != nil {
			return nil, fmt.Errorf("decode %s payload: %v: %w", t.Type(), err, asynq.SkipRetry)
		}
		out = append(out, *c)
	}
	return out, nil
}

// visitWire is a visit as the queue carries it.
type visitWire struct {
	ID          string `json:"id"`
	ProgramID   int64  `json:"pg"`
	ClickID     string `json:"c,omitempty"`
	SessionID   string `json:"s,omitempty"`
	PageURL     string `json:"u,omitempty"`
	ReferrerURL string `json:"r,omitempty"`
	IsTest      bool   `json:"t,omitempty"`
}

// EncodeVisit returns a visit's wire form.
func EncodeVisit(v *ledger.Visit) ([]byte, error) {
	return json.Marshal(visitWire{ID: v.ID, ProgramID: v.ProgramID, ClickID: v.ClickID,
		SessionID: v.SessionID, PageURL: v.PageURL, ReferrerURL: v.ReferrerURL, IsTest: v.IsTest})
}

// NewVisitBatchTask builds the task of one batch of visits.
func NewVisitBatchTask(encoded [][]byte) *asynq.Task {
	return asynq.NewTask(TypeVisitBatch, joinArray(encoded))
}

// DecodeVisitBatch reads a visit batch; a payload that does not decode is
// not retried.
func DecodeVisitBatch(t *asynq.Task) ([]ledger.Visit, error) {
	var ws []visitWire
	if err := jsonv2.Unmarshal(t.Payload(), &ws); err != nil {
		return nil, fmt.Errorf("decode %s payload: %v: %w", t.Type(), err, asynq.SkipRetry)
	}
	out := make([]ledger.Visit, 0, len(ws))
	for _, w := range ws {
		at, ok := ledger.ClickTime(w.ID)
		if !ok {
			return nil, fmt.Errorf("decode %s payload: %q is not a visit id: %w", t.Type(), w.ID, asynq.SkipRetry)
		}
		out = append(out, ledger.Visit{ID: w.ID, OccurredAt: at, ProgramID: w.ProgramID, ClickID: w.ClickID,
			SessionID: w.SessionID, PageURL: w.PageURL, ReferrerURL: w.ReferrerURL, IsTest: w.IsTest})
	}
	return out, nil
}

// joinArray joins JSON values into one JSON array.
func joinArray(elems [][]byte) []byte {
	n := 2
	for _, e := range elems {
		n += len(e) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, e := range elems {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, e...)
	}
	return append(out, ']')
}
