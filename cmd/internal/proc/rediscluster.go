package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ClusterNodeTimeout is the cluster-node-timeout of the clusters started
// here: a primary that stops answering is failed over about this long
// after (production default: 15 s).
const ClusterNodeTimeout = 1000 * time.Millisecond

// RedisNode is one redis-server of a cluster or a Sentinel setup.
type RedisNode struct {
	Port int
	Dir  string
	P    *Process // nil once killed
}

// Addr is the node's host:port.
func (n *RedisNode) Addr() string { return "127.0.0.1:" + strconv.Itoa(n.Port) }

// Kill crashes the node (SIGKILL).
func (n *RedisNode) Kill() {
	if n.P != nil {
		n.P.Kill()
		n.P = nil
	}
}

// RedisCluster is a Redis Cluster on 127.0.0.1: primaries, each with
// replicas, as `redis-cli --cluster create` assigned them.
type RedisCluster struct {
	Nodes []*RedisNode
}

// StartRedisCluster starts primaries×(1+replicas) redis-servers in
// cluster mode under dir, joins them with `redis-cli --cluster create`,
// and waits until every node reports cluster_state:ok and every replica
// is in sync. Persistence is off: a node's data lives in its replica.
func StartRedisCluster(dir string, primaries, replicas int) (*RedisCluster, error) {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		return nil, fmt.Errorf("redis-cli is not installed (%v); install it with `apt-get install -y redis-server`", err)
	}
	c := &RedisCluster{}
	addrs := make([]string, 0, primaries*(1+replicas))
	for i := 0; i < primaries*(1+replicas); i++ {
		port, err := FreePort()
		if err != nil {
			c.Kill()
			return nil, err
		}
		// The bus port is chosen too: port+10000 may be past 65535.
		bus, err := FreePort()
		if err != nil {
			c.Kill()
			return nil, err
		}
		n := &RedisNode{Port: port, Dir: filepath.Join(dir, "node-"+strconv.Itoa(port))}
		if err := os.MkdirAll(n.Dir, 0o755); err != nil {
			c.Kill()
			return nil, err
		}
		n.P, err = StartRedis(RedisOptions{Port: port, Dir: n.Dir, Args: []string{
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-port", strconv.Itoa(bus),
			"--cluster-node-timeout", strconv.Itoa(int(ClusterNodeTimeout / time.Millisecond)),
		}})
		if err != nil {
			c.Kill()
			return nil, err
		}
		c.Nodes = append(c.Nodes, n)
		addrs = append(addrs, n.Addr())
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		c.Kill()
		return nil, fmt.Errorf("redis-cli --cluster create: %v\n%s", err, out)
	}
	if err := c.WaitHealthy(30 * time.Second); err != nil {
		c.Kill()
		return nil, err
	}
	return c, nil
}

// Addrs are the addresses of the nodes still running (seed nodes).
func (c *RedisCluster) Addrs() []string {
	var out []string
	for _, n := range c.Nodes {
		if n.P != nil {
			out = append(out, n.Addr())
		}
	}
	return out
}

// Kill crashes every node.
func (c *RedisCluster) Kill() {
	for _, n := range c.Nodes {
		n.Kill()
	}
}

// Node returns the running node at addr.
func (c *RedisCluster) Node(addr string) *RedisNode {
	for _, n := range c.Nodes {
		if n.P != nil && n.Addr() == addr {
			return n
		}
	}
	return nil
}

// PrimaryFor returns the node that serves key's slot now.
func (c *RedisCluster) PrimaryFor(ctx context.Context, key string) (*RedisNode, error) {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), DialTimeout: time.Second})
	defer cc.Close()
	slot, err := cc.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		return nil, err
	}
	slots, err := cc.ClusterSlots(ctx).Result()
	if err != nil {
		return nil, err
	}
	for _, s := range slots {
		if int64(s.Start) <= slot && slot <= int64(s.End) && len(s.Nodes) > 0 {
			if n := c.Node(s.Nodes[0].Addr); n != nil {
				return n, nil
			}
			return nil, fmt.Errorf("slot %d is served by %s, not a running node", slot, s.Nodes[0].Addr)
		}
	}
	return nil, fmt.Errorf("slot %d of %q is served by no node", slot, key)
}

// WaitHealthy waits until every running node reports cluster_state:ok
// with all slots served, and every running replica's link to its primary
// is up: after a start, or after a failover promoted a replica.
func (c *RedisCluster) WaitHealthy(timeout time.Duration) error {
	return WaitFor(timeout, func() error {
		for _, n := range c.Nodes {
			if n.P == nil {
				continue
			}
			if err := nodeHealthy(n.Addr()); err != nil {
				return fmt.Errorf("%s: %w", n.Addr(), err)
			}
		}
		return nil
	})
}

func nodeHealthy(addr string) error {
	ctx := context.Background()
	cl := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer cl.Close()
	info, err := cl.ClusterInfo(ctx).Result()
	if err != nil {
		return err
	}
	if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_ok:16384") {
		return errors.New("cluster not ok yet")
	}
	repl, err := cl.Info(ctx, "replication").Result()
	if err != nil {
		return err
	}
	if strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up") {
		return errors.New("replica not in sync yet")
	}
	return nil
}
