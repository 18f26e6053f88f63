package metrics_test

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"maps"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/partnertrack/partnertrack/cmd/internal/metrics"
	"github.com/partnertrack/partnertrack/ingest/traffic"
	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/workers/redistest"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

// closedPort returns an address on 127.0.0.1 where nothing listens: a
// port the kernel just gave out and that was closed again.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// values gathers c and returns each series' value by its name and
// labels as the text format writes them: name{label="value",...}.
func values(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			key := f.GetName()
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.Gauge != nil:
				out[key] = m.GetGauge().GetValue()
			case m.Counter != nil:
				out[key] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

func openPostgres(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func redisPing(c *redis.Client) metrics.Ping {
	return func(ctx context.Context) error { return c.Ping(ctx).Err() }
}

// TestDependencyUp reads 1 for the running Postgres and Redis and 0 for
// servers at a port where nothing listens.
func TestDependencyUp(t *testing.T) {
	t.Parallel()
	away := closedPort(t)
	deadRedis := redis.NewClient(&redis.Options{Addr: away, MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { deadRedis.Close() })
	for _, tc := range []struct {
		desc string
		ping metrics.Ping
		want float64
	}{
		{"PostgresUp", openPostgres(t, pgtest.ServerURL()).PingContext, 1},
		{"PostgresAway", openPostgres(t, "postgres://postgres@"+away+"/postgres?sslmode=disable&connect_timeout=1").PingContext, 0},
		{"RedisUp", redisPing(redistest.Client(t)), 1},
		{"RedisAway", redisPing(deadRedis), 0},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			c := metrics.NewUpCollector(map[string]metrics.Ping{"dep": tc.ping})
			series := `partnertrack_dependency_up{dependency="dep"}`
			if got, ok := values(t, c)[series]; !ok || got != tc.want {
				t.Fatalf("%s = %v (exported: %v), want %v", series, got, ok, tc.want)
			}
		})
	}
}

// TestDependencyUpLabelsEachDependency reports every dependency by name,
// all in one scrape.
func TestDependencyUpLabelsEachDependency(t *testing.T) {
	t.Parallel()
	c := metrics.NewUpCollector(map[string]metrics.Ping{
		"postgres": openPostgres(t, pgtest.ServerURL()).PingContext,
		"redis":    redisPing(redis.NewClient(&redis.Options{Addr: closedPort(t), MaxRetries: -1})),
	})
	got := values(t, c)
	want := map[string]float64{`partnertrack_dependency_up{dependency="postgres"}`: 1, `partnertrack_dependency_up{dependency="redis"}`: 0}
	if !maps.Equal(got, want) {
		t.Fatalf("gathered %v, want %v", got, want)
	}
}

// TestTrafficBatches counts a real pipeline's batches: one diverted to
// Postgres while its Redis is away, one queued once Redis answers.
func TestTrafficBatches(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	rdb := redistest.Client(t)
	ns := redistest.Namespace(t, rdb)
	fx := db.MustFixture(t, "pat")
	store := postgres.NewTrafficStore(db.DB)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	click := func() *ledger.Click {
		id := ledger.NewClickID(time.Now())
		at, _ := ledger.ClickTime(id)
		return &ledger.Click{ID: id, OccurredAt: at, ProgramID: fx.ProgramID, PartnerID: &fx.PartnerID, LinkID: &fx.LinkID,
			SessionID: "sess", IP: "203.0.113.7", DeviceType: "mobile"}
	}
	want := func(t *testing.T, c prometheus.Collector, queued, diverted, failed float64) {
		t.Helper()
		got := values(t, c)
		want := map[string]float64{
			`partnertrack_traffic_batches_total{outcome="queued"}`:   queued,
			`partnertrack_traffic_batches_total{outcome="diverted"}`: diverted,
			`partnertrack_traffic_batches_total{outcome="failed"}`:   failed,
		}
		if !maps.Equal(got, want) {
			t.Fatalf("gathered %v, want %v", got, want)
		}
	}

	deadRedis := redis.NewClient(&redis.Options{Addr: closedPort(t), MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { deadRedis.Close() })
	away := traffic.New(traffic.Config{Redis: deadRedis, Queue: asynq.NewClientFromRedisClient(deadRedis), Namespace: ns,
		Breaker: tasks.NewRedisBreaker("test", nil), Store: store, Logger: quiet, RedisTimeout: 2 * time.Second})
	c := metrics.NewTrafficCollector(away.Stats())
	want(t, c, 0, 0, 0)
	if err := away.RecordClick(context.Background(), click()); err != nil {
		t.Fatal(err)
	}
	want(t, c, 0, 1, 0) // after a click with Redis away

	up := traffic.New(traffic.Config{Redis: rdb, Queue: asynq.NewClientFromRedisClient(rdb), Namespace: ns,
		Breaker: tasks.NewRedisBreaker("test", nil), Store: store, Logger: quiet, RedisTimeout: 2 * time.Second})
	if err := up.RecordClick(context.Background(), click()); err != nil {
		t.Fatal(err)
	}
	want(t, metrics.NewTrafficCollector(up.Stats()), 1, 0, 0) // after a click with Redis up
}
