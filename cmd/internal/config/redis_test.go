package config

import (
	"reflect"
	"strings"
	"testing"
)

// TestLoadRedisModes: which variables are set chooses the mode; the
// addresses, master name, shards and replica wait are read through
// config.Load with surrounding spaces and empty list items ignored.
func TestLoadRedisModes(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want Redis
	}{
		{"defaults", nil,
			Redis{Mode: RedisSingle, URL: DefaultRedisURL, TrafficShards: 1}},
		{"single with shards and wait", map[string]string{"REDIS_URL": "rediss://u:pw@cache:6380/2", "TRAFFIC_SHARDS": "4", "REDIS_WAIT_REPLICAS": "1"},
			Redis{Mode: RedisSingle, URL: "rediss://u:pw@cache:6380/2", TrafficShards: 4, WaitReplicas: 1}},
		{"cluster", map[string]string{"REDIS_CLUSTER_ADDRS": " 10.0.0.1:7000, 10.0.0.2:7001,,", "TRAFFIC_SHARDS": " 3 "},
			Redis{Mode: RedisCluster, URL: DefaultRedisURL, ClusterAddrs: []string{"10.0.0.1:7000", "10.0.0.2:7001"}, TrafficShards: 3}},
		{"cluster with credentials and no database", map[string]string{"REDIS_URL": "redis://u:pw@ignored", "REDIS_CLUSTER_ADDRS": "[::1]:7000",
			"TRAFFIC_SHARDS": "64", "REDIS_WAIT_REPLICAS": "16"},
			Redis{Mode: RedisCluster, URL: "redis://u:pw@ignored", ClusterAddrs: []string{"[::1]:7000"}, TrafficShards: 64, WaitReplicas: 16}},
		{"sentinel", map[string]string{"REDIS_URL": "redis://:pw@x/3", "REDIS_SENTINEL_ADDRS": "s1:26379,s2:26379,s3:26379",
			"REDIS_SENTINEL_MASTER": " mymaster ", "REDIS_WAIT_REPLICAS": "0"},
			Redis{Mode: RedisSentinel, URL: "redis://:pw@x/3", SentinelAddrs: []string{"s1:26379", "s2:26379", "s3:26379"},
				SentinelMaster: "mymaster", TrafficShards: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(env(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.Redis, tc.want) {
				t.Fatalf("Redis = %+v, want %+v", c.Redis, tc.want)
			}
			if c.Redis.URL != c.RedisURL {
				t.Fatalf("Redis.URL %q differs from RedisURL %q", c.Redis.URL, c.RedisURL)
			}
		})
	}
}

