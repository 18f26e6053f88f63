package postgres_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
)

// TestConcurrentKeyLookupsShareStatements: key lookups that arrive while
// others are running share the next statement, and each call still gets
// its own key (or ENotFound). The table is held locked so that the first
// lookups stall and the rest queue behind them.
func TestConcurrentKeyLookupsShareStatements(t *testing.T) {
	t.Parallel()
	db, rt := pgtest.NewCounting(t)
	b := bundleOn(db)
	ctx := context.Background()
	type known struct {
		token     string
		programID int64
		mode      ledger.KeyMode
	}
	var keys []known
	for i := 0; i < 4; i++ {
		p := MustProgram(t, b)
		for _, mode := range []ledger.KeyMode{ledger.LiveKey, ledger.TestKey} {
			g, err := b.programs.RegenerateProgramKey(ctx, p.ID, mode)
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, known{g.APIKey, p.ID, mode})
		}
	}
	// Prepare the lookup before counting.
	if _, err := b.programs.AuthenticateProgramKey(ctx, keys[0].token); err != nil {
		t.Fatal(err)
	}

	lock, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Exec(`LOCK TABLE program_keys IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	rt.Reset()
	const calls = 48
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for i := 0; i < calls; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if i%7 == 6 { // not a key
				_, err := b.programs.AuthenticateProgramKey(ctx, "aff_live_unknown"+strings.Repeat("x", i))
				if ledger.ErrorCode(err) != ledger.ENotFound {
					errs <- err
				}
				return
			}
			want := keys[i%len(keys)]
			k, err := b.programs.AuthenticateProgramKey(ctx, want.token)
			if err != nil || k.ProgramID != want.programID || k.Mode != want.mode {
				errs <- err
				t.Errorf("call %d: key %+v, %v; want program %d, mode %s", i, k, err, want.programID, want.mode)
			}
		}(i)
	}
	// The first call's lookup stalls on the lock; every other call waits
	// for the next statement.
	for deadline := time.Now().Add(60 * time.Second); b.programs.KeyLookupsWaiting() < calls-1; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d calls wait behind the stalled lookup after 60 s", b.programs.KeyLookupsWaiting(), calls-1)
		}
		time.Sleep(time.Millisecond)
	}
	if err := lock.Rollback(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := rt.Count(); n > calls/4 {
		t.Fatalf("%d calls took %d statements; want them shared: %q", calls, n, rt.Statements())
	}
}
