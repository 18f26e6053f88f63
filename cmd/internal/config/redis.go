package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// RedisMode is the kind of Redis deployment every process of the service
// uses: one server, a Redis Cluster, or a primary watched by Sentinel.
type RedisMode string

// The Redis modes, chosen by which variables are set.
const (
	RedisSingle   RedisMode = "single"   // REDIS_URL
	RedisCluster  RedisMode = "cluster"  // REDIS_CLUSTER_ADDRS
	RedisSentinel RedisMode = "sentinel" // REDIS_SENTINEL_ADDRS and REDIS_SENTINEL_MASTER
)

// MaxTrafficShards bounds TRAFFIC_SHARDS: each shard is a queue every
// traffic worker polls, and a cluster gains nothing from more shards than
// it has primaries.
const MaxTrafficShards = 64

// Redis says how to reach Redis and how click traffic is spread over it.
type Redis struct {
	Mode RedisMode
	// URL is REDIS_URL: the server in single mode; in cluster and Sentinel
	// modes only its user, password and scheme (rediss:// for TLS) are
	// used, and in Sentinel mode its database number.
	URL            string
	ClusterAddrs   []string // seed nodes, host:port
	SentinelAddrs  []string // sentinels, host:port
	SentinelMaster string   // the name the sentinels monitor
	// TrafficShards is how many click and visit queues the edge spreads
	// batches over (TRAFFIC_SHARDS, default 1).
	TrafficShards int
	// WaitReplicas is how many replicas must hold a click batch before the
	// edge acknowledges its clicks (REDIS_WAIT_REPLICAS, default 0: none,
	// replication stays asynchronous).
	WaitReplicas int
}

// Setting names the variable an operator fixes when Redis cannot be
// reached in this mode.
func (r Redis) Setting() string {
	switch r.Mode {
	case RedisCluster:
		return "REDIS_CLUSTER_ADDRS"
	case RedisSentinel:
		return "REDIS_SENTINEL_ADDRS and REDIS_SENTINEL_MASTER"
	}
	return "REDIS_URL"
}

// Describe names the deployment for log lines and error messages, with
// no password.
func (r Redis) Describe() string {
	switch r.Mode {
	case RedisCluster:
		return "cluster " + strings.Join(r.ClusterAddrs, ",")
	case RedisSentinel:
		return "sentinel master " + r.SentinelMaster + " at " + strings.Join(r.SentinelAddrs, ",")
	}
	return Redacted(r.URL)
}

// loadRedis reads the Redis variables; url is REDIS_URL (or its default).
func loadRedis(getenv func(string) string, rawURL string) (Redis, []error) {
	var errs []error
	r := Redis{Mode: RedisSingle, URL: rawURL, TrafficShards: 1}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") {
		errs = append(errs, errors.New("REDIS_URL must be a redis:// URL"))
	}
	cluster, cerr := parseAddrs(getenv("REDIS_CLUSTER_ADDRS"))
	if cerr != nil {
		errs = append(errs, fmt.Errorf("REDIS_CLUSTER_ADDRS must be comma-separated host:port seed nodes: %v", cerr))
	}
	sentinels, serr := parseAddrs(getenv("REDIS_SENTINEL_ADDRS"))
	if serr != nil {
		errs = append(errs, fmt.Errorf("REDIS_SENTINEL_ADDRS must be comma-separated host:port sentinels: %v", serr))
	}
	master := strings.TrimSpace(getenv("REDIS_SENTINEL_MASTER"))
	switch {
	case len(cluster) > 0 && (len(sentinels) > 0 || master != ""):
		errs = append(errs, errors.New("REDIS_CLUSTER_ADDRS and REDIS_SENTINEL_ADDRS select different modes: set one"))
	case len(cluster) > 0:
		r.Mode, r.ClusterAddrs = RedisCluster, cluster
		if u != nil && strings.Trim(u.Path, "/") != "" && strings.Trim(u.Path, "/") != "0" {
			errs = append(errs, errors.New("REDIS_URL must name database 0 (or none) with REDIS_CLUSTER_ADDRS: a cluster has only database 0"))
		}
	case len(sentinels) > 0 || master != "":
		if len(sentinels) == 0 || master == "" {
			errs = append(errs, errors.New("REDIS_SENTINEL_ADDRS and REDIS_SENTINEL_MASTER must be set together"))
		}
		r.Mode, r.SentinelAddrs, r.SentinelMaster = RedisSentinel, sentinels, master
	}
	if r.TrafficShards, err = intSetting(getenv("TRAFFIC_SHARDS"), 1, 1, MaxTrafficShards); err != nil {
		errs = append(errs, fmt.Errorf("TRAFFIC_SHARDS must be a whole number from 1 to %d", MaxTrafficShards))
	}
	if r.WaitReplicas, err = intSetting(getenv("REDIS_WAIT_REPLICAS"), 0, 0, 16); err != nil {
		errs = append(errs, errors.New("REDIS_WAIT_REPLICAS must be a whole number from 0 to 16"))
	}
	return r, errs
}

// parseAddrs reads comma-separated host:port pairs.
func parseAddrs(s string) ([]string, error) {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		host, port, err := net.SplitHostPort(a)
		if err != nil || host == "" {
			return nil, fmt.Errorf("%q is not host:port", a)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("%q has no valid port", a)
		}
		out = append(out, a)
	}
	return out, nil
}

func intSetting(s string, def, lo, hi int) (int, error) {
	if s = strings.TrimSpace(s); s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return def, errors.New("out of range")
	}
	return n, nil
}
