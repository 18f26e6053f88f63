// Package linkcache keeps referral links and programs' tracker settings
// in process memory, so that a click resolves its referral code without a
// Postgres round trip. Entries live for a short TTL; a change to a link or
// a program is published on a Redis channel and every edge instance drops
// the entries it names at once. When the subscription is (re)established
// the whole cache is dropped, since messages may have been missed while it
// was down; while Redis is unreachable the TTL bounds how stale an entry
// can be. While Postgres is unreachable an expired entry is still answered
// for a while (StaleIfError), so that clicks on known codes keep landing.
package linkcache

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"github.com/partnertrack/partnertrack/ledger"
)

// Channel is the name (before the queue namespace) of the Redis channel
// that carries invalidations.
const Channel = "tracking:invalidate"

// Options tune a cache.
type Options struct {
	TTL         time.Duration // of a found link or program; default 30 s
	NegativeTTL time.Duration // of an unknown code or program id; default 5 s
	MaxEntries  int           // per map; past it the map is emptied; default 100,000
	// StaleIfError is how long past its expiry an entry is still answered
	// while its refresh fails (Postgres unreachable): changes to links and
	// programs go through Postgres, so none can be missed meanwhile except
	// one whose invalidation Redis also lost. Default 10 minutes.
	StaleIfError time.Duration
	Now          func() time.Time
	Logger       *slog.Logger
}

// Cache implements ledger.TrackingDirectory over a slower directory (the
// Postgres store) and ledger.TrackingInvalidator over Redis pub/sub.
type Cache struct {
	src     ledger.TrackingDirectory
	rdb     redis.UniversalClient
	channel string
	opts    Options
	group   singleflight.Group

	mu       sync.RWMutex
	gen      uint64 // bumped by every invalidation: a load that raced one is not kept
	links    map[string]entry[*ledger.ReferralLink]
	programs map[int64]entry[*ledger.TrackerSettings]

	stop   context.CancelFunc
	closed chan struct{}
}

type entry[T any] struct {
	val     T
	err     error // ENotFound, cached for NegativeTTL
	expires time.Time
	stale   time.Time // after expires: answered while refreshes fail, until then
}

// retryStale is how long a stale entry is answered after a failed refresh
// before the next refresh is tried.
const retryStale = time.Second

var (
	_ ledger.TrackingDirectory   = (*Cache)(nil)
	_ ledger.TrackingInvalidator = (*Cache)(nil)
)

