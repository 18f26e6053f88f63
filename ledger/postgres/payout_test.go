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

// programBalance is a partner's approved balance in a program.
func (b *ledgerBundle) programBalance(tb testing.TB, partnerID, programID int64) int64 {
	tb.Helper()
	var sum int64
	if err := b.db.QueryRow(`SELECT COALESCE(SUM(amount_minor), 0) FROM balance_entries WHERE partner_id = $1 AND program_id = $2`,
		partnerID, programID).Scan(&sum); err != nil {
		tb.Fatal(err)
	}
	return sum
}

// sameWorld is a second program of the bundle's workspace with w's
// partner enrolled and a link of its own.
func (b *ledgerBundle) sameWorld(tb testing.TB, w saleWorld, code string) saleWorld {
	tb.Helper()
	ctx := context.Background()
	p, err := b.programs.CreateProgram(ctx, b.workspaceID, programInput("percent", "10", "USD", 0, 30))
	if err != nil {
		tb.Fatal(err)
	}
	var email string
	b.db.QueryRow(`SELECT email FROM partners WHERE id = $1`, w.partnerID).Scan(&email)
	partner, err := b.partners.EnrollPartner(ctx, p.ID, email, "Pat")
	if err != nil || partner.ID != w.partnerID {
		tb.Fatalf("enroll: %+v, %v", partner, err)
	}
	link, err := b.partners.CreateLink(ctx, p.ID, partner.ID, code, true)
	if err != nil {
		tb.Fatal(err)
	}
	return saleWorld{program: p, partnerID: partner.ID, linkID: link.ID}
}

