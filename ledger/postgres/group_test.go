package postgres_test

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
)

// TestGroupLimitUnderConcurrency: creations lock the program, so two
// creations racing for the last place make one group, and the other is
// the 409 of the limit.
func TestGroupLimitUnderConcurrency(t *testing.T) {
	b := setupLedger(t, "0")
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "10", "USD", 0, 30))
	svc := postgres.NewGroupService(b.db.DB)
	for i := 2; i < ledger.MaxGroups; i++ { // the default group is the first
		if _, err := svc.CreateGroup(ctx, w.program.ID, 0, ledger.GroupInput{Name: ledger.Some("g" + strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, errs[i] = svc.CreateGroup(ctx, w.program.ID, 0, ledger.GroupInput{Name: ledger.Some("last " + strconv.Itoa(i)),
				CommissionRate: ledger.Some(decimal.NewFromInt(5))})
		}(i)
	}
	wg.Wait()
	ok, refused := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case ledger.ErrorCode(err) == ledger.EConflict && ledger.ErrorMessage(err) == ledger.MsgGroupLimit:
			refused++
		default:
			t.Fatal(err)
		}
	}
	gs, err := svc.Groups(ctx, w.program.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ok != 1 || refused != 1 || len(gs) != ledger.MaxGroups {
		t.Fatalf("%d made, %d refused, %d groups", ok, refused, len(gs))
	}
	var policies int
	if err := b.db.QueryRow(`SELECT count(*) FROM commission_policies cp JOIN partner_groups g ON g.id = cp.group_id
		WHERE g.program_id = $1`, w.program.ID).Scan(&policies); err != nil {
		t.Fatal(err)
	}
	if policies != ledger.MaxGroups-1 {
		t.Fatalf("%d policies", policies)
	}
}
