// Command worker runs partnertrack's asynq task handlers. --queues picks
// the queues it serves, so click ingestion, processor events,
// notifications and brand webhooks scale as separate processes; exactly
// one process of a deployment runs the scheduler (--scheduler=true, the
// default), the others say --scheduler=false.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/partnertrack/partnertrack/cmd/internal/config"
	"github.com/partnertrack/partnertrack/cmd/internal/service"
)

func main() {
	m := NewMain()
	if err := m.ParseFlags(os.Args[1:], os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(2)
	}
	service.WorkerGC.Apply(os.Getenv) // the process's, not a test's: main only
	service.WorkerProcs.Apply(os.Getenv)
	if err := m.Nice.Apply(); err != nil {
		m.Logger.Warn("the worker's CPU priority was not lowered; it competes with the edge as an equal", "nice", int(m.Nice), "err", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := m.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
	<-ctx.Done()
	m.Close()
}

// Main is the worker program.
type Main struct {
	Config  config.Config
	Logger  *slog.Logger
	Options service.WorkerOptions
	// Nice is the CPU priority the process lowers itself to (--nice).
	Nice     service.Nice
	backends *service.Backends
	worker   *service.Worker
}

// NewMain returns an unconfigured program.
func NewMain() *Main { return &Main{} }

// ParseFlags reads flags and the environment.
func (m *Main) ParseFlags(args []string, getenv func(string) string) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.StringVar(&m.Options.Queues, "queues", "all", "comma-separated queues to serve: clicks, visits, processor, notifications, webhooks, emails, maintenance (or all); clicks and visits mean every shard of TRAFFIC_SHARDS, clicks-2 one shard")
	fs.IntVar(&m.Options.Concurrency, "concurrency", 4*runtime.NumCPU(), "processor, notification, webhook and maintenance tasks processed at once")
	fs.IntVar(&m.Options.TrafficConcurrency, "traffic-concurrency", 16*runtime.NumCPU(), "click and visit tasks processed at once (those running together share one insert)")
	fs.BoolVar(&m.Options.Scheduler, "scheduler", true, "run the deployment's one scheduler (set false on every other replica)")
	fs.StringVar(&m.Options.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics (task outcomes, webhook deliveries, breaker states) at http://ADDR/metrics; empty: not served")
	nice := fs.Int("nice", int(service.WorkerNice), "CPU priority the worker lowers itself to, as nice(1) counts it (0 leaves it as started, 19 the lowest): on a machine it shares with the edge, the edge's answers come first")
	if err := fs.Parse(args); err != nil {
		return err
	}
	m.Nice = service.Nice(*nice)
	if err := m.Nice.Check(); err != nil {
		return err
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	m.Config = cfg
	m.Logger = service.NewLogger(cfg)
	return nil
}

// Run connects to the backends and starts processing in the background.
func (m *Main) Run(ctx context.Context) error {
	b, err := service.Open(ctx, m.Config, m.Logger)
	if err != nil {
		return err
	}
	w, err := b.Worker(m.Options)
	if err != nil {
		b.Close()
		return err
	}
	if err := w.Start(); err != nil {
		b.Close()
		return err
	}
	m.backends, m.worker = b, w
	m.Logger.Info("worker started", "queues", m.Options.Queues, "scheduler", m.Options.Scheduler, "concurrency", m.Options.Concurrency, "traffic_concurrency", m.Options.TrafficConcurrency)
	return nil
}

// MetricsAddr is the address the worker serves its metrics on ("" when
// --metrics-addr is not set).
func (m *Main) MetricsAddr() string { return m.worker.MetricsAddr() }

// Close stops the scheduler, lets running tasks finish, and closes the
// backends.
func (m *Main) Close() error {
	if m.worker == nil {
		return nil
	}
	m.worker.Shutdown()
	m.Logger.Info("worker stopped")
	return m.backends.Close()
}
