package service

import (
	"context"
	"fmt"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/partnertrack/partnertrack/cmd/internal/config"
)

// OpenRedis connects to the Redis deployment cfg names (one server, a
// cluster or a Sentinel-watched primary), with request deadlines honoured.
func OpenRedis(ctx context.Context, cfg config.Redis) (redis.UniversalClient, error) {
	opts, err := RedisOptions(cfg)
	if err != nil {
		return nil, err
	}
	rdb := NewRedisClient(cfg.Mode, opts)
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("cannot reach Redis (%s) (%v); set %s", cfg.Describe(), err, cfg.Setting())
	}
	return rdb, nil
}

// RedisOptions are the client options of every process's Redis client:
// REDIS_URL's for one server, or its user, password, TLS and database
// over the cluster's seed nodes or the sentinels.
func RedisOptions(cfg config.Redis) (*redis.UniversalOptions, error) {
	base, err := redis.ParseURL(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("invalid REDIS_URL %s (%v); set REDIS_URL", config.Redacted(cfg.URL), err)
	}
	o := &redis.UniversalOptions{
		Addrs:                 []string{base.Addr},
		Username:              base.Username,
		Password:              base.Password,
		DB:                    base.DB,
		TLSConfig:             base.TLSConfig,
		ContextTimeoutEnabled: true,
	}
	switch cfg.Mode {
	case config.RedisCluster:
		o.Addrs, o.DB, o.IsClusterMode = cfg.ClusterAddrs, 0, true
	case config.RedisSentinel:
		o.Addrs, o.MasterName = cfg.SentinelAddrs, cfg.SentinelMaster
	}
	return o, nil
}

// NewRedisClient returns the client of a mode: a *redis.ClusterClient, a
// failover (Sentinel) client or a plain one. Unlike
// redis.NewUniversalClient it never mistakes one cluster seed for a
// single server.
func NewRedisClient(mode config.RedisMode, o *redis.UniversalOptions) redis.UniversalClient {
	switch mode {
	case config.RedisCluster:
		return redis.NewClusterClient(o.Cluster())
	case config.RedisSentinel:
		return redis.NewFailoverClient(o.Failover())
	}
	return redis.NewClient(o.Simple())
}

// AsynqConn is the connection option of what asynq opens itself (the
// scheduler, the queue dashboard) for the same deployment.
func AsynqConn(cfg config.Redis) (asynq.RedisConnOpt, error) {
	o, err := RedisOptions(cfg)
	if err != nil {
		return nil, err
	}
	switch cfg.Mode {
	case config.RedisCluster:
		return asynq.RedisClusterClientOpt{Addrs: o.Addrs, Username: o.Username, Password: o.Password, TLSConfig: o.TLSConfig}, nil
	case config.RedisSentinel:
		return asynq.RedisFailoverClientOpt{MasterName: o.MasterName, SentinelAddrs: o.Addrs,
			Username: o.Username, Password: o.Password, DB: o.DB, TLSConfig: o.TLSConfig}, nil
	}
	return asynq.RedisClientOpt{Addr: o.Addrs[0], Username: o.Username, Password: o.Password, DB: o.DB, TLSConfig: o.TLSConfig}, nil
}
