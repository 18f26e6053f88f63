package linkcache_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ingest/linkcache"
	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/workers/redistest"
)

// counting is the Postgres directory with a count of the loads that reach
// it, and an optional gate that holds a load after it has read Postgres.
type counting struct {
	*postgres.TrafficStore
	loads atomic.Int64
	gate  chan chan struct{} // when set, each load waits for a release channel
	fail  atomic.Bool
}

func (c *counting) ReferralLink(ctx context.Context, code string) (*ledger.ReferralLink, error) {
	c.loads.Add(1)
	if c.fail.Load() {
		return nil, errors.New("connection refused")
	}
	l, err := c.TrafficStore.ReferralLink(ctx, code)
	if c.gate != nil {
		release := make(chan struct{})
		c.gate <- release
		<-release
	}
	return l, err
}

func (c *counting) TrackerSettings(ctx context.Context, id int64) (*ledger.TrackerSettings, error) {
	c.loads.Add(1)
	return c.TrafficStore.TrackerSettings(ctx, id)
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

type testBundle struct {
	t         *testing.T
	db        *pgtest.DB
	src       *counting
	clock     *clock
	channel   string
	programID int64
	partnerID int64
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	t.Parallel()
	db := pgtest.New(t)
	b := &testBundle{t: t, db: db, src: &counting{TrafficStore: postgres.NewTrafficStore(db.DB)}, clock: &clock{t: time.Now()}}
	rdb := redistest.Client(t)
	b.channel = redistest.Namespace(t, rdb).Key(linkcache.Channel)
	fx := db.MustFixture(t, "pat")
	b.programID, b.partnerID = fx.ProgramID, fx.PartnerID
	return b
}

func (b *testBundle) exec(q string, args ...any) {
	b.t.Helper()
	b.db.MustExec(q, args...)
}

// cache returns a started cache, an edge instance's view.
func (b *testBundle) cache() *linkcache.Cache {
	b.t.Helper()
	c := linkcache.New(b.src, redistest.Client(b.t), b.channel, linkcache.Options{Now: b.clock.Now, TTL: 30 * time.Second, NegativeTTL: 5 * time.Second})
	if err := c.Start(context.Background()); err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(c.Close)
	return c
}

func mustLink(t *testing.T, c *linkcache.Cache, code string) *ledger.ReferralLink {
	t.Helper()
	l, err := c.ReferralLink(context.Background(), code)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// eventually polls cond; it fails after a generous bound instead of
// asserting on timing.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never happened: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestHitsStayInMemoryUntilInvalidatedOrExpired(t *testing.T) {
	b := setup(t)
	c := b.cache()
	for i := 0; i < 100; i++ {
		if l := mustLink(t, c, "pat"); !l.Active || l.Program.ProgramID != b.programID {
			t.Fatalf("link = %+v", l)
		}
	}
	if n := b.src.loads.Load(); n != 1 {
		t.Fatalf("%d loads for 100 reads, want 1", n)
	}
	// A change nobody announced is seen when the entry expires.
	b.exec(`UPDATE links SET active = false WHERE code = 'pat'`)
	if !mustLink(t, c, "pat").Active {
		t.Fatal("the entry was reloaded before it expired")
	}
	b.clock.Add(31 * time.Second)
	if mustLink(t, c, "pat").Active {
		t.Fatal("an expired entry was served")
	}
	// An announced change is seen at once.
	b.exec(`UPDATE links SET active = true WHERE code = 'pat'`)
	if err := c.InvalidateLink(context.Background(), "pat"); err != nil {
		t.Fatal(err)
	}
	if !mustLink(t, c, "pat").Active {
		t.Fatal("an invalidated entry was served")
	}
}

func TestInvalidationReachesEveryInstance(t *testing.T) {
	b := setup(t)
	a, other := b.cache(), b.cache()
	if !mustLink(t, other, "pat").Active {
		t.Fatal("link inactive")
	}
	b.exec(`UPDATE links SET active = false WHERE code = 'pat'`)
	if err := a.InvalidateLink(context.Background(), "pat"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the other instance drops the link", func() bool { return !mustLink(t, other, "pat").Active })

	// A program change drops the program's settings and its links.
	s, err := other.TrackerSettings(context.Background(), b.programID)
	if err != nil || s.CookieDuration != 90 {
		t.Fatalf("settings %+v, %v", s, err)
	}
	b.exec(`UPDATE programs SET cookie_duration = 30 WHERE id = $1`, b.programID)
	if err := a.InvalidateProgram(context.Background(), b.programID); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the other instance reloads the program", func() bool {
		s, err := other.TrackerSettings(context.Background(), b.programID)
		return err == nil && s.CookieDuration == 30 && mustLink(t, other, "pat").Program.CookieDuration == 30
	})
}

func TestUnknownCodeIsRememberedBriefly(t *testing.T) {
	b := setup(t)
	c := b.cache()
	for i := 0; i < 3; i++ {
		if _, err := c.ReferralLink(context.Background(), "nobody"); ledger.ErrorCode(err) != ledger.ENotFound {
			t.Fatalf("err = %v", err)
		}
	}
	if n := b.src.loads.Load(); n != 1 {
		t.Fatalf("%d loads of an unknown code, want 1", n)
	}
	if _, err := c.TrackerSettings(context.Background(), b.programID+99); ledger.ErrorCode(err) != ledger.ENotFound {
		t.Fatalf("unknown program: %v", err)
	}
	// A link created with the code is announced, and found.
	b.exec(`INSERT INTO links (program_id, partner_id, code) VALUES ($1, $2, 'nobody')`, b.programID, b.partnerID)
	c.InvalidateLink(context.Background(), "nobody")
	if l := mustLink(t, c, "nobody"); l.Code != "nobody" {
		t.Fatalf("link = %+v", l)
	}
}

func TestFailuresAreNotCached(t *testing.T) {
	b := setup(t)
	c := b.cache()
	b.src.fail.Store(true)
	if _, err := c.ReferralLink(context.Background(), "pat"); err == nil || ledger.ErrorCode(err) == ledger.ENotFound {
		t.Fatalf("err = %v, want the failure", err)
	}
	b.src.fail.Store(false)
	if !mustLink(t, c, "pat").Active {
		t.Fatal("link inactive")
	}
}

func TestLoadRacingAnInvalidationIsNotKept(t *testing.T) {
	b := setup(t)
	b.src.gate = make(chan chan struct{})
	c := b.cache()
	done := make(chan *ledger.ReferralLink)
	go func() { l, _ := c.ReferralLink(context.Background(), "pat"); done <- l }()
	release := <-b.src.gate // the load has read active = true and not returned yet
	b.exec(`UPDATE links SET active = false WHERE code = 'pat'`)
	if err := c.InvalidateLink(context.Background(), "pat"); err != nil {
		t.Fatal(err)
	}
	close(release)
	<-done
	go func() { r := <-b.src.gate; close(r) }()
	if mustLink(t, c, "pat").Active {
		t.Fatal("a load that raced an invalidation was kept")
	}
}
