package faulttest

import (
	"testing"

	"github.com/partnertrack/partnertrack/cmd/internal/proc"
)

// StartRedisCluster starts a Redis Cluster of three primaries, each with
// one replica, on free ports, and kills it when the test ends. It fails
// (never skips) when redis-server or redis-cli is missing.
func StartRedisCluster(tb testing.TB) *proc.RedisCluster {
	tb.Helper()
	c, err := proc.StartRedisCluster(tb.TempDir(), 3, 1)
	if err != nil {
		tb.Fatalf("faulttest: %v", err)
	}
	tb.Cleanup(c.Kill)
	return c
}

// StartRedisSentinel starts one primary, one replica and three sentinels
// monitoring them as proc.SentinelMaster, and kills them when the test
// ends.
func StartRedisSentinel(tb testing.TB) *proc.RedisSentinel {
	tb.Helper()
	s, err := proc.StartRedisSentinel(tb.TempDir(), 1)
	if err != nil {
		tb.Fatalf("faulttest: %v", err)
	}
	tb.Cleanup(s.Kill)
	return s
}
