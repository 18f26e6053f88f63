package main

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/partnertrack/partnertrack/cmd/internal/config"
	"github.com/partnertrack/partnertrack/cmd/internal/service"
)

func newDevCommand(getenv func(string) string) *cobra.Command {
	return &cobra.Command{
		Use:   "dev",
		Short: "Migrate, then run the edge, a worker for every queue and the scheduler in one process",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(getenv)
			if err != nil {
				return err
			}
			logger := service.NewLogger(cfg)
			if err := migrate(cmd, cfg, logger); err != nil {
				return err
			}
			ctx := cmd.Context()
			b, err := service.Open(ctx, cfg, logger)
			if err != nil {
				return err
			}
			defer b.Close()
			w, err := b.Worker(service.WorkerOptions{Queues: "all", Concurrency: 8, Scheduler: true})
			if err != nil {
				return err
			}
			if err := w.Start(); err != nil {
				return err
			}
			defer w.Shutdown()

			edge, err := b.Edge(ctx)
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", cfg.ListenAddr)
			if err != nil {
				return fmt.Errorf("listen on %s: %v; set LISTEN_ADDR", cfg.ListenAddr, err)
			}
			served := make(chan error, 1)
			go func() { served <- edge.App().Listener(ln) }()
			logger.Info("partnertrack running", "url", cfg.PublicBaseURL, "listen", ln.Addr().String())
			select {
			case <-ctx.Done():
			case err := <-served:
				return err
			}
			sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			return edge.Shutdown(sctx)
		},
	}
}
