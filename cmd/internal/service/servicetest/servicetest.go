// Package servicetest starts the real edge in a test: built by package
// service exactly as the edge binary builds it, on a free port of
// 127.0.0.1, stopped when the test ends.
package servicetest

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/cmd/internal/config"
	"github.com/partnertrack/partnertrack/cmd/internal/service"
)

// StartEdge serves an edge configured by env (its LISTEN_ADDR is set to a
// free port) and returns its base URL.
func StartEdge(tb testing.TB, env map[string]string) string {
	tb.Helper()
	env["LISTEN_ADDR"] = "127.0.0.1:0"
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		tb.Fatal(err)
	}
	b, err := service.Open(context.Background(), cfg, service.NewLogger(cfg))
	if err != nil {
		tb.Fatal(err)
	}
	edge, err := b.Edge(context.Background())
	if err != nil {
		b.Close()
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		b.Close()
		tb.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- edge.App().Listener(ln) }()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		edge.Shutdown(ctx)
		<-served
		b.Close()
	})
	return "http://" + ln.Addr().String()
}
