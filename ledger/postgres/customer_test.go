package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
)

// pendingFunc is a function-field fake of ledger.PendingClicks.
type pendingFunc func(ctx context.Context, id string) (*ledger.Click, error)

func (f pendingFunc) PendingClick(ctx context.Context, id string) (*ledger.Click, error) {
	return f(ctx, id)
}

func TestResolveClickAndCustomer(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	var programID, partnerID int64
	db.QueryRow(`WITH w AS (INSERT INTO workspaces (name) VALUES ('w') RETURNING id)
		INSERT INTO programs (workspace_id, name, domain, commission_type, commission_rate)
		SELECT id, 'p', 'p.example', 'percent', 10 FROM w RETURNING id`).Scan(&programID)
	db.QueryRow(`INSERT INTO partners (email, name) VALUES ('a@b.example', 'A') RETURNING id`).Scan(&partnerID)

	now := time.Now().UTC()
	queued := &ledger.Click{ID: ledger.NewClickID(now), ProgramID: programID, PartnerID: &partnerID, IP: "203.0.113.9"}
	queued.OccurredAt, _ = ledger.ClickTime(queued.ID)
	calls := 0
	pending := pendingFunc(func(_ context.Context, id string) (*ledger.Click, error) {
		calls++
		if id == queued.ID {
			return queued, nil
		}
		return nil, ledger.NewError(ledger.ENotFound, "click not found")
	})

	tx := func(fn func(tx *sqlx.Tx) error) {
		t.Helper()
		if err := db.Transact(ctx, fn); err != nil {
			t.Fatal(err)
		}
	}
	// A click still in the queue is resolved from its pending record and
	// its row written; the second resolution reads Postgres.
	for i := 0; i < 2; i++ {
		tx(func(tx *sqlx.Tx) error {
			c, err := postgres.ResolveClick(ctx, tx, pending, queued.ID)
			if err != nil {
				return err
			}
			if c.ProgramID != programID || *c.PartnerID != partnerID {
				t.Fatalf("click = %+v", c)
			}
			return nil
		})
	}
	if calls != 1 {
		t.Fatalf("pending record read %d times, want once", calls)
	}
	var rows int
	db.QueryRow(`SELECT count(*) FROM clicks WHERE click_id = $1`, queued.ID).Scan(&rows)
	if rows != 1 {
		t.Fatalf("%d click rows", rows)
	}

	// The worker stores a click and deletes its record between the read
	// of clicks and the read of the record: the click is read again.
	meanwhile := &ledger.Click{ID: ledger.NewClickID(now), ProgramID: programID, PartnerID: &partnerID}
	meanwhile.OccurredAt, _ = ledger.ClickTime(meanwhile.ID)
	storing := pendingFunc(func(ctx context.Context, id string) (*ledger.Click, error) {
		if _, err := postgres.NewTrafficStore(db.DB).WriteClicks(ctx, []ledger.Click{*meanwhile}); err != nil {
			return nil, err
		}
		return nil, ledger.NewError(ledger.ENotFound, "click not found")
	})
	tx(func(tx *sqlx.Tx) error {
		c, err := postgres.ResolveClick(ctx, tx, storing, meanwhile.ID)
		if err != nil || c.ProgramID != programID || *c.PartnerID != partnerID {
			t.Fatalf("click stored while it was looked up: %+v, %v", c, err)
		}
		return nil
	})

	tx(func(tx *sqlx.Tx) error {
		for _, id := range []string{"not-a-click", ledger.NewClickID(now)} {
			if _, err := postgres.ResolveClick(ctx, tx, pending, id); ledger.ErrorCode(err) != ledger.ENotFound {
				t.Fatalf("postgres.ResolveClick(%q) = %v", id, err)
			}
		}
		return nil
	})

	// One customer per click, however often it is asked for.
	var first int64
	for i := 0; i < 2; i++ {
		tx(func(tx *sqlx.Tx) error {
			c, err := postgres.ResolveClick(ctx, tx, nil, queued.ID)
			if err != nil {
				return err
			}
			cust, err := postgres.CustomerForClick(ctx, tx, c, now)
			if err != nil {
				return err
			}
			if cust.Status != ledger.FunnelClick || cust.ClickID != queued.ID || *cust.PartnerID != partnerID {
				t.Fatalf("customer = %+v", cust)
			}
			if first == 0 {
				first = cust.ID
			} else if cust.ID != first {
				t.Fatalf("second customer %d for one click (first %d)", cust.ID, first)
			}
			return nil
		})
	}
	tx(func(tx *sqlx.Tx) error {
		if _, err := postgres.CustomerByKey(ctx, tx, programID, "user-1"); ledger.ErrorCode(err) != ledger.ENotFound {
			t.Fatalf("customerByKey before any key was saved: %v", err)
		}
		return nil
	})
}