// TestWithdrawalPaidNamesPrograms: an operator withdrawal paid out of a
// partner's balance in two programs writes one payout entry per program
// (the program credited first first, never more than a program holds),
// so each program's balance, which brand payouts read, stays right.
func TestWithdrawalPaidNamesPrograms(t *testing.T) {
	b := setupLedger(t, "0")
	ctx := context.Background()
	w1 := b.MustWorld(t, programInput("percent", "10", "USD", 0, 30))
	w2 := b.sameWorld(t, w1, "pat-second")
	b.approved(t, w1, 5000) // 500 in program 1
	b.approved(t, w2, 8000) // 800 in program 2
	wd, err := b.balances.CreateWithdrawal(ctx, w1.partnerID, ledger.USD, 700)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.balances.MarkWithdrawalPaid(ctx, wd.ID); err != nil {
		t.Fatal(err)
	}
	if got := b.count(t, `SELECT count(*) FROM balance_entries WHERE withdrawal_id = $1 AND program_id IS NOT NULL`, wd.ID); got != 2 {
		t.Fatalf("%d payout entries naming a program, want 2", got)
	}
	if p1, p2 := b.programBalance(t, w1.partnerID, w1.program.ID), b.programBalance(t, w1.partnerID, w2.program.ID); p1 != 0 || p2 != 600 {
		t.Fatalf("program balances %d and %d, want 0 and 600", p1, p2)
	}
	if got := b.balance(t, w1.partnerID, ledger.USD); got != 600 {
		t.Fatalf("balance %d, want 600", got)
	}

	// A brand run of each program pays what the program still owes.
	svc := postgres.NewPayoutService(b.db.DB, nil, discard)
	run, err := svc.CreatePayouts(ctx, w2.program.ID, nil, 0)
	if err != nil || len(run.Created) != 0 || len(run.Skipped) != 1 || run.Skipped[0].Reason != ledger.PayoutSkipBelowMinimum {
		t.Fatalf("run below the minimum: %+v, %v", run, err)
	}
	b.db.Exec(`UPDATE programs SET minimum_payout = 0`)
	for _, p := range []int64{w1.program.ID, w2.program.ID} {
		if _, err := svc.CreatePayouts(ctx, p, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	var paid int64
	b.db.QueryRow(`SELECT COALESCE(SUM(amount_minor), 0) FROM payouts WHERE partner_id = $1`, w1.partnerID).Scan(&paid)
	if got := b.balance(t, w1.partnerID, ledger.USD); paid != 600 || got != 0 {
		t.Fatalf("payouts %d, balance %d; want 600 and 0", paid, got)
	}
}

// TestPayoutsSerialise: brand runs and partner requests for one partner
// at once make one payout of the whole balance, and an open withdrawal is
// lowered to what the payout left.
func TestPayoutsSerialise(t *testing.T) {
	b := setupLedger(t, "0")
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "10", "USD", 0, 30))
	b.approved(t, w, 60000) // 60.00
	wd, err := b.balances.CreateWithdrawal(ctx, w.partnerID, ledger.USD, 1000)
	if err != nil {
		t.Fatal(err)
	}
	svc := postgres.NewPayoutService(b.db.DB, nil, discard)
	var mu sync.Mutex
	made := 0
	var wg sync.WaitGroup
	for i := 0; i < 12; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if i%2 == 0 {
				run, err := svc.CreatePayouts(ctx, w.program.ID, nil, 0)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				made += len(run.Created)
				mu.Unlock()
				return
			}
			_, err := svc.RequestPayout(ctx, ledger.PayoutRequest{PartnerID: w.partnerID, ProgramID: w.program.ID})
			switch ledger.ErrorCode(err) {
			case "":
				mu.Lock()
				made++
				mu.Unlock()
			case ledger.EConflict:
			default:
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	if made != 1 || b.count(t, `SELECT count(*) FROM payouts`) != 1 {
		t.Fatalf("%d payouts made", made)
	}
	if got := b.programBalance(t, w.partnerID, w.program.ID); got != 0 {
		t.Fatalf("balance %d after the payout", got)
	}
	if got, _ := b.balances.Withdrawal(ctx, wd.ID); got.Status != ledger.WithdrawalCancelled {
		t.Fatalf("open withdrawal after the payout took the balance: %+v", got)
	}
}

// TestPartialPayoutsPayACommissionOut: a commission paid in two partial
// payouts a partner asked for is paid out by the second: what the first
// paid beyond whole commissions carries over.
func TestPartialPayoutsPayACommissionOut(t *testing.T) {
	b := setupLedger(t, "0")
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "10", "USD", 0, 30))
	b.approved(t, w, 60000) // 60.00
	if _, err := b.db.Exec(`UPDATE programs SET minimum_payout = 0 WHERE id = $1`, w.program.ID); err != nil {
		t.Fatal(err)
	}
	svc := postgres.NewPayoutService(b.db.DB, nil, discard)
	var payouts []int64
	for _, major := range []string{"25", "35"} {
		amount := decimal.RequireFromString(major)
		p, err := svc.RequestPayout(ctx, ledger.PayoutRequest{PartnerID: w.partnerID, ProgramID: w.program.ID, Amount: &amount})
		if err != nil {
			t.Fatal(err)
		}
		payouts = append(payouts, p.ID)
	}
	paid := func() string {
		var status string
		var payout *int64
		if err := b.db.QueryRow(`SELECT status, payout_id FROM commissions WHERE partner_id = $1`, w.partnerID).Scan(&status, &payout); err != nil {
			t.Fatal(err)
		}
		if payout != nil {
			status += " by " + strconv.FormatInt(*payout, 10)
		}
		return status
	}
	if _, err := svc.MarkPayout(ctx, w.program.ID, payouts[0], ledger.PayoutPaid, "REF-1", 0); err != nil {
		t.Fatal(err)
	}
	if got := paid(); got != "approved" {
		t.Fatalf("after 25.00 of 60.00: %s", got)
	}
	if _, err := svc.MarkPayout(ctx, w.program.ID, payouts[1], ledger.PayoutPaid, "REF-2", 0); err != nil {
		t.Fatal(err)
	}
	if got, want := paid(), "paid by "+strconv.FormatInt(payouts[1], 10); got != want {
		t.Fatalf("after 60.00 of 60.00: %s, want %s", got, want)
	}
}

// TestCommissionPaidByHandDuringAPayout: an operator marking paid a
// commission whose money a pending payout of its program already holds
// takes nothing more, least of all from the partner's other program.
func TestCommissionPaidByHandDuringAPayout(t *testing.T) {
	b := setupLedger(t, "0")
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "10", "USD", 0, 30))
	second := b.sameWorld(t, w, "second-program")
	_, cid := b.approved(t, w, 60000) // 60.00 in the first program
	b.approved(t, second, 40000)      // 40.00 in the second
	if _, err := postgres.NewPayoutService(b.db.DB, nil, discard).CreatePayouts(ctx, w.program.ID, nil, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := b.balances.MarkCommissionPaid(ctx, cid); err != nil {
		t.Fatal(err)
	}
	if got := b.programBalance(t, second.partnerID, second.program.ID); got != 4000 {
		t.Fatalf("the second program's balance = %d after paying the first's commission by hand, want 4000", got)
	}
	if got := b.programBalance(t, w.partnerID, w.program.ID); got != 0 {
		t.Fatalf("the first program's balance = %d, want 0", got)
	}
}
