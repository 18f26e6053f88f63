package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
)

func TestApproveDue(t *testing.T) {
	b := setupLedger(t, "0")
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "10", "USD", 0, 30))
	_, first := b.sold(t, w, 10000)

	if n, err := b.balances.ApproveDue(ctx, 100); err != nil || n != 0 {
		t.Fatalf("ApproveDue during the hold: %d, %v", n, err)
	}
	b.clock.Add(30*24*time.Hour - time.Second)
	if n, _ := b.balances.ApproveDue(ctx, 100); n != 0 {
		t.Fatal("approved a second before the hold ended")
	}
	b.clock.Add(time.Second)
	if n, err := b.balances.ApproveDue(ctx, 100); err != nil || n != 1 {
		t.Fatalf("ApproveDue at the end of the hold: %d, %v", n, err)
	}
	c := b.MustCommission(t, first)
	if c.Status != ledger.CommissionApproved || !c.Credited || c.ApprovedAt == nil || !c.ApprovedAt.Equal(b.clock.Now()) {
		t.Fatalf("commission = %+v", c)
	}
	if got := b.balance(t, w.partnerID, ledger.USD); got != 1000 {
		t.Fatalf("balance %d, want 1000", got)
	}
	if n, _ := b.balances.ApproveDue(ctx, 100); n != 0 {
		t.Fatal("approved twice")
	}

	t.Run("ConcurrentApproversCreditOnce", func(t *testing.T) {
		for i := 0; i < 20; i++ {
			b.sold(t, w, 1000) // 100 each
		}
		b.clock.Add(31 * 24 * time.Hour)
		var wg sync.WaitGroup
		var mu sync.Mutex
		total := 0
		for i := 0; i < 5; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, err := b.balances.ApproveDue(ctx, 7)
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				total += n
				mu.Unlock()
			}()
		}
		wg.Wait()
		for {
			n, err := b.balances.ApproveDue(ctx, 7)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
			total += n
		}
		if total != 20 {
			t.Fatalf("%d approvals, want 20", total)
		}
		if n := b.count(t, `SELECT count(*) FROM balance_entries WHERE kind = 'credit'`); n != 21 {
			t.Fatalf("%d credit entries, want 21", n)
		}
		if got := b.balance(t, w.partnerID, ledger.USD); got != 1000+20*100 {
			t.Fatalf("balance %d", got)
		}
	})
}

func TestCommissionLifecycle(t *testing.T) {
	b := setupLedger(t, "0")
	ctx := context.Background()
	w := b.MustWorld(t, programInput("fixed", "7.5", "EUR", 0, 30))
	eur := ledger.EUR

	t.Run("ApproveThenMarkPaid", func(t *testing.T) {
		_, cid := b.sold(t, w, 100)
		for i := 0; i < 2; i++ { // the second call changes nothing
			c, err := b.balances.ApproveCommission(ctx, cid)
			if err != nil || c.Status != ledger.CommissionApproved || !c.Credited {
				t.Fatalf("approve: %+v, %v", c, err)
			}
		}
		if got := b.balance(t, w.partnerID, eur); got != 750 {
			t.Fatalf("balance %d after approval", got)
		}
		for i := 0; i < 2; i++ {
			c, err := b.balances.MarkCommissionPaid(ctx, cid)
			if err != nil || c.Status != ledger.CommissionPaid || c.PaidAt == nil {
				t.Fatalf("mark paid: %+v, %v", c, err)
			}
		}
		if got := b.balance(t, w.partnerID, eur); got != 0 {
			t.Fatalf("balance %d after payout", got)
		}
		if c, err := b.balances.ApproveCommission(ctx, cid); err != nil || c.Status != ledger.CommissionPaid {
			t.Fatalf("approve a paid commission: %+v, %v", c, err)
		}
	})

	t.Run("MarkPaidApprovesAPendingCommission", func(t *testing.T) {
		_, cid := b.sold(t, w, 100)
		c, err := b.balances.MarkCommissionPaid(ctx, cid)
		if err != nil || c.Status != ledger.CommissionPaid || !c.Credited || c.ApprovedAt == nil {
			t.Fatalf("mark paid: %+v, %v", c, err)
		}
		var kinds []string
		if err := b.db.Select(&kinds, `SELECT kind FROM balance_entries WHERE commission_id = $1 ORDER BY id`, cid); err != nil {
			t.Fatal(err)
		}
		if len(kinds) != 2 || kinds[0] != ledger.EntryCredit || kinds[1] != ledger.EntryPayout {
			t.Fatalf("entries %v", kinds)
		}
	})

	t.Run("ErrReversed", func(t *testing.T) {
		txn, cid := b.sold(t, w, 100)
		b.refund(t, w, ledger.RefundInput{TransactionID: txn})
		for _, op := range []func(context.Context, int64) (*ledger.Commission, error){b.balances.ApproveCommission, b.balances.MarkCommissionPaid} {
			_, err := op(ctx, cid)
			assertCode(t, err, ledger.EConflict, ledger.MsgCommissionReversed)
		}
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		for _, op := range []func(context.Context, int64) (*ledger.Commission, error){
			b.balances.Commission, b.balances.ApproveCommission, b.balances.MarkCommissionPaid} {
			if _, err := op(ctx, 999999); ledger.ErrorCode(err) != ledger.ENotFound {
				t.Fatalf("err = %v", err)
			}
		}
	})
}

