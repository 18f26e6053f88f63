package ratelimit

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis keeps counts in Redis, shared by every instance: one INCR and one
// EXPIRE in a single round trip per request.
type Redis struct {
	client redis.UniversalClient
	prefix string
}

// NewRedis returns a store whose keys start with prefix.
func NewRedis(client redis.UniversalClient, prefix string) *Redis {
	return &Redis{client: client, prefix: prefix}
}

// Incr counts a hit of key in the window starting at windowStart.
func (r *Redis) Incr(ctx context.Context, key string, windowStart time.Time) (int64, error) {
	k := r.prefix + "rl:" + strconv.FormatInt(windowStart.Unix(), 10) + ":" + key
	var incr *redis.IntCmd
	_, err := r.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		incr = p.Incr(ctx, k)
		p.Expire(ctx, k, 2*Window)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return incr.Val(), nil
}
