package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelMaster is the name the sentinels started here monitor.
const SentinelMaster = "partnertrack"

// SentinelDownAfter is how long the sentinels started here wait before
// they call a silent primary down (production default: 30 s).
const SentinelDownAfter = 1000 * time.Millisecond

// RedisSentinel is one primary, its replicas and three sentinels watching
// them, all on 127.0.0.1.
type RedisSentinel struct {
	Data      []*RedisNode // the primary first, as started; a failover reorders roles, not this
	Sentinels []*RedisNode
}

// StartRedisSentinel starts a primary, replicas replicas of it and three
// sentinels (quorum 2) under dir, and waits until every sentinel sees the
// replicas and the other sentinels.
func StartRedisSentinel(dir string, replicas int) (*RedisSentinel, error) {
	s := &RedisSentinel{}
	start := func(args ...string) (*RedisNode, error) {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		n := &RedisNode{Port: port, Dir: filepath.Join(dir, "node-"+strconv.Itoa(port))}
		if err := os.MkdirAll(n.Dir, 0o755); err != nil {
			return nil, err
		}
		n.P, err = StartRedis(RedisOptions{Port: port, Dir: n.Dir, Args: args})
		return n, err
	}
	primary, err := start()
	if err != nil {
		return nil, err
	}
	s.Data = append(s.Data, primary)
	for i := 0; i < replicas; i++ {
		n, err := start("--replicaof", "127.0.0.1", strconv.Itoa(primary.Port))
		if err != nil {
			s.Kill()
			return nil, err
		}
		s.Data = append(s.Data, n)
	}
	for i := 0; i < 3; i++ {
		port, err := FreePort()
		if err != nil {
			s.Kill()
			return nil, err
		}
		n := &RedisNode{Port: port, Dir: filepath.Join(dir, "sentinel-"+strconv.Itoa(port))}
		if err := os.MkdirAll(n.Dir, 0o755); err != nil {
			s.Kill()
			return nil, err
		}
		conf := filepath.Join(n.Dir, "sentinel.conf") // sentinels rewrite their file
		body := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\n"+
			"sentinel monitor %s 127.0.0.1 %d 2\n"+
			"sentinel down-after-milliseconds %[3]s %[5]d\n"+
			"sentinel failover-timeout %[3]s 10000\n"+
			"sentinel parallel-syncs %[3]s 1\n",
			port, n.Dir, SentinelMaster, primary.Port, int(SentinelDownAfter/time.Millisecond))
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			s.Kill()
			return nil, err
		}
		if n.P, err = Start("redis-sentinel", "redis-server", Options{Args: []string{conf, "--sentinel"}}); err != nil {
			s.Kill()
			return nil, err
		}
		s.Sentinels = append(s.Sentinels, n)
	}
	if err := s.WaitHealthy(30 * time.Second); err != nil {
		s.Kill()
		return nil, err
	}
	return s, nil
}

// SentinelAddrs are the sentinels' addresses.
func (s *RedisSentinel) SentinelAddrs() []string {
	out := make([]string, len(s.Sentinels))
	for i, n := range s.Sentinels {
		out[i] = n.Addr()
	}
	return out
}

// Primary returns the data node the sentinels name as primary now.
func (s *RedisSentinel) Primary(ctx context.Context) (*RedisNode, error) {
	for _, sn := range s.Sentinels {
		if sn.P == nil {
			continue
		}
		c := redis.NewSentinelClient(&redis.Options{Addr: sn.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
		addr, err := c.GetMasterAddrByName(ctx, SentinelMaster).Result()
		c.Close()
		if err != nil {
			continue
		}
		for _, n := range s.Data {
			if n.P != nil && len(addr) == 2 && addr[1] == strconv.Itoa(n.Port) {
				return n, nil
			}
		}
		return nil, fmt.Errorf("sentinels name %v, not a running node", addr)
	}
	return nil, errors.New("no sentinel answered")
}

// WaitHealthy waits until every running sentinel names a running primary
// and sees the running replicas in sync and the other running sentinels:
// after a start, or after a failover.
func (s *RedisSentinel) WaitHealthy(timeout time.Duration) error {
	ctx := context.Background()
	return WaitFor(timeout, func() error {
		running, sentinels := 0, 0
		for _, n := range s.Data {
			if n.P != nil {
				running++
			}
		}
		for _, n := range s.Sentinels {
			if n.P != nil {
				sentinels++
			}
		}
		if _, err := s.Primary(ctx); err != nil {
			return err
		}
		for _, sn := range s.Sentinels {
			if sn.P == nil {
				continue
			}
			c := redis.NewSentinelClient(&redis.Options{Addr: sn.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
			reps, err := c.Replicas(ctx, SentinelMaster).Result()
			if err == nil {
				var others []map[string]string
				others, err = c.Sentinels(ctx, SentinelMaster).Result()
				if err == nil && len(others) < sentinels-1 {
					err = fmt.Errorf("sentinel %s sees %d other sentinels", sn.Addr(), len(others))
				}
			}
			c.Close()
			if err != nil {
				return err
			}
			up := 0
			for _, r := range reps {
				if r["master-link-status"] == "ok" && r["flags"] == "slave" {
					up++
				}
			}
			if up < running-1 {
				return fmt.Errorf("sentinel %s sees %d of %d replicas up", sn.Addr(), up, running-1)
			}
		}
		return nil
	})
}

// Kill crashes every node and sentinel.
func (s *RedisSentinel) Kill() {
	for _, n := range append(s.Data, s.Sentinels...) {
		n.Kill()
	}
}
