// Command edge is the HTTP edge of partnertrack: every route of the
// interface spec and the contract, served by fiber.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/partnertrack/partnertrack/cmd/internal/config"
	"github.com/partnertrack/partnertrack/cmd/internal/service"
	"github.com/partnertrack/partnertrack/ingest"
)

func main() {
	m := NewMain()
	if err := m.ParseFlags(os.Args[1:], os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "edge:", err)
		os.Exit(2)
	}
	service.EdgeGC.Apply(os.Getenv) // the process's, not a test's: main only
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := m.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "edge:", err)
		os.Exit(1)
	}
	<-ctx.Done()
	if err := m.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "edge: shutdown:", err)
		os.Exit(1)
	}
}

// Main is the edge program, runnable from tests on port 0.
type Main struct {
	Config   config.Config
	Logger   *slog.Logger
	backends *service.Backends
	server   *ingest.Server
	listener net.Listener
	served   chan error
}

// NewMain returns an unconfigured program.
func NewMain() *Main { return &Main{} }

// ParseFlags reads flags and the environment.
func (m *Main) ParseFlags(args []string, getenv func(string) string) error {
	fs := flag.NewFlagSet("edge", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: edge\n\nServes the partnertrack HTTP API on LISTEN_ADDR. Configuration comes from the environment (see README).")
	}
	if err := fs.Parse(args); err != nil {
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

// Run connects to the backends and starts serving in the background.
func (m *Main) Run(ctx context.Context) error {
	b, err := service.Open(ctx, m.Config, m.Logger)
	if err != nil {
		return err
	}
	m.backends = b
	if m.server, err = b.Edge(ctx); err != nil {
		b.Close()
		return err
	}
	ln, err := net.Listen("tcp", m.Config.ListenAddr)
	if err != nil {
		b.Close()
		return fmt.Errorf("listen on %s: %v; set LISTEN_ADDR", m.Config.ListenAddr, err)
	}
	m.listener = ln
	m.served = make(chan error, 1)
	go func() { m.served <- m.server.App().Listener(ln) }()
	m.Logger.Info("edge listening", "addr", ln.Addr().String())
	return nil
}

// Addr is the address the edge listens on.
func (m *Main) Addr() string { return m.listener.Addr().String() }

// shutdownTimeout bounds how long in-flight requests may take to finish.
const shutdownTimeout = 15 * time.Second

// Close stops accepting requests, lets in-flight ones finish, and closes
// the backends.
func (m *Main) Close() error {
	if m.server == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	err := m.server.Shutdown(ctx)
	<-m.served
	m.Logger.Info("edge stopped")
	if cerr := m.backends.Close(); err == nil {
		err = cerr
	}
	return err
}
