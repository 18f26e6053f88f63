package linkcache_test

import (
	"context"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
)

// TestServesStaleWhilePostgresFails: an entry that expires while its
// refresh fails (Postgres restarting) is still answered, for a bounded
// time, so that clicks on a known code keep landing through the outage;
// refreshes are retried at most once a second meanwhile. Found by the
// reliability suite (cmd/internal/reliability
// TestFaultPostgresRestartDuringSales, long version): clicks whose entry
// expired during a restart answered 500.
func TestServesStaleWhilePostgresFails(t *testing.T) {
	b := setup(t)
	c := b.cache()
	mustLink(t, c, "pat")
	b.src.fail.Store(true)
	b.clock.Add(31 * time.Second) // expired
	loads := b.src.loads.Load()
	for i := 0; i < 5; i++ {
		if !mustLink(t, c, "pat").Active {
			t.Fatal("stale link inactive")
		}
	}
	if n := b.src.loads.Load() - loads; n != 1 {
		t.Fatalf("%d refreshes within a second of a failure, want 1", n)
	}
	b.clock.Add(2 * time.Second)
	mustLink(t, c, "pat")
	if n := b.src.loads.Load() - loads; n != 2 {
		t.Fatalf("%d refreshes after the retry interval, want 2", n)
	}
	// Past the stale bound the failure is the answer.
	b.clock.Add(11 * time.Minute)
	if _, err := c.ReferralLink(context.Background(), "pat"); err == nil || ledger.ErrorCode(err) == ledger.ENotFound {
		t.Fatalf("err = %v, want the failure once the entry is too old", err)
	}
	// A refresh that succeeds again replaces it.
	b.src.fail.Store(false)
	mustLink(t, c, "pat")
}