// New returns a cache over src whose invalidations travel on channel.
// Call Start to receive other instances' invalidations.
func New(src ledger.TrackingDirectory, rdb redis.UniversalClient, channel string, opts Options) *Cache {
	if opts.TTL <= 0 {
		opts.TTL = 30 * time.Second
	}
	if opts.NegativeTTL <= 0 {
		opts.NegativeTTL = 5 * time.Second
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = 100_000
	}
	if opts.StaleIfError <= 0 {
		opts.StaleIfError = 10 * time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Cache{
		src: src, rdb: rdb, channel: channel, opts: opts,
		links:    make(map[string]entry[*ledger.ReferralLink]),
		programs: make(map[int64]entry[*ledger.TrackerSettings]),
	}
}

// ReferralLink returns the link with code from memory, loading it on a
// miss (one load per code however many callers miss at once).
func (c *Cache) ReferralLink(ctx context.Context, code string) (*ledger.ReferralLink, error) {
	return lookup(c, c.links, code, "l"+code, func() (*ledger.ReferralLink, error) {
		return c.src.ReferralLink(ctx, code)
	})
}

// TrackerSettings returns a program's tracker settings from memory,
// loading them on a miss.
func (c *Cache) TrackerSettings(ctx context.Context, programID int64) (*ledger.TrackerSettings, error) {
	return lookup(c, c.programs, programID, "p"+strconv.FormatInt(programID, 10), func() (*ledger.TrackerSettings, error) {
		return c.src.TrackerSettings(ctx, programID)
	})
}

// lookup reads key from m, or loads it once for every caller that misses
// at the same time (flight names the load). A found value is kept for the
// TTL, an unknown one (ENotFound) for the negative TTL, a failure not at
// all; a load that raced an invalidation is not kept. When a refresh
// fails, an expired entry is still answered (stale if error) for up to
// StaleIfError past its expiry, the refresh tried again at most once a
// second.
func lookup[K comparable, V any](c *Cache, m map[K]entry[V], key K, flight string, load func() (V, error)) (V, error) {
	now := c.opts.Now()
	c.mu.RLock()
	e, ok := m[key]
	gen := c.gen
	c.mu.RUnlock()
	if ok && now.Before(e.expires) {
		return e.val, e.err
	}
	type result struct {
		val V
		err error
	}
	r, err, _ := c.group.Do(flight, func() (any, error) {
		v, err := load()
		if err != nil && ledger.ErrorCode(err) != ledger.ENotFound {
			if ok && now.Before(e.stale) {
				// Postgres fails: answer what was known, and try again soon.
				c.mu.Lock()
				if c.gen == gen {
					e.expires = now.Add(retryStale)
					m[key] = e
				}
				c.mu.Unlock()
				return result{e.val, e.err}, nil
			}
			return nil, err
		}
		c.mu.Lock()
		if c.gen == gen {
			if len(m) >= c.opts.MaxEntries {
				clear(m)
			}
			exp := c.expiry(now, err)
			m[key] = entry[V]{val: v, err: err, expires: exp, stale: exp.Add(c.opts.StaleIfError)}
		}
		c.mu.Unlock()
		return result{v, err}, nil
	})
	if err != nil {
		var zero V
		return zero, err
	}
	res := r.(result)
	return res.val, res.err
}

func (c *Cache) expiry(now time.Time, err error) time.Time {
	if err != nil {
		return now.Add(c.opts.NegativeTTL)
	}
	return now.Add(c.opts.TTL)
}

// Invalidation messages: l:<code>, p:<program id>.
const (
	linkPrefix    = "l:"
	programPrefix = "p:"
)

// InvalidateLink drops the link with code here and, through Redis, on
// every other instance. Call it after the change has committed.
func (c *Cache) InvalidateLink(ctx context.Context, code string) error {
	c.dropLink(code)
	return c.publish(ctx, linkPrefix+code)
}

// InvalidateProgram drops a program's settings and every link of the
// program here and on every other instance (a later change of cookie
// duration or lead policy calls it).
func (c *Cache) InvalidateProgram(ctx context.Context, programID int64) error {
	c.dropProgram(programID)
	return c.publish(ctx, programPrefix+strconv.FormatInt(programID, 10))
}

func (c *Cache) publish(ctx context.Context, msg string) error {
	if err := c.rdb.Publish(ctx, c.channel, msg).Err(); err != nil {
		return errors.Join(errors.New("linkcache: publish invalidation (other instances keep their entries until they expire)"), err)
	}
	return nil
}

func (c *Cache) dropLink(code string) {
	c.mu.Lock()
	c.gen++
	delete(c.links, code)
	c.mu.Unlock()
}

func (c *Cache) dropProgram(id int64) {
	c.mu.Lock()
	c.gen++
	delete(c.programs, id)
	for code, e := range c.links {
		if e.val != nil && e.val.Program != nil && e.val.Program.ProgramID == id {
			delete(c.links, code)
		}
	}
	c.mu.Unlock()
}

// dropAll empties the cache.
func (c *Cache) dropAll() {
	c.mu.Lock()
	c.gen++
	clear(c.links)
	clear(c.programs)
	c.mu.Unlock()
}

// Start subscribes to the invalidation channel until Close. It returns
// once the first subscription is confirmed, so that an invalidation
// published after Start returns is seen.
func (c *Cache) Start(ctx context.Context) error {
	sub := c.rdb.Subscribe(ctx, c.channel)
	if _, err := sub.Receive(ctx); err != nil {
		sub.Close()
		return errors.Join(errors.New("linkcache: subscribe"), err)
	}
	c.dropAll()
	runCtx, stop := context.WithCancel(context.Background())
	c.stop, c.closed = stop, make(chan struct{})
	go c.listen(runCtx, sub)
	return nil
}

func (c *Cache) listen(ctx context.Context, sub *redis.PubSub) {
	defer close(c.closed)
	defer sub.Close()
	ch := sub.ChannelWithSubscriptions()
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-ch:
			if !ok {
				return
			}
			switch m := m.(type) {
			case *redis.Subscription:
				// A (re)subscription: messages published meanwhile are lost.
				if m.Kind == "subscribe" {
					c.dropAll()
				}
			case *redis.Message:
				c.apply(m.Payload)
			}
		}
	}
}

func (c *Cache) apply(msg string) {
	switch {
	case strings.HasPrefix(msg, linkPrefix):
		c.dropLink(msg[len(linkPrefix):])
	case strings.HasPrefix(msg, programPrefix):
		id, err := strconv.ParseInt(msg[len(programPrefix):], 10, 64)
		if err != nil {
			c.dropAll()
			return
		}
		c.dropProgram(id)
	default:
		c.dropAll()
	}
}

// Close stops the subscription.
func (c *Cache) Close() {
	if c.stop != nil {
		c.stop()
		<-c.closed
		c.stop = nil
	}
}