func TestWithdrawals(t *testing.T) {
	b := setupLedger(t, "0")
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "10", "USD", 0, 30))
	usd := ledger.USD
	_, c1 := b.approved(t, w, 10000) // 1000
	_, c2 := b.approved(t, w, 5000)  // 500
	_, c3 := b.approved(t, w, 3000)  // 300

	if _, err := b.balances.CreateWithdrawal(ctx, w.partnerID, usd, 1801); ledger.ErrorMessage(err) != ledger.MsgWithdrawalExceeds {
		t.Fatalf("withdrawal over the balance: %v", err)
	}
	if _, err := b.balances.CreateWithdrawal(ctx, 999999, usd, 1); ledger.ErrorCode(err) != ledger.ENotFound {
		t.Fatalf("unknown partner: %v", err)
	}
	w1, err := b.balances.CreateWithdrawal(ctx, w.partnerID, usd, 1500)
	if err != nil || w1.Status != ledger.WithdrawalOpen || w1.AmountMinor != 1500 {
		t.Fatalf("withdrawal: %+v, %v", w1, err)
	}
	// 1800 less 1500 open leaves 300 available.
	if _, err := b.balances.CreateWithdrawal(ctx, w.partnerID, usd, 301); ledger.ErrorMessage(err) != ledger.MsgWithdrawalExceeds {
		t.Fatalf("second withdrawal over the available balance: %v", err)
	}
	w2, err := b.balances.CreateWithdrawal(ctx, w.partnerID, usd, 300)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.balance(t, w.partnerID, usd); got != 1800 {
		t.Fatalf("open withdrawals changed the balance: %d", got)
	}

	// Paying the first covers the two oldest commissions (1000 + 500).
	for i := 0; i < 2; i++ {
		paid, err := b.balances.MarkWithdrawalPaid(ctx, w1.ID)
		if err != nil || paid.Status != ledger.WithdrawalPaid || paid.PaidAt == nil {
			t.Fatalf("mark paid: %+v, %v", paid, err)
		}
	}
	if got := b.balance(t, w.partnerID, usd); got != 300 {
		t.Fatalf("balance %d after the payout, want 300", got)
	}
	for id, want := range map[int64]string{c1: ledger.CommissionPaid, c2: ledger.CommissionPaid, c3: ledger.CommissionApproved} {
		c := b.MustCommission(t, id)
		if c.Status != want || (want == ledger.CommissionPaid) != (c.WithdrawalID != nil && *c.WithdrawalID == w1.ID) {
			t.Fatalf("commission %d = %+v, want %s", id, c, want)
		}
	}

	t.Run("ReducedOnNegativeBalance", func(t *testing.T) {
		// A partial refund of a paid-out commission (c1, 1000) deducts 400:
		// the balance falls to -100 and the open withdrawal (300) is
		// cancelled; nothing is left to pay.
		txn := b.MustCommission(t, c1).TransactionID
		res := b.refund(t, w, ledger.RefundInput{TransactionID: txn, AmountCents: 4000, RefundID: "r1"})
		if res.Status != ledger.RefundRefunded || res.DeductionMinor != 400 {
			t.Fatalf("refund = %+v", res)
		}
		if got := b.balance(t, w.partnerID, usd); got != -100 {
			t.Fatalf("balance %d, want -100", got)
		}
		got, _ := b.balances.Withdrawal(ctx, w2.ID)
		if got.Status != ledger.WithdrawalCancelled || got.AmountMinor != 0 || got.RequestedMinor != 300 {
			t.Fatalf("withdrawal = %+v", got)
		}
		_, err := b.balances.MarkWithdrawalPaid(ctx, w2.ID)
		assertCode(t, err, ledger.EConflict, ledger.MsgWithdrawalCancelled)
	})

	t.Run("LoweredToFit", func(t *testing.T) {
		_, _ = b.approved(t, w, 20000) // +2000 → 1900
		wa, err := b.balances.CreateWithdrawal(ctx, w.partnerID, usd, 1000)
		if err != nil {
			t.Fatal(err)
		}
		wb, err := b.balances.CreateWithdrawal(ctx, w.partnerID, usd, 900)
		if err != nil {
			t.Fatal(err)
		}
		txn := b.MustCommission(t, c3).TransactionID // 300 credited, not paid out
		b.refund(t, w, ledger.RefundInput{TransactionID: txn})
		// Balance 1600; the newest withdrawal is lowered from 900 to 600.
		ga, _ := b.balances.Withdrawal(ctx, wa.ID)
		gb, _ := b.balances.Withdrawal(ctx, wb.ID)
		if ga.AmountMinor != 1000 || ga.Status != ledger.WithdrawalOpen || gb.AmountMinor != 600 || gb.Status != ledger.WithdrawalOpen {
			t.Fatalf("withdrawals %+v, %+v", ga, gb)
		}
	})

	t.Run("Balances", func(t *testing.T) {
		eurWorld := b.MustWorld(t, programInput("fixed", "2", "EUR", 0, 30))
		if _, err := b.db.Exec(`UPDATE enrollments SET partner_id = $1 WHERE program_id = $2`, w.partnerID, eurWorld.program.ID); err != nil {
			t.Fatal(err)
		}
		eurWorld.partnerID = w.partnerID
		b.approved(t, eurWorld, 100)
		got, err := b.balances.Balances(ctx, w.partnerID)
		if err != nil || len(got) != 2 || got[0].Currency != ledger.EUR || got[0].AmountMinor != 200 ||
			got[1].Currency != usd || got[1].AmountMinor != 1600 {
			t.Fatalf("balances = %+v, %v", got, err)
		}
		if _, err := b.balances.Balances(ctx, 999999); ledger.ErrorCode(err) != ledger.ENotFound {
			t.Fatalf("unknown partner: %v", err)
		}
	})
}

