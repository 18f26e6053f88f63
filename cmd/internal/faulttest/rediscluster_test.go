package faulttest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnertrack/partnertrack/cmd/internal/proc"
)

// TestRedisClusterFailover: a key written with WAIT 1 (a replica holds
// it) is read back after its primary is killed and its replica promoted.
func TestRedisClusterFailover(t *testing.T) {
	t.Parallel()
	c := StartRedisCluster(t)
	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	defer cc.Close()
	primary, err := c.PrimaryFor(ctx, "{k}")
	if err != nil {
		t.Fatal(err)
	}
	node := redis.NewClient(&redis.Options{Addr: primary.Addr()})
	defer node.Close()
	var replicas *redis.Cmd
	if _, err := node.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "{k}", "v", 0)
		replicas = p.Do(ctx, "WAIT", 1, 5000)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n, _ := replicas.Int(); n != 1 {
		t.Fatalf("WAIT 1: %d replicas", n)
	}
	primary.Kill()
	if err := c.WaitHealthy(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	promoted, err := c.PrimaryFor(ctx, "{k}")
	if err != nil {
		t.Fatal(err)
	}
	if promoted == primary {
		t.Fatal("the killed primary still serves the slot")
	}
	if v, err := cc.Get(ctx, "{k}").Result(); err != nil || v != "v" {
		t.Fatalf("after failover: %q, %v", v, err)
	}
}

// TestRedisSentinelFailover: the sentinels promote the replica of a
// killed primary, and a failover client finds it and reads what was
// written with WAIT 1.
func TestRedisSentinelFailover(t *testing.T) {
	t.Parallel()
	s := StartRedisSentinel(t)
	ctx := context.Background()
	fc := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: proc.SentinelMaster, SentinelAddrs: s.SentinelAddrs()})
	defer fc.Close()
	var replicas *redis.Cmd
	if _, err := fc.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "k", "v", 0)
		replicas = p.Do(ctx, "WAIT", 1, 5000)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n, _ := replicas.Int(); n != 1 {
		t.Fatalf("WAIT 1: %d replicas", n)
	}
	old, err := s.Primary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	old.Kill()
	if err := proc.WaitFor(60*time.Second, func() error {
		p, err := s.Primary(ctx)
		if err == nil && p == old {
			err = context.DeadlineExceeded
		}
		return err
	}); err != nil {
		t.Fatalf("no failover: %v", err)
	}
	if err := proc.WaitFor(30*time.Second, func() error { return fc.Get(ctx, "k").Err() }); err != nil {
		t.Fatal(err)
	}
	if v, _ := fc.Get(ctx, "k").Result(); v != "v" {
		t.Fatalf("after failover: %q", v)
	}
}
