package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/cmd/internal/config"
	"github.com/partnertrack/partnertrack/cmd/internal/service"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/workers/redistest"
)

// TestClickThroughTheRealProcesses runs the edge program and a worker
// wired as the binaries wire them: a click is acknowledged, readable as a
// pending click, and lands in Postgres through the clicks queue.
func TestClickThroughTheRealProcesses(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	rdb := redistest.Client(t)
	ns := redistest.Namespace(t, rdb)
	env := map[string]string{
		"DATABASE_URL":    db.URL,
		"REDIS_URL":       redistest.URL(),
		"LISTEN_ADDR":     "127.0.0.1:0",
		"OPERATOR_TOKEN":  "op-token",
		"LOG_LEVEL":       "error",
		"QUEUE_NAMESPACE": string(ns),
	}
	m := MustRunMain(t, env)
	base := "http://" + m.Addr()

	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	backends, err := service.Open(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { backends.Close() })
	worker, err := backends.Worker(service.WorkerOptions{Queues: "clicks,visits", Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(worker.Shutdown)

	_, body := post(t, base+"/api/operator/v1/workspaces", "op-token", map[string]any{"name": "Acme", "owner_email": "o@acme.example"})
	ws := body["data"].(map[string]any)["id"]
	_, body = post(t, base+"/api/operator/v1/programs", "op-token", map[string]any{
		"workspace_id": ws, "name": "Acme", "domain": "acme.example", "commission_type": "percent", "commission_rate": 20, "cookie_duration": 30})
	prog := jsonNum(body["data"].(map[string]any)["id"].(float64))
	_, body = post(t, base+"/api/operator/v1/programs/"+prog+"/partners", "op-token", map[string]any{"email": "p@p.example", "name": "P"})
	partner := body["data"].(map[string]any)["id"]
	if status, body := post(t, base+"/api/operator/v1/programs/"+prog+"/links", "op-token", map[string]any{"partner_id": partner, "code": "p-1"}); status != 201 {
		t.Fatalf("link: %d %v", status, body)
	}

	status, body := post(t, base+"/api/v1/track/click", "", map[string]any{"affiliate_url": "https://acme.example/?via=p-1"})
	if status != 200 || body["cookie_window_days"] != float64(30) || body["partner_code"] != "p-1" {
		t.Fatalf("click: %d %v", status, body)
	}
	clickID := body["click_id"].(string)
	// The click is pending in Redis, unless a starved machine made its batch
	// miss the 50 ms Redis deadline and the edge wrote it to Postgres.
	pending, err := backends.PendingClicks().PendingClick(context.Background(), clickID)
	if err != nil {
		var n int
		db.QueryRow(`SELECT count(*) FROM clicks WHERE click_id = $1`, clickID).Scan(&n)
		if n != 1 {
			t.Fatalf("pending click: %v, and not in Postgres", err)
		}
	} else if jsonNum(float64(pending.ProgramID)) != prog {
		t.Fatalf("pending click: %+v", pending)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		db.QueryRow(`SELECT count(*) FROM clicks WHERE click_id = $1`, clickID).Scan(&n)
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the click never reached Postgres")
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Ready once the click breaker is closed (or half-open, a second after a
	// diverted batch).
	for deadline := time.Now().Add(30 * time.Second); ; {
		status, ready := get(t, base+"/readyz", "")
		checks, _ := ready["checks"].(map[string]any)
		if status == 200 && checks["queue_breaker"] == "ok" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz: %d %v", status, ready)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if resp, err := http.Get(base + "/js/svc-tracker.js"); err != nil || resp.StatusCode != 200 ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/javascript") {
		t.Fatalf("tracker: %v %v", resp, err)
	}
}

func TestEdgeFailsFastOnAMissingGeoDatabase(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	m := NewMain()
	env := map[string]string{"DATABASE_URL": db.URL, "REDIS_URL": redistest.URL(), "LISTEN_ADDR": "127.0.0.1:0",
		"GEOIP_DB_PATH": t.TempDir() + "/missing.mmdb", "LOG_LEVEL": "error"}
	if err := m.ParseFlags(nil, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	err := m.Run(context.Background())
	if err == nil {
		m.Close()
		t.Fatal("edge started without its MaxMind database")
	}
	if !strings.Contains(err.Error(), "GEOIP_DB_PATH") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("error %q is not one line naming GEOIP_DB_PATH", err)
	}
}