// TestLoadRedisInvalid: every bad combination is refused with an error
// naming the variable to fix, and no password is repeated.
func TestLoadRedisInvalid(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string // the variable the error must name
	}{
		{"not a redis URL", map[string]string{"REDIS_URL": "http://cache:6379"}, "REDIS_URL"},
		{"cluster and sentinel", map[string]string{"REDIS_CLUSTER_ADDRS": "a:7000", "REDIS_SENTINEL_ADDRS": "s:26379", "REDIS_SENTINEL_MASTER": "m"},
			"REDIS_SENTINEL_ADDRS"},
		{"cluster and a master name", map[string]string{"REDIS_CLUSTER_ADDRS": "a:7000", "REDIS_SENTINEL_MASTER": "m"}, "REDIS_CLUSTER_ADDRS"},
		{"cluster seed without port", map[string]string{"REDIS_CLUSTER_ADDRS": "a:7000,b"}, "REDIS_CLUSTER_ADDRS"},
		{"cluster seed without host", map[string]string{"REDIS_CLUSTER_ADDRS": ":7000"}, "REDIS_CLUSTER_ADDRS"},
		{"cluster seed port out of range", map[string]string{"REDIS_CLUSTER_ADDRS": "a:70000"}, "REDIS_CLUSTER_ADDRS"},
		{"cluster seed port not a number", map[string]string{"REDIS_CLUSTER_ADDRS": "a:http"}, "REDIS_CLUSTER_ADDRS"},
		{"cluster with a database", map[string]string{"REDIS_URL": "redis://:s3cretpw@x/2", "REDIS_CLUSTER_ADDRS": "a:7000"}, "REDIS_URL"},
		{"sentinels without master", map[string]string{"REDIS_SENTINEL_ADDRS": "s:26379"}, "REDIS_SENTINEL_MASTER"},
		{"master without sentinels", map[string]string{"REDIS_SENTINEL_MASTER": "m"}, "REDIS_SENTINEL_ADDRS"},
		{"sentinel without port", map[string]string{"REDIS_SENTINEL_ADDRS": "s", "REDIS_SENTINEL_MASTER": "m"}, "REDIS_SENTINEL_ADDRS"},
		{"zero shards", map[string]string{"TRAFFIC_SHARDS": "0"}, "TRAFFIC_SHARDS"},
		{"too many shards", map[string]string{"TRAFFIC_SHARDS": "65"}, "TRAFFIC_SHARDS"},
		{"shards not a number", map[string]string{"TRAFFIC_SHARDS": "three"}, "TRAFFIC_SHARDS"},
		{"negative wait", map[string]string{"REDIS_WAIT_REPLICAS": "-1"}, "REDIS_WAIT_REPLICAS"},
		{"too many replicas to wait for", map[string]string{"REDIS_WAIT_REPLICAS": "17"}, "REDIS_WAIT_REPLICAS"},
		{"wait not a number", map[string]string{"REDIS_WAIT_REPLICAS": "yes"}, "REDIS_WAIT_REPLICAS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(env(tc.env))
			if err == nil {
				t.Fatalf("accepted %v", tc.env)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error does not name %s: %v", tc.want, err)
			}
			if strings.Contains(err.Error(), "s3cretpw") {
				t.Fatalf("error repeats the password: %v", err)
			}
		})
	}
}

// TestLoadRedisReportsEveryError: several bad Redis variables at once are
// all named in one error.
func TestLoadRedisReportsEveryError(t *testing.T) {
	_, err := Load(env(map[string]string{"REDIS_CLUSTER_ADDRS": "nope", "TRAFFIC_SHARDS": "0", "REDIS_WAIT_REPLICAS": "99"}))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, name := range []string{"REDIS_CLUSTER_ADDRS", "TRAFFIC_SHARDS", "REDIS_WAIT_REPLICAS"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error does not name %s: %v", name, err)
		}
	}
}

// TestRedisDescribe: the log and error description of each mode names
// its servers and never the password; Setting names the variables.
func TestRedisDescribe(t *testing.T) {
	for _, tc := range []struct {
		env              map[string]string
		describe, having string
	}{
		{map[string]string{"REDIS_URL": "redis://u:s3cretpw@cache:6379/0"}, "cache:6379", "REDIS_URL"},
		{map[string]string{"REDIS_URL": "redis://u:s3cretpw@x", "REDIS_CLUSTER_ADDRS": "a:7000,b:7001"}, "cluster a:7000,b:7001", "REDIS_CLUSTER_ADDRS"},
		{map[string]string{"REDIS_URL": "redis://u:s3cretpw@x", "REDIS_SENTINEL_ADDRS": "s:26379", "REDIS_SENTINEL_MASTER": "m"},
			"sentinel master m at s:26379", "REDIS_SENTINEL_ADDRS and REDIS_SENTINEL_MASTER"},
	} {
		c, err := Load(env(tc.env))
		if err != nil {
			t.Fatal(err)
		}
		d := c.Redis.Describe()
		if !strings.Contains(d, tc.describe) || strings.Contains(d, "s3cretpw") {
			t.Errorf("Describe() = %q, want it to contain %q without the password", d, tc.describe)
		}
		if c.Redis.Setting() != tc.having {
			t.Errorf("Setting() = %q, want %q", c.Redis.Setting(), tc.having)
		}
	}
}
