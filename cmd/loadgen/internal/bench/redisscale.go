package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnertrack/partnertrack/cmd/internal/proc"
	"github.com/partnertrack/partnertrack/cmd/loadgen/internal/drive"
	"github.com/partnertrack/partnertrack/cmd/loadgen/internal/stack"
)

// scaleShards is the TRAFFIC_SHARDS of the cluster run: one click queue
// per primary of the 3-primary cluster.
const scaleShards = 3

// waitRate is the fixed click rate at which REDIS_WAIT_REPLICAS's latency
// is measured: the steady production load of the Redis kill, far under
// saturation, so that the p99 is the wait's and not the queue's.
const waitRate = outageRate

// scaleRounds is how many times the four setups run at max, alternated:
// on a shared machine one run of each moves by more than what it
// measures.
const scaleRounds = 3

// scaleSetup is one Redis deployment under one edge in the redis-scale
// phase.
type scaleSetup struct {
	label string // the row's name
	key   string // the edge's process name
	env   map[string]string
	note  string // added to the row's note
	addr  string // the edge, once started
}

// redisScale measures click intake (at max, no worker, as the AOF
// comparison) on one private Redis with TRAFFIC_SHARDS=1 against a
// 3-primary cluster (one replica each) with TRAFFIC_SHARDS=3, and on a
// primary with one replica with REDIS_WAIT_REPLICAS=0 against 1, plus
// the latter two at a fixed rate for their p50 and p99. Persistence is
// off on every server, as on the cluster's nodes. scaleRounds rounds
// alternate the setups and each keeps its better run, so that other work
// on the machine weighs on all alike.
func (b *bench) redisScale(ctx context.Context) error {
	singleDir, err := mkdir(b.tmp, "scale-single")
	if err != nil {
		return err
	}
	single, err := stack.StartRedis(singleDir, stack.NoPersistence, b.tmp)
	if err != nil {
		return err
	}
	b.procs = append(b.procs, single.Process)
	clusterDir, err := mkdir(b.tmp, "scale-cluster")
	if err != nil {
		return err
	}
	cluster, err := proc.StartRedisCluster(clusterDir, scaleShards, 1)
	if err != nil {
		return err
	}
	defer cluster.Kill()
	primary, replica, err := b.startReplicated()
	if err != nil {
		return err
	}
	defer primary.Kill()
	defer replica.Kill()
	replicated := "redis://" + primary.Addr() + "/0"

	setups := []*scaleSetup{
		{label: "one Redis, TRAFFIC_SHARDS=1", key: "scale-single", env: map[string]string{"REDIS_URL": single.URL}},
		{label: fmt.Sprintf("cluster of %d primaries, TRAFFIC_SHARDS=%d", scaleShards, scaleShards), key: "scale-cluster",
			env: map[string]string{"REDIS_URL": "redis://" + cluster.Addrs()[0] + "/0", "REDIS_CLUSTER_ADDRS": strings.Join(cluster.Addrs(), ","),
				"TRAFFIC_SHARDS": strconv.Itoa(scaleShards)},
			note: "; six redis-servers, the edge and the load on the same two cores: this shows the cluster's overhead, not its gain"},
		{label: "primary + replica, REDIS_WAIT_REPLICAS=0", key: "scale-wait0", env: map[string]string{"REDIS_URL": replicated}},
		{label: "primary + replica, REDIS_WAIT_REPLICAS=1", key: "scale-wait1",
			env: map[string]string{"REDIS_URL": replicated, "REDIS_WAIT_REPLICAS": "1"}},
	}
	for _, s := range setups {
		if s.addr, err = b.startEdge(s.key, s.env); err != nil {
			return fmt.Errorf("%s: %w", s.label, err)
		}
	}
	pw, err := drive.Provision(ctx, drive.NewClient(setups[0].addr, 8), drive.ProvisionOptions{OperatorToken: b.opToken,
		Tag: b.tag + "s", Programs: 1})
	if err != nil {
		return fmt.Errorf("provision: %w", err)
	}
	p := pw.Programs[0]

	b.checkpoint(ctx, "redis-scale")
	best := make([]*drive.Result, len(setups))
	for round := 1; round <= scaleRounds; round++ {
		for i, s := range setups {
			res := drive.Run(ctx, drive.Options{Workers: b.cfg.Conns, Duration: b.p.aof},
				drive.Clicks(drive.NewClient(s.addr, b.cfg.Conns), []drive.Program{p}, int64(10+4*round+i)<<20))
			if res.Success() == 0 {
				return fmt.Errorf("clicks at max, %s: nothing accepted: %s %s", s.label, drive.Statuses(res.Status), res.FirstErr)
			}
			b.row(drive.Row{Name: fmt.Sprintf("clicks at max, %s (%d)", s.label, round), Result: res,
				Ceiling: "enqueue", Base: b.ceil["enqueue"], Note: "edge only, no worker; no persistence" + s.note})
			if best[i] == nil || res.Throughput() > best[i].Throughput() {
				best[i] = res
			}
		}
	}
	b.fact("cluster (3 shards) vs one Redis", fmt.Sprintf("%.2f× the click intake (%s vs %s, better of %d rounds each); "+
		"edge, load generator and all seven redis-servers share two cores, so this is the cluster's overhead, not its gain",
		best[1].Throughput()/best[0].Throughput(), drive.Rate(best[1].Throughput()), drive.Rate(best[0].Throughput()), scaleRounds))
	b.fact("REDIS_WAIT_REPLICAS=1 vs 0 at max", fmt.Sprintf("%.2f× the click intake (%s vs %s), p99 %s vs %s",
		best[3].Throughput()/best[2].Throughput(), drive.Rate(best[3].Throughput()), drive.Rate(best[2].Throughput()),
		drive.Ms(best[3].Latency.Quantile(0.99)), drive.Ms(best[2].Latency.Quantile(0.99))))

	var p50, p99 [2]time.Duration
	for i, s := range setups[2:] {
		pool := drive.PoolSize(waitRate) * 2
		res := drive.Run(ctx, drive.Options{Rate: waitRate, Workers: pool, Duration: b.p.aof, Slow: targets.outage.p99},
			drive.Clicks(drive.NewClient(s.addr, pool), []drive.Program{p}, int64(20+i)<<20))
		b.row(drive.Row{Name: fmt.Sprintf("clicks at %s, %s", drive.Rate(waitRate), s.label), Result: res,
			Note: "edge only, no worker; " + b.rateMeasured(res)})
		p50[i], p99[i] = res.Latency.Quantile(0.5), res.Latency.Quantile(0.99)
	}
	b.fact(fmt.Sprintf("REDIS_WAIT_REPLICAS=1 vs 0 at %s", drive.Rate(waitRate)), fmt.Sprintf("p50 %s vs %s, p99 %s vs %s (replica on the same host: a replica across a network adds its round trip to every batch)",
		drive.Ms(p50[1]), drive.Ms(p50[0]), drive.Ms(p99[1]), drive.Ms(p99[0])))
	return nil
}

