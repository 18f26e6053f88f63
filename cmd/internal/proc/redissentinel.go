package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// WaitHealthy waits until every running sentinel names the same running
// primary and sees the running replicas in sync and promotable and the
// other running sentinels: after a start, or after a failover. All of them, not a
// quorum: a sentinel that missed the new configuration and still names
// the old primary would, once that node is back, turn the new primary
// into its replica and so discard what it holds (docs/reliability.md).
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
		primary, err := s.Primary(ctx)
		if err != nil {
			return err
		}
		for _, sn := range s.Sentinels {
			if sn.P == nil {
				continue
			}
			c := redis.NewSentinelClient(&redis.Options{Addr: sn.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
			addr, err := c.GetMasterAddrByName(ctx, SentinelMaster).Result()
			if err == nil && (len(addr) != 2 || addr[1] != strconv.Itoa(primary.Port)) {
				err = fmt.Errorf("sentinel %s names %v as primary, another names %s", sn.Addr(), addr, primary.Addr())
			}
			var reps []map[string]string
			if err == nil {
				reps, err = c.Replicas(ctx, SentinelMaster).Result()
			}
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
				// In sync, and promotable as far as this sentinel knows
				// (it reads a replica's priority from INFO, every 10 s).
				if r["master-link-status"] == "ok" && r["flags"] == "slave" && r["slave-priority"] != "0" {
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

// Rejoin restarts the killed data node n as a replica of the primary the
// sentinels name, not eligible for promotion (replica-priority 0) until it
// has finished its first sync, then eligible, and waits until the
// deployment is healthy. A node that comes back loads what it last had on
// disk (the snapshot of its last sync): promoted before it synced, by a
// failover of the new primary in the meantime, it would become primary
// with that stale data, and the sentinels would turn the node holding the
// latest writes into its replica and flush them.
func (s *RedisSentinel) Rejoin(n *RedisNode, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	primary, err := s.Primary(ctx)
	if err != nil {
		return err
	}
	n.P, err = StartRedis(RedisOptions{Port: n.Port, Dir: n.Dir,
		Args: []string{"--replicaof", "127.0.0.1", strconv.Itoa(primary.Port), "--replica-priority", "0"}})
	if err != nil {
		return fmt.Errorf("restart %s as a replica: %w", n.Addr(), err)
	}
	c := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	if err := WaitFor(timeout, func() error {
		info, err := c.Info(ctx, "replication").Result()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "master_link_status:up") {
			return fmt.Errorf("%s has not finished its sync", n.Addr())
		}
		return nil
	}); err != nil {
		return err
	}
	if err := c.ConfigSet(ctx, "replica-priority", "100").Err(); err != nil {
		return fmt.Errorf("make %s eligible for promotion: %w", n.Addr(), err)
	}
	return s.WaitHealthy(timeout)
}

// Kill crashes every node and sentinel.
func (s *RedisSentinel) Kill() {
	for _, n := range append(s.Data, s.Sentinels...) {
		n.Kill()
	}
}
