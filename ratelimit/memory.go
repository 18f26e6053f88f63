package ratelimit

import (
	"context"
	"hash/maphash"
	"sync"
	"time"
)

const memoryShards = 64

// Memory keeps counts in process memory, per instance, as the spec's
// limits are. It holds only the current window's keys and at most
// maxKeys of them: a flood of distinct callers evicts entries with few
// hits (whose callers then start counting afresh) instead of growing
// without bound, and keeps the counts of the callers over their limit.
type Memory struct {
	seed        maphash.Seed
	maxPerShard int
	shards      [memoryShards]memoryShard
}

type memoryShard struct {
	mu     sync.Mutex
	window int64 // unix seconds of the window start
	counts map[string]int64
}

// NewMemory returns a memory store holding at most maxKeys keys.
func NewMemory(maxKeys int) *Memory {
	per := maxKeys / memoryShards
	if per < 1 {
		per = 1
	}
	m := &Memory{seed: maphash.MakeSeed(), maxPerShard: per}
	for i := range m.shards {
		m.shards[i].counts = make(map[string]int64)
	}
	return m
}

// Incr counts a hit of key in the window starting at windowStart.
func (m *Memory) Incr(_ context.Context, key string, windowStart time.Time) (int64, error) {
	sh := &m.shards[maphash.String(m.seed, key)%memoryShards]
	w := windowStart.Unix()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if w > sh.window {
		// A new window: every count of the last one is obsolete.
		sh.window = w
		if len(sh.counts) > 1024 {
			sh.counts = make(map[string]int64) // release a flood's memory
		} else {
			clear(sh.counts)
		}
	}
	n, ok := sh.counts[key]
	if !ok && len(sh.counts) >= m.maxPerShard {
		sh.evict()
	}
	n++
	sh.counts[key] = n
	return n, nil
}

// evictSample is how many entries an eviction looks at.
const evictSample = 8

// evict removes, of a few entries sampled at random (map order), the one
// with the fewest hits: a flood of new callers (one hit each) then evicts
// its own entries, and the counts of callers being refused, which are
// the ones the limit is for, survive it.
func (sh *memoryShard) evict() {
	victim, least, seen := "", int64(0), 0
	for k, n := range sh.counts {
		if seen == 0 || n < least {
			victim, least = k, n
		}
		if seen++; seen == evictSample || least == 1 {
			break
		}
	}
	delete(sh.counts, victim)
}

// Len returns the number of keys held (for tests and metrics).
func (m *Memory) Len() int {
	total := 0
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		total += len(sh.counts)
		sh.mu.Unlock()
	}
	return total
}
