package postgres_test

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/stripetest"
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

// TestProcessorPaymentEarnsByGroup: a payment reported by the processor
// goes through the same snapshot and plan as the sale endpoint, so it
// earns by the partner's group terms and keeps their version.
func TestProcessorPaymentEarnsByGroup(t *testing.T) {
	b := setupProcessor(t)
	ctx := context.Background()
	w := b.MustWorld(t, percentProgram())
	acct := b.connect(t, w)
	g, err := postgres.NewGroupService(b.db.DB).CreateGroup(ctx, w.program.ID, 0, ledger.GroupInput{Name: ledger.Some("VIP"),
		CommissionRate: ledger.Some(decimal.NewFromInt(50)), HoldDays: ledger.Some[int64](2)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.NewProgramPartnerService(b.db.DB, nil, nil).ChangePartner(ctx, w.program.ID, w.partnerID, 0,
		ledger.PartnerChange{GroupID: g.ID}); err != nil {
		t.Fatal(err)
	}
	click := b.MustClick(t, w, w.partnerID)
	ev := stripetest.CheckoutCompleted(acct).Set("metadata.svc_click_id", click)
	wantResult(t, b.deliver(t, ev), ledger.EventProcessed, "recorded")
	s := b.sale(t, ev.Get("id").(string))
	if s.CommissionID == nil {
		t.Fatalf("sale = %+v", s)
	}
	var amount int64
	var policy *int64
	if err := b.db.QueryRow(`SELECT amount_minor, policy_id FROM commissions WHERE id = $1`, *s.CommissionID).Scan(&amount, &policy); err != nil {
		t.Fatal(err)
	}
	if amount != 2450 || policy == nil || *policy != *g.PolicyID {
		t.Fatalf("commission %d, policy %v; want 50%% of 4900 by policy %d", amount, policy, *g.PolicyID)
	}
}
