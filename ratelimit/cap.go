package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cap allows at most Limit events per key in any sliding Window, counted
// in Redis so that every instance shares the count: the synthetic
// verification chain's 10 runs per program per hour. Unlike the request
// limits it is a sliding log (a sorted set of event times per key), so
// no burst fits across a window boundary, and a refused event is not
// counted.
type Cap struct {
	client redis.UniversalClient
	prefix string
	limit  int
	window time.Duration
	now    func() time.Time
}

// NewCap returns a cap whose keys start with prefix, on the given clock
// (time.Now when nil).
func NewCap(client redis.UniversalClient, prefix string, limit int, window time.Duration, now func() time.Time) *Cap {
	if now == nil {
		now = time.Now
	}
	return &Cap{client: client, prefix: prefix, limit: limit, window: window, now: now}
}

// capScript drops the key's events older than the window, then adds this
// one when fewer than the limit remain. It returns {allowed, count, ms
// until the oldest event leaves the window}.
var capScript = redis.NewScript(`
local key = KEYS[1]
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local n = redis.call('ZCARD', key)
if n < limit then
  redis.call('ZADD', key, now, ARGV[4])
  redis.call('PEXPIRE', key, window)
  return {1, n + 1, 0}
end
local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
return {0, n, tonumber(oldest[2]) + window - now}
`)

// Take counts one event of key. It reports whether the event is allowed
// and, when it is not, the whole seconds (at least 1) until one is.
func (c *Cap) Take(ctx context.Context, key string) (allowed bool, retryAfterSeconds int, err error) {
	id := make([]byte, 8)
	rand.Read(id)
	now := c.now().UnixMilli()
	res, err := capScript.Run(ctx, c.client, []string{c.prefix + "cap:" + key},
		now, c.window.Milliseconds(), c.limit, hex.EncodeToString(id)+":"+time.UnixMilli(now).UTC().Format(time.RFC3339Nano)).Int64Slice()
	if err != nil {
		return false, 0, err
	}
	if res[0] == 1 {
		return true, 0, nil
	}
	secs := int((res[2] + 999) / 1000)
	if secs < 1 {
		secs = 1
	}
	return false, secs, nil
}
