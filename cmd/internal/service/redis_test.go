package service

import (
	"reflect"
	"strings"
	"testing"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/partnertrack/partnertrack/cmd/internal/config"
)

// TestRedisOptionsByMode: every mode keeps REDIS_URL's credentials, TLS
// and (but for a cluster) database, over the mode's addresses; the
// client and asynq's connection option are of the mode's kind.
func TestRedisOptionsByMode(t *testing.T) {
	for _, tc := range []struct {
		cfg        config.Redis
		addrs      []string
		db         int
		master     string
		tls        bool
		client     any
		asynqConn  asynq.RedisConnOpt
		clusterOpt bool
	}{
		{cfg: config.Redis{Mode: config.RedisSingle, URL: "rediss://u:pw@cache:6380/2"},
			addrs: []string{"cache:6380"}, db: 2, tls: true, client: &redis.Client{},
			asynqConn: asynq.RedisClientOpt{}},
		{cfg: config.Redis{Mode: config.RedisCluster, URL: "redis://u:pw@ignored:1/0", ClusterAddrs: []string{"a:7000", "b:7001"}},
			addrs: []string{"a:7000", "b:7001"}, client: &redis.ClusterClient{}, asynqConn: asynq.RedisClusterClientOpt{}, clusterOpt: true},
		{cfg: config.Redis{Mode: config.RedisSentinel, URL: "redis://u:pw@ignored/3", SentinelAddrs: []string{"s1:26379", "s2:26379"}, SentinelMaster: "m"},
			addrs: []string{"s1:26379", "s2:26379"}, db: 3, master: "m", client: &redis.Client{}, asynqConn: asynq.RedisFailoverClientOpt{}},
	} {
		t.Run(string(tc.cfg.Mode), func(t *testing.T) {
			o, err := RedisOptions(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(o.Addrs, tc.addrs) || o.DB != tc.db || o.MasterName != tc.master || o.Username != "u" ||
				o.Password != "pw" || (o.TLSConfig != nil) != tc.tls || o.IsClusterMode != tc.clusterOpt || !o.ContextTimeoutEnabled {
				t.Fatalf("options = %+v", o)
			}
			rdb := NewRedisClient(tc.cfg.Mode, o)
			defer rdb.Close()
			if reflect.TypeOf(rdb) != reflect.TypeOf(tc.client) {
				t.Fatalf("client is a %T, want %T", rdb, tc.client)
			}
			conn, err := AsynqConn(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if reflect.TypeOf(conn) != reflect.TypeOf(tc.asynqConn) {
				t.Fatalf("asynq connection is a %T, want %T", conn, tc.asynqConn)
			}
			switch c := conn.(type) {
			case asynq.RedisClientOpt:
				if c.Addr != "cache:6380" || c.DB != 2 || c.Password != "pw" || c.TLSConfig == nil {
					t.Fatalf("asynq single = %+v", c)
				}
			case asynq.RedisClusterClientOpt:
				if !reflect.DeepEqual(c.Addrs, tc.addrs) || c.Username != "u" || c.Password != "pw" {
					t.Fatalf("asynq cluster = %+v", c)
				}
			case asynq.RedisFailoverClientOpt:
				if c.MasterName != "m" || !reflect.DeepEqual(c.SentinelAddrs, tc.addrs) || c.DB != 3 || c.Password != "pw" {
					t.Fatalf("asynq failover = %+v", c)
				}
			}
		})
	}
}

// TestRedisOptionsBadURL: a REDIS_URL go-redis refuses though config.Load
// let it through (a database that is not a number) is named, without its
// password.
func TestRedisOptionsBadURL(t *testing.T) {
	_, err := RedisOptions(config.Redis{Mode: config.RedisSingle, URL: "redis://u:s3cretpw@cache:6379/notadb"})
	if err == nil || !strings.Contains(err.Error(), "REDIS_URL") || strings.Contains(err.Error(), "s3cretpw") {
		t.Fatalf("err = %v", err)
	}
	if _, err := AsynqConn(config.Redis{Mode: config.RedisCluster, URL: "redis://u:s3cretpw@cache:6379/notadb"}); err == nil {
		t.Fatal("AsynqConn accepted a bad REDIS_URL")
	}
}