// TestCommissionPaidByHandIsNeverPaidTwice: marking a commission paid pays
// at most what the balance holds and lowers the open withdrawals to fit,
// so a withdrawal and a commission paid by hand never pay the same money
// twice.
func TestCommissionPaidByHandIsNeverPaidTwice(t *testing.T) {
	b := setupLedger(t, "0")
	ctx := context.Background()
	usd := ledger.USD

	t.Run("OpenWithdrawalLoweredToFit", func(t *testing.T) {
		w := b.MustWorld(t, programInput("percent", "10", "USD", 0, 30))
		_, c1 := b.approved(t, w, 10000) // 1000
		_, _ = b.approved(t, w, 10000)   // 1000
		wd, err := b.balances.CreateWithdrawal(ctx, w.partnerID, usd, 1500)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.balances.MarkCommissionPaid(ctx, c1); err != nil {
			t.Fatal(err)
		}
		got, _ := b.balances.Withdrawal(ctx, wd.ID)
		if got.Status != ledger.WithdrawalOpen || got.AmountMinor != 1000 {
			t.Fatalf("withdrawal after the commission paid by hand = %+v, want open for 1000", got)
		}
		if _, err := b.balances.MarkWithdrawalPaid(ctx, wd.ID); err != nil {
			t.Fatal(err)
		}
		if bal := b.balance(t, w.partnerID, usd); bal != 0 {
			t.Fatalf("balance %d after paying 2000 earned, want 0", bal)
		}
	})

	t.Run("WithdrawalCancelledWhenNothingIsLeft", func(t *testing.T) {
		w := b.MustWorld(t, programInput("percent", "10", "USD", 0, 30))
		_, cid := b.approved(t, w, 10000) // 1000
		wd, err := b.balances.CreateWithdrawal(ctx, w.partnerID, usd, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.balances.MarkCommissionPaid(ctx, cid); err != nil {
			t.Fatal(err)
		}
		_, err = b.balances.MarkWithdrawalPaid(ctx, wd.ID)
		assertCode(t, err, ledger.EConflict, ledger.MsgWithdrawalCancelled)
		if bal := b.balance(t, w.partnerID, usd); bal != 0 {
			t.Fatalf("balance %d, want 0", bal)
		}
	})

	t.Run("PartlyPaidByAWithdrawal", func(t *testing.T) {
		// A paid withdrawal of 1500 covers the first commission whole and
		// 500 of the second, which stays approved: paying it by hand pays
		// the 500 left, not its 1000.
		w := b.MustWorld(t, programInput("percent", "10", "USD", 0, 30))
		_, _ = b.approved(t, w, 10000)
		_, c2 := b.approved(t, w, 10000)
		wd, err := b.balances.CreateWithdrawal(ctx, w.partnerID, usd, 1500)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.balances.MarkWithdrawalPaid(ctx, wd.ID); err != nil {
			t.Fatal(err)
		}
		c, err := b.balances.MarkCommissionPaid(ctx, c2)
		if err != nil || c.Status != ledger.CommissionPaid {
			t.Fatalf("mark paid: %+v, %v", c, err)
		}
		if bal := b.balance(t, w.partnerID, usd); bal != 0 {
			t.Fatalf("balance %d after paying 2000 earned, want 0", bal)
		}
	})
}
