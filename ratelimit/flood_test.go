package ratelimit

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestMemoryLimitHoldsUnderFlood: callers over their limit stay limited
// while a flood of new callers (far more than the store holds) passes
// through the same window. The store stays within its bound by evicting
// the callers with the fewest hits, not the ones being refused: before,
// it evicted an arbitrary entry, so the flood reset the count of the very
// callers the limit was holding back.
func TestMemoryLimitHoldsUnderFlood(t *testing.T) {
	t.Parallel()
	const bound, limit = 640, 60
	m := NewMemory(bound)
	c := &clock{t: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}
	l := New(m, c.now)
	ctx := context.Background()
	heavy := []string{"ip:203.0.113.1", "ip:203.0.113.2", "ip:203.0.113.3"}
	for _, h := range heavy {
		for i := 0; i < limit; i++ {
			if r, _ := l.Allow(ctx, h, limit); !r.Allowed {
				t.Fatalf("%s refused at hit %d", h, i+1)
			}
		}
	}
	refused := 0
	for i := 0; i < 50_000; i++ {
		l.Allow(ctx, fmt.Sprintf("ip:flood-%d", i), limit)
		if i%100 == 0 {
			for _, h := range heavy {
				if r, _ := l.Allow(ctx, h, limit); r.Allowed {
					t.Fatalf("%s allowed again after %d flooding callers: its count was evicted", h, i)
				}
				refused++
			}
		}
		if n := m.Len(); n > bound {
			t.Fatalf("store holds %d keys, bound %d", n, bound)
		}
	}
	if refused == 0 {
		t.Fatal("the heavy callers were never checked")
	}
}
