// Command loadgen is partnertrack's load generator and benchmark.
//
//	loadgen run --addr 127.0.0.1:8080 --kind click --rate 10000 --duration 60s
//	loadgen bench --write docs/performance.md        (what make bench runs)
//
// run provisions programs through the operator API and drives clicks,
// leads, sales, refunds or Stripe events at a fixed rate (latency from
// the intended send time: no coordinated omission) or as fast as its
// connections go. bench measures the HTTP ceilings, the raw sale
// transaction and the real edge and worker binaries, and prints and
// writes every figure as a ratio to its ceiling.
//
//	loadgen bench --only money --edge-bin ../old/bin/edge --worker-bin ../old/bin/worker
//
// runs the sale and refund phases alone against binaries built from
// another checkout (an old-vs-new comparison) and writes nothing.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/partnertrack/partnertrack/cmd/loadgen/internal/bench"
	"github.com/partnertrack/partnertrack/cmd/loadgen/internal/ceiling"
	"github.com/partnertrack/partnertrack/cmd/loadgen/internal/drive"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := &cobra.Command{Use: "loadgen", Short: "Load generator and benchmark of partnertrack", SilenceUsage: true}
	root.AddCommand(runCmd(), benchCmd(), ceilingCmd())
	if err := root.ExecuteContext(ctx); err != nil {
		os.Exit(1)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func runCmd() *cobra.Command {
	o := drive.KindOptions{Out: os.Stdout}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Drive one kind of request against a running edge",
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.OperatorToken == "" {
				return fmt.Errorf("the operator token is required (--operator-token or OPERATOR_TOKEN)")
			}
			return drive.RunKind(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Addr, "addr", "127.0.0.1:8080", "the edge (host:port); it must trust 127.0.0.1 in TRUSTED_PROXIES for clicks and leads to spread over client addresses")
	f.StringVar(&o.OperatorToken, "operator-token", os.Getenv("OPERATOR_TOKEN"), "the edge's OPERATOR_TOKEN")
	f.StringVar(&o.Kind, "kind", "click", "what to send: "+strings.Join(drive.Kinds, ", "))
	f.Float64Var(&o.Rate, "rate", 0, "requests per second (0: as fast as --conns go)")
	f.IntVar(&o.Conns, "conns", 0, "connections (default 64 at max, one per sender at a rate; given with --rate, the senders share them as make bench's fixed-rate phases do)")
	f.DurationVar(&o.Duration, "duration", 10*time.Second, "how long to send")
	f.StringVar(&o.DatabaseURL, "database-url", "", "clicks: the edge's DATABASE_URL, to time until every accepted click is in Postgres")
	f.DurationVar(&o.Settle, "settle", 2*time.Second, "pause after provisioning, so that the worker has written the seed clicks (make bench waits until the worker is idle)")
	f.IntVar(&o.Programs, "programs", 0, "sales and refunds: spread them over at least this many programs, two seed clicks each (a sale on a click without one is a first sale, which creates the customer)")
	f.DurationVar(&o.Slow, "slow", 0, "count the answers slower than this by second of the run, to see where a tail comes from")
	f.StringVar(&o.StripeSecret, "stripe-secret", os.Getenv("STRIPE_WEBHOOK_SECRET"), "stripe: the edge's STRIPE_WEBHOOK_SECRET")
	return cmd
}

func benchCmd() *cobra.Command {
	cfg := bench.Config{Out: os.Stdout}
	var write string
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the ceilings and the service; print and write the figures",
		RunE: func(cmd *cobra.Command, args []string) error {
			self, err := os.Executable()
			if err != nil {
				return err
			}
			cfg.Self = self
			if cfg.Only != "" && write != "" {
				return fmt.Errorf("--only measures some phases: it does not write %s", write)
			}
			doc, err := bench.Run(cmd.Context(), cfg)
			if err != nil {
				return fmt.Errorf("bench: %w", err)
			}
			if write != "" {
				// The log of full runs carries over from the file written before.
				if old, err := os.ReadFile(write); err == nil {
					doc.History = bench.ParseHistory(string(old))
				}
				if err := os.WriteFile(write, []byte(doc.Markdown()), 0o644); err != nil {
					return err
				}
				fmt.Println("wrote", write)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Repo, "repo", ".", "the module whose edge, worker and partnerctl are built and measured")
	f.StringVar(&cfg.AdminURL, "postgres", envOr("BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"), "a DSN of the Postgres server; the bench creates and drops databases of its own there")
	f.StringVar(&cfg.RedisURL, "redis", envOr("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0"), "the shared Redis; the bench uses a queue namespace of its own and deletes it")
	f.BoolVar(&cfg.Quick, "quick", false, "short phases: a smoke check of the bench, not a measurement")
	f.IntVar(&cfg.Conns, "conns", 64, "connections of the max runs")
	f.StringVar(&cfg.Command, "command", "loadgen bench", "the command recorded in the written document")
	f.StringVar(&cfg.Only, "only", "", "run some phases alone and print their rows and targets (writes nothing): "+strings.Join(onlyNames(), ", "))
	f.StringVar(&cfg.EdgeBin, "edge-bin", os.Getenv("BENCH_EDGE_BIN"), "measure this edge binary instead of building ./cmd/edge (one built from another checkout, to compare)")
	f.StringVar(&cfg.WorkerBin, "worker-bin", os.Getenv("BENCH_WORKER_BIN"), "measure this worker binary instead of building ./cmd/worker")
	f.Int64Var(&cfg.SalesMax, "sales-max", 0, "stop the sales-at-max phase after this many sales (0: run it for its time), to leave two builds the same rows before the refunds")
	f.StringVar(&write, "write", "", "write the results as Markdown to this file (docs/performance.md)")
	return cmd
}

// onlyNames are the values of --only, sorted.
func onlyNames() []string {
	names := make([]string, 0, len(bench.Phases))
	for name := range bench.Phases {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// ceilingCmd serves one HTTP ceiling; the bench starts it as a child.
func ceilingCmd() *cobra.Command {
	var o ceiling.Options
	var mode string
	cmd := &cobra.Command{
		Use:    "ceiling-server",
		Short:  "Serve an HTTP ceiling (bare fiber click handler, or one that enqueues)",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Mode = ceiling.Mode(mode)
			s, err := ceiling.Start(o)
			if err != nil {
				return err
			}
			fmt.Printf("{\"msg\":\"ceiling listening\",\"addr\":%q}\n", s.Addr())
			<-cmd.Context().Done()
			return s.Close()
		},
	}
	f := cmd.Flags()
	f.StringVar(&mode, "mode", "bare", "bare or enqueue")
	f.StringVar(&o.Listen, "listen", "127.0.0.1:0", "listen address")
	f.StringVar(&o.RedisURL, "redis-url", "redis://127.0.0.1:6379/0", "enqueue: Redis")
	f.StringVar(&o.Queue, "queue", "ceiling", "enqueue: the asynq queue")
	return cmd
}
