package bench

import (
	"fmt"
	"time"

	"github.com/partnertrack/partnertrack/cmd/loadgen/internal/stack"
)

// env is the environment of the service's processes on redisURL.
func (b *bench) env(redisURL string) map[string]string {
	return map[string]string{
		"DATABASE_URL":          b.dbURL,
		"REDIS_URL":             redisURL,
		"QUEUE_NAMESPACE":       b.ns,
		"LISTEN_ADDR":           "127.0.0.1:0",
		"OPERATOR_TOKEN":        b.opToken,
		"PUBLIC_BASE_URL":       "http://track.bench",
		"TRUSTED_PROXIES":       "127.0.0.1/32", // the load poses as many clients through X-Forwarded-For
		"STRIPE_WEBHOOK_SECRET": b.secret,
		"LOG_LEVEL":             "info",
		"LOG_FORMAT":            "json",
	}
}

// node is an edge and a worker over one Redis.
type node struct {
	name, redisURL string
	edge, worker   *stack.Process
	addr           string
	workers        int   // workers started so far
	workerPeak     int64 // the highest peak RSS of the workers stopped so far
}

// startNode starts an edge and, when asked, its worker.
func (b *bench) startNode(name, redisURL string, withWorker bool) (*node, error) {
	n := &node{name: name, redisURL: redisURL}
	edge, err := stack.Start(name+"-edge", b.bins["edge"], nil, b.env(redisURL), b.tmp)
	if err != nil {
		return nil, err
	}
	b.procs = append(b.procs, edge)
	line, err := edge.WaitLog("edge listening", 60*time.Second)
	if err != nil {
		return nil, err
	}
	n.edge = edge
	n.addr, _ = line["addr"].(string)
	if !withWorker {
		return n, nil
	}
	return n, b.startWorker(n)
}

// startWorker starts the node's worker (every queue, the scheduler).
func (b *bench) startWorker(n *node) error {
	n.workers++
	worker, err := stack.Start(fmt.Sprintf("%s-worker%d", n.name, n.workers), b.bins["worker"], nil, b.env(n.redisURL), b.tmp)
	if err != nil {
		return err
	}
	b.procs = append(b.procs, worker)
	if _, err := worker.WaitLog("worker started", 60*time.Second); err != nil {
		return err
	}
	n.worker = worker
	return nil
}

// stopWorker stops the node's worker, keeping its peak RSS.
func (n *node) stopWorker() {
	if n.worker == nil {
		return
	}
	if peak, err := n.worker.PeakRSS(); err == nil && peak > n.workerPeak {
		n.workerPeak = peak
	}
	n.worker.Stop()
	n.worker = nil
}

// peakWorkerRSS is the highest peak RSS of the node's workers so far.
func (n *node) peakWorkerRSS() (int64, error) {
	if n.worker == nil {
		return n.workerPeak, nil
	}
	peak, err := n.worker.PeakRSS()
	return max(peak, n.workerPeak), err
}

func (n *node) stop() {
	n.edge.Stop()
	n.stopWorker()
}

// cpuMark is the CPU time the node's edge and worker had used at a
// moment, to tell what a phase cost each per request.
type cpuMark struct{ edge, worker time.Duration }

// cpuMark reads the node's CPU times (a process not running reads 0).
func (n *node) cpuMark() cpuMark {
	var m cpuMark
	m.edge, _ = n.edge.CPUTime()
	if n.worker != nil {
		m.worker, _ = n.worker.CPUTime()
	}
	return m
}

// cpuPerRequest says what the edge (and the worker, when it ran all
// along) spent between two marks per accepted request: on a shared
// machine a figure that moves less than throughput with other work.
func cpuPerRequest(from, to cpuMark, requests int64, withWorker bool) string {
	if requests <= 0 {
		return ""
	}
	per := func(d time.Duration) string {
		return fmt.Sprintf("%.1f µs", float64(d.Microseconds())/float64(requests))
	}
	s := "edge " + per(to.edge-from.edge)
	if withWorker {
		s += ", worker " + per(to.worker-from.worker)
	}
	return s + " of CPU a click"
}
