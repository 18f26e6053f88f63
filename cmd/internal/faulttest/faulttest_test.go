package faulttest

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestRedisSurvivesACrashWithAppendOnly: what the server acknowledged is
// back after a SIGKILL and a restart when the append-only file is on.
func TestRedisSurvivesACrashWithAppendOnly(t *testing.T) {
	t.Parallel()
	r := StartRedis(t, RedisOptions{AppendOnly: true})
	opts, _ := redis.ParseURL(r.URL())
	c := redis.NewClient(opts)
	defer c.Close()
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	r.Kill(t)
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("redis answers after the kill")
	}
	r.Start(t)
	if v, err := c.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("after restart: %q, %v", v, err)
	}
}

// TestPostgresRestart: a committed row survives a fast stop and a start;
// the database is migrated.
func TestPostgresRestart(t *testing.T) {
	t.Parallel()
	p := StartPostgres(t)
	url := p.CreateDatabase(t, "restart")
	db, err := sql.Open("postgres", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`INSERT INTO workspaces (name) VALUES ('w')`); err != nil {
		t.Fatal(err)
	}
	p.Stop(t)
	if err := db.Ping(); err == nil {
		t.Fatal("postgres answers after the stop")
	}
	p.Start(t)
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM workspaces`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("after restart: %d rows, %v", n, err)
	}
}

// TestRedisPauseAndResume: a paused server answers nothing until resumed,
// and keeps what it held.
func TestRedisPauseAndResume(t *testing.T) {
	t.Parallel()
	r := StartRedis(t, RedisOptions{})
	opts, _ := redis.ParseURL(r.URL())
	opts.ReadTimeout, opts.MaxRetries = 100*time.Millisecond, -1
	c := redis.NewClient(opts)
	defer c.Close()
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	r.Pause(t)
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("redis answers while paused")
	}
	r.Resume(t)
	if v, err := c.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("after resume: %q, %v", v, err)
	}
	r.Pause(t) // the test's cleanup kills a paused server
}