// startEdge starts an edge (no worker) with env over the bench's and
// returns its address.
func (b *bench) startEdge(name string, env map[string]string) (string, error) {
	all := b.env("")
	for k, v := range env {
		all[k] = v
	}
	edge, err := stack.Start(name+"-edge", b.bins["edge"], nil, all, b.tmp)
	if err != nil {
		return "", err
	}
	b.procs = append(b.procs, edge)
	line, err := edge.WaitLog("edge listening", 60*time.Second)
	if err != nil {
		return "", err
	}
	addr, _ := line["addr"].(string)
	return addr, nil
}

// startReplicated starts a primary and one replica of it, without
// persistence, and waits until the replica is in sync (WAIT 1 counts
// only replicas whose link is up).
func (b *bench) startReplicated() (primary, replica *proc.RedisNode, err error) {
	start := func(name string, args ...string) (*proc.RedisNode, error) {
		port, err := proc.FreePort()
		if err != nil {
			return nil, err
		}
		n := &proc.RedisNode{Port: port}
		if n.Dir, err = mkdir(b.tmp, name); err != nil {
			return nil, err
		}
		n.P, err = proc.StartRedis(proc.RedisOptions{Port: port, Dir: n.Dir, Args: args})
		return n, err
	}
	if primary, err = start("scale-primary"); err != nil {
		return nil, nil, err
	}
	if replica, err = start("scale-replica", "--replicaof", "127.0.0.1", strconv.Itoa(primary.Port)); err != nil {
		primary.Kill()
		return nil, nil, err
	}
	rdb := redis.NewClient(&redis.Options{Addr: replica.Addr()})
	defer rdb.Close()
	err = proc.WaitFor(30*time.Second, func() error {
		info, err := rdb.Info(context.Background(), "replication").Result()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "master_link_status:up") {
			return fmt.Errorf("replica %s not in sync with %s", replica.Addr(), primary.Addr())
		}
		return nil
	})
	if err != nil {
		primary.Kill()
		replica.Kill()
		return nil, nil, err
	}
	return primary, replica, nil
}
