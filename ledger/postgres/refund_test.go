package postgres_test

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

var txnSeq atomic.Int64

// sold records a sale of amount on a fresh click and returns its
// transaction id and commission.
func (b *ledgerBundle) sold(tb testing.TB, w saleWorld, amount int64) (string, int64) {
	tb.Helper()
	txn := "txn_" + strconv.FormatInt(txnSeq.Add(1), 10)
	res := b.MustSale(tb, w, sale{txn: txn, clickID: b.MustClick(tb, w, w.partnerID), amount: amount})
	return txn, *res.CommissionID
}

// approved records a sale whose commission is approved (credited).
func (b *ledgerBundle) approved(tb testing.TB, w saleWorld, amount int64) (string, int64) {
	tb.Helper()
	txn, cid := b.sold(tb, w, amount)
	if _, err := b.balances.ApproveCommission(context.Background(), cid); err != nil {
		tb.Fatal(err)
	}
	return txn, cid
}

func (b *ledgerBundle) refund(tb testing.TB, w saleWorld, in ledger.RefundInput) *ledger.RefundResult {
	tb.Helper()
	in.ProgramID, in.Source = w.program.ID, ledger.SourceAPI
	res, err := b.refunds.ApplyRefund(context.Background(), in)
	if err != nil {
		tb.Fatalf("ApplyRefund(%+v): %v", in, err)
	}
	return res
}

func assertRefund(tb testing.TB, got *ledger.RefundResult, want ledger.RefundResult) {
	tb.Helper()
	if *got != want {
		tb.Fatalf("refund = %+v, want %+v", *got, want)
	}
}

// notifications returns the notifications the outbox holds, in order.
func (b *ledgerBundle) notifications(tb testing.TB) []ledger.Notification {
	tb.Helper()
	rows, err := b.db.Query(`SELECT task_type, queue, payload FROM outbox ORDER BY id`)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	var out []ledger.Notification
	for rows.Next() {
		var typ, queue string
		var payload []byte
		var n ledger.Notification
		if err := rows.Scan(&typ, &queue, &payload); err != nil {
			tb.Fatal(err)
		}
		if typ != tasks.TypeNotificationDeliver || queue != tasks.QueueNotifications {
			tb.Fatalf("outbox row %s on %s", typ, queue)
		}
		if err := json.Unmarshal(payload, &n); err != nil {
			tb.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// TestRefundStateTable has one subtest per row of the spec's table
// "Commission, on a refund call".
func TestRefundStateTable(t *testing.T) {
	b := setupLedger(t, "0")
	w := b.MustWorld(t, programInput("percent", "30", "USD", 0, 30))
	usd := ledger.USD

	t.Run("PendingFullReversed", func(t *testing.T) {
		txn, cid := b.sold(t, w, 10000)
		res := b.refund(t, w, ledger.RefundInput{TransactionID: txn, AmountCents: 10000, RefundID: "re_1", Reason: "refund"})
		assertRefund(t, res, ledger.RefundResult{Status: ledger.RefundReversed, CommissionID: cid, DeductionMinor: 3000, Currency: usd})
		c := b.MustCommission(t, cid)
		if c.Status != ledger.CommissionReversed || c.AmountMinor != 0 || c.ReversedAt == nil || c.Reason != "refund" {
			t.Fatalf("commission = %+v", c)
		}
		if n := b.count(t, `SELECT count(*) FROM balance_entries WHERE commission_id = $1`, cid); n != 0 {
			t.Fatal("a pending commission touched the balance")
		}
	})

	t.Run("ApprovedFullReversedWithDeduction", func(t *testing.T) {
		txn, cid := b.approved(t, w, 10000)
		before := b.balance(t, w.partnerID, usd)
		res := b.refund(t, w, ledger.RefundInput{TransactionID: txn, Reason: "chargeback"})
		assertRefund(t, res, ledger.RefundResult{Status: ledger.RefundReversed, CommissionID: cid, DeductionMinor: 3000, Currency: usd})
		if got := b.balance(t, w.partnerID, usd); got != before-3000 {
			t.Fatalf("balance %d, want %d", got, before-3000)
		}
		var kind string
		var amount int64
		b.db.QueryRow(`SELECT kind, amount_minor FROM balance_entries WHERE commission_id = $1 AND refund_id IS NOT NULL`, cid).Scan(&kind, &amount)
		if kind != ledger.EntryDeduction || amount != -3000 {
			t.Fatalf("entry %s %d", kind, amount)
		}
		if c := b.MustCommission(t, cid); c.Status != ledger.CommissionReversed || c.Reason != "chargeback" {
			t.Fatalf("commission = %+v", c)
		}
	})

	t.Run("PendingPartialRefundedCancelledWhole", func(t *testing.T) {
		txn, cid := b.sold(t, w, 10000)
		res := b.refund(t, w, ledger.RefundInput{TransactionID: txn, AmountCents: 2500, RefundID: "re_p"})
		assertRefund(t, res, ledger.RefundResult{Status: ledger.RefundRefunded, CommissionID: cid, DeductionMinor: 750, Currency: usd})
		c := b.MustCommission(t, cid)
		if c.Status != ledger.CommissionRefunded || c.AmountMinor != 0 || c.Credited {
			t.Fatalf("commission = %+v", c)
		}
		// Past its hold, a cancelled commission is never approved or paid.
		if _, err := b.balances.ApproveCommission(context.Background(), cid); ledger.ErrorCode(err) != ledger.EConflict {
			t.Fatalf("approve a cancelled commission: %v", err)
		}
		if n := b.count(t, `SELECT count(*) FROM balance_entries WHERE commission_id = $1`, cid); n != 0 {
			t.Fatal("a cancelled commission touched the balance")
		}
	})

	t.Run("ApprovedPartialReducedByFraction", func(t *testing.T) {
		txn, cid := b.approved(t, w, 3333)
		before := b.balance(t, w.partnerID, usd)
		res := b.refund(t, w, ledger.RefundInput{TransactionID: txn, AmountCents: 1111, RefundID: "re_a", Reason: "refund"})
		// 30% of 33.33 is 10.00; a third refunded takes 3.33.
		assertRefund(t, res, ledger.RefundResult{Status: ledger.RefundRefunded, CommissionID: cid, DeductionMinor: 333, Currency: usd})
		if c := b.MustCommission(t, cid); c.Status != ledger.CommissionRefunded || c.AmountMinor != 667 || c.OriginalMinor != 1000 || !c.Credited {
			t.Fatalf("commission = %+v", c)
		}
		if got := b.balance(t, w.partnerID, usd); got != before-333 {
			t.Fatalf("balance %d, want %d", got, before-333)
		}
	})

	t.Run("ReversedSkipped", func(t *testing.T) {
		txn, cid := b.sold(t, w, 500)
		b.refund(t, w, ledger.RefundInput{TransactionID: txn})
		for _, in := range []ledger.RefundInput{
			{TransactionID: txn},
			{TransactionID: txn, AmountCents: 100, RefundID: "re_new"},
		} {
			res := b.refund(t, w, in)
			assertRefund(t, res, ledger.RefundResult{Status: ledger.RefundSkipped, CommissionID: cid, SkipReason: ledger.SkipAlreadyReverse})
		}
		if n := b.count(t, `SELECT count(*) FROM refunds WHERE commission_id = $1`, cid); n != 1 {
			t.Fatalf("%d refunds recorded", n)
		}
	})

	t.Run("SameRefundIDSkipped", func(t *testing.T) {
		txn, cid := b.approved(t, w, 10000)
		before := b.balance(t, w.partnerID, usd)
		first := b.refund(t, w, ledger.RefundInput{TransactionID: txn, AmountCents: 1000, RefundID: "re_same"})
		// A retry with the same id skips, whatever its amount.
		for _, amount := range []int64{1000, 2000} {
			res := b.refund(t, w, ledger.RefundInput{TransactionID: txn, AmountCents: amount, RefundID: "re_same"})
			assertRefund(t, res, ledger.RefundResult{Status: ledger.RefundSkipped, CommissionID: cid, SkipReason: ledger.SkipRefundID})
		}
		// Another id with the same amount is a second partial refund.
		second := b.refund(t, w, ledger.RefundInput{TransactionID: txn, AmountCents: 1000, RefundID: "re_other"})
		if first.DeductionMinor != 300 || second.DeductionMinor != 300 || second.Status != ledger.RefundRefunded {
			t.Fatalf("refunds = %+v, %+v", first, second)
		}
		if got := b.balance(t, w.partnerID, usd); got != before-600 {
			t.Fatalf("balance %d, want %d", got, before-600)
		}
	})

	t.Run("SameAmountWithoutRefundIDSkipped", func(t *testing.T) {
		txn, cid := b.approved(t, w, 10000)
		b.refund(t, w, ledger.RefundInput{TransactionID: txn, AmountCents: 1500})
		res := b.refund(t, w, ledger.RefundInput{TransactionID: txn, AmountCents: 1500})
		assertRefund(t, res, ledger.RefundResult{Status: ledger.RefundSkipped, CommissionID: cid, SkipReason: ledger.SkipSameAmount})
		var refunded int64
		b.db.QueryRow(`SELECT refunded_cents FROM sales WHERE processor_event_id = $1`, txn).Scan(&refunded)
		if refunded != 1500 {
			t.Fatalf("refunded %d, want 1500", refunded)
		}
	})
}

func TestRefundAmounts(t *testing.T) {
	b := setupLedger(t, "0")
	w := b.MustWorld(t, programInput("percent", "30", "EUR", 0, 30))
	eur := ledger.EUR

	t.Run("AddUpCapAndRefundTheRest", func(t *testing.T) {
		txn, cid := b.approved(t, w, 1001) // commission 300.3 → 3.00 EUR
		steps := []struct {
			in   ledger.RefundInput
			want ledger.RefundResult
		}{
			{ledger.RefundInput{TransactionID: txn, AmountCents: 333, RefundID: "a"},
				ledger.RefundResult{Status: ledger.RefundRefunded, CommissionID: cid, DeductionMinor: 100, Currency: eur}}, // 99.9
			{ledger.RefundInput{TransactionID: txn, AmountCents: 333, RefundID: "b"},
				ledger.RefundResult{Status: ledger.RefundRefunded, CommissionID: cid, DeductionMinor: 100, Currency: eur}}, // 199.8 → 200
			// 335 left; 400 asked: capped, and full coverage takes all that is left.
			{ledger.RefundInput{TransactionID: txn, AmountCents: 400, RefundID: "c"},
				ledger.RefundResult{Status: ledger.RefundReversed, CommissionID: cid, DeductionMinor: 100, Currency: eur}},
		}
		for _, s := range steps {
			assertRefund(t, b.refund(t, w, s.in), s.want)
		}
		var refunded int64
		b.db.QueryRow(`SELECT refunded_cents FROM sales WHERE processor_event_id = $1`, txn).Scan(&refunded)
		var sumAmount, sumDeduction int64
		b.db.QueryRow(`SELECT SUM(amount_cents), SUM(deduction_minor) FROM refunds WHERE commission_id = $1`, cid).Scan(&sumAmount, &sumDeduction)
		if refunded != 1001 || sumAmount != 1001 || sumDeduction != 300 {
			t.Fatalf("refunded %d, refund rows %d, deductions %d", refunded, sumAmount, sumDeduction)
		}
		if n := b.count(t, `SELECT COALESCE(SUM(amount_minor), 0) FROM balance_entries WHERE commission_id = $1`, cid); n != 0 {
			t.Fatalf("commission's net balance %d, want 0", n)
		}
	})

	t.Run("OmittedRefundsTheRestAndIgnoresRefundID", func(t *testing.T) {
		txn, cid := b.approved(t, w, 10000)
		b.refund(t, w, ledger.RefundInput{TransactionID: txn, AmountCents: 2500, RefundID: "x"})
		// The handler drops a refund_id sent with no amount; the reversal
		// ignores it either way.
		res := b.refund(t, w, ledger.RefundInput{TransactionID: txn})
		assertRefund(t, res, ledger.RefundResult{Status: ledger.RefundReversed, CommissionID: cid, DeductionMinor: 2250, Currency: eur})
		var lastID *string
		b.db.QueryRow(`SELECT refund_id FROM refunds WHERE commission_id = $1 ORDER BY id DESC LIMIT 1`, cid).Scan(&lastID)
		if lastID != nil {
			t.Fatalf("refund_id %q stored for an all-that-is-left refund", *lastID)
		}
	})

	t.Run("ReasonRecorded", func(t *testing.T) {
		txn, cid := b.sold(t, w, 1000)
		b.refund(t, w, ledger.RefundInput{TransactionID: txn, AmountCents: 100, Reason: "Customer changed their mind"})
		b.refund(t, w, ledger.RefundInput{TransactionID: txn, AmountCents: 200})
		if c := b.MustCommission(t, cid); c.Reason != "Customer changed their mind" {
			t.Fatalf("reason %q", c.Reason)
		}
	})

	t.Run("NoCommission", func(t *testing.T) {
		once := b.MustWorld(t, programInput("fixed", "5", "EUR", 0, 30))
		b.MustCustomerKey(t, once, "repeat")
		b.MustSale(t, once, sale{txn: "nc_first", customerKey: "repeat", amount: 1000})
		res, err := b.sales.RecordSale(context.Background(), sale{txn: "nc_second", customerKey: "repeat", amount: 1000}.request(once.program.ID))
		if err != nil || res.CommissionID != nil {
			t.Fatalf("second sale: %+v %v", res, err)
		}
		want := ledger.RefundResult{Status: ledger.RefundNoCommission, Message: ledger.MsgRefundNoCommission}
		assertRefund(t, b.refund(t, once, ledger.RefundInput{TransactionID: "nc_second", AmountCents: 400}), want)
		assertRefund(t, b.refund(t, once, ledger.RefundInput{TransactionID: "nc_second", AmountCents: 400}), want)
		var refunded int64
		b.db.QueryRow(`SELECT refunded_cents FROM sales WHERE processor_event_id = 'nc_second'`).Scan(&refunded)
		if refunded != 400 {
			t.Fatalf("refunded %d, want 400 (the retry is not applied)", refunded)
		}
	})

	t.Run("ErrSaleNotFound", func(t *testing.T) {
		other := b.MustWorld(t, programInput("percent", "10", "EUR", 0, 30))
		txn, _ := b.sold(t, other, 1000)
		for _, id := range []string{"txn_unknown", txn} { // txn is another program's sale
			_, err := b.refunds.ApplyRefund(context.Background(), ledger.RefundInput{ProgramID: w.program.ID, TransactionID: id})
			assertCode(t, err, ledger.ENotFound, ledger.MsgSaleNotFound)
		}
	})
}

func TestRefundNotifications(t *testing.T) {
	b := setupLedger(t, "0")
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "50", "VND", 0, 30))
	vnd := ledger.VND

	// Pending, partly refunded: the partner hears of it; nothing was paid
	// out, so the advertiser does not.
	txn, cid := b.sold(t, w, 100000)
	b.refund(t, w, ledger.RefundInput{TransactionID: txn, AmountCents: 1000, Reason: "refund"})
	ns := b.notifications(t)
	if len(ns) != 1 || *ns[0].PartnerID != w.partnerID || ns[0].Kind != ledger.NoticeCommissionRefunded || ns[0].Data["reason"] != "refund" {
		t.Fatalf("notifications = %+v", ns)
	}

	// Paid out, then refunded: the balance goes negative, the open
	// withdrawal is cancelled, and the advertiser is asked to review.
	txn, cid = b.approved(t, w, 100000) // 50000 VND credited
	if _, err := b.balances.MarkCommissionPaid(ctx, cid); err != nil {
		t.Fatal(err)
	}
	txn2, _ := b.approved(t, w, 20000) // 10000 VND credited
	wd, err := b.balances.CreateWithdrawal(ctx, w.partnerID, vnd, 8000)
	if err != nil {
		t.Fatal(err)
	}
	res := b.refund(t, w, ledger.RefundInput{TransactionID: txn, Reason: "chargeback"})
	assertRefund(t, res, ledger.RefundResult{Status: ledger.RefundReversed, CommissionID: cid, DeductionMinor: 50000, Currency: vnd})
	if got := b.balance(t, w.partnerID, vnd); got != -40000 {
		t.Fatalf("balance %d, want -40000 (10000 credited, 50000 deducted after a 50000 payout)", got)
	}
	if got, _ := b.balances.Withdrawal(ctx, wd.ID); got.Status != ledger.WithdrawalCancelled || got.AmountMinor != 0 || got.RequestedMinor != 8000 {
		t.Fatalf("withdrawal = %+v", got)
	}
	ns = b.notifications(t)
	if len(ns) != 3 || ns[1].Kind != ledger.NoticeCommissionReversed || ns[2].Kind != ledger.NoticeManualReview ||
		ns[2].WorkspaceID == nil || *ns[2].WorkspaceID != b.workspaceID || ns[2].PartnerID != nil {
		t.Fatalf("notifications = %+v", ns)
	}
	// A skipped refund notifies nobody.
	b.refund(t, w, ledger.RefundInput{TransactionID: txn})
	b.refund(t, w, ledger.RefundInput{TransactionID: txn2, AmountCents: 5})
	b.refund(t, w, ledger.RefundInput{TransactionID: txn2, AmountCents: 5})
	if got := len(b.notifications(t)); got != 4 {
		t.Fatalf("%d notifications, want 4", got)
	}
}

// TestConcurrentRefunds sends 50 refunds of one sale at once and checks
// the state a serial order gives: the amounts add up to the sale amount
// and stop there, each refund id applies once, the commission is deducted
// exactly once in total.
func TestConcurrentRefunds(t *testing.T) {
	b := setupLedger(t, "0")
	w := b.MustWorld(t, programInput("percent", "30", "USD", 0, 30))

	run := func(t *testing.T, inputs []ledger.RefundInput) []*ledger.RefundResult {
		var wg sync.WaitGroup
		out := make([]*ledger.RefundResult, len(inputs))
		start := make(chan struct{})
		for i, in := range inputs {
			wg.Add(1)
			go func(i int, in ledger.RefundInput) {
				defer wg.Done()
				<-start
				in.ProgramID, in.Source = w.program.ID, ledger.SourceAPI
				res, err := b.refunds.ApplyRefund(context.Background(), in)
				if err != nil {
					t.Errorf("refund %d: %v", i, err)
					return
				}
				out[i] = res
			}(i, in)
		}
		close(start)
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		return out
	}
	statuses := func(rs []*ledger.RefundResult) map[string]int {
		m := map[string]int{}
		for _, r := range rs {
			m[r.Status+"/"+r.SkipReason]++
		}
		return m
	}

	t.Run("DistinctIDsStopAtTheSaleAmount", func(t *testing.T) {
		txn, cid := b.approved(t, w, 10000) // commission 3000, credited
		inputs := make([]ledger.RefundInput, 50)
		for i := range inputs {
			inputs[i] = ledger.RefundInput{TransactionID: txn, AmountCents: 300, RefundID: "re_" + strconv.Itoa(i)}
		}
		got := statuses(run(t, inputs))
		// 33 × 300 = 9900, the 34th covers the last 100, 16 find it reversed.
		want := map[string]int{"refunded/": 33, "reversed/": 1, "skipped/" + ledger.SkipAlreadyReverse: 16}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("outcomes %v, want %v", got, want)
			}
		}
		var refunded, deducted, rows int64
		b.db.QueryRow(`SELECT refunded_cents FROM sales WHERE processor_event_id = $1`, txn).Scan(&refunded)
		b.db.QueryRow(`SELECT count(*), -SUM(e.amount_minor) FROM balance_entries e WHERE e.commission_id = $1 AND e.kind = 'deduction'`, cid).Scan(&rows, &deducted)
		if refunded != 10000 || deducted != 3000 || rows != 34 {
			t.Fatalf("refunded %d, deducted %d in %d entries", refunded, deducted, rows)
		}
		if c := b.MustCommission(t, cid); c.Status != ledger.CommissionReversed || c.AmountMinor != 0 {
			t.Fatalf("commission = %+v", c)
		}
		if n := b.count(t, `SELECT count(*) FROM outbox`); n != 34 {
			t.Fatalf("%d notifications, want 34", n)
		}
	})

	t.Run("OneRefundIDAppliesOnce", func(t *testing.T) {
		txn, cid := b.approved(t, w, 10000)
		inputs := make([]ledger.RefundInput, 50)
		for i := range inputs {
			inputs[i] = ledger.RefundInput{TransactionID: txn, AmountCents: 1000, RefundID: "re_once"}
		}
		got := statuses(run(t, inputs))
		if got["refunded/"] != 1 || got["skipped/"+ledger.SkipRefundID] != 49 {
			t.Fatalf("outcomes %v", got)
		}
		if c := b.MustCommission(t, cid); c.AmountMinor != 2700 {
			t.Fatalf("commission = %+v", c)
		}
	})

	t.Run("SameAmountWithoutIDAppliesOnce", func(t *testing.T) {
		txn, cid := b.approved(t, w, 10000)
		inputs := make([]ledger.RefundInput, 50)
		for i := range inputs {
			inputs[i] = ledger.RefundInput{TransactionID: txn, AmountCents: 2000}
		}
		got := statuses(run(t, inputs))
		if got["refunded/"] != 1 || got["skipped/"+ledger.SkipSameAmount] != 49 {
			t.Fatalf("outcomes %v", got)
		}
		if c := b.MustCommission(t, cid); c.AmountMinor != 2400 {
			t.Fatalf("commission = %+v", c)
		}
	})

	t.Run("SaleWithoutCommissionStopsAtItsAmount", func(t *testing.T) {
		partial, _ := b.sold(t, w, 10000)
		full, _ := b.sold(t, w, 10000)
		b.db.MustExec(`DELETE FROM commissions WHERE sale_id IN (SELECT id FROM sales WHERE processor_event_id IN ($1, $2))`, partial, full)
		var inputs []ledger.RefundInput
		for i := 0; i < 30; i++ { // 30 × 400 for a sale of 10000: 25 fit
			inputs = append(inputs, ledger.RefundInput{TransactionID: partial, AmountCents: 400, RefundID: "re_nc_" + strconv.Itoa(i)})
		}
		for i := 0; i < 10; i++ {
			inputs = append(inputs, ledger.RefundInput{TransactionID: full})
		}
		if got := statuses(run(t, inputs)); got[ledger.RefundNoCommission+"/"] != len(inputs) {
			t.Fatalf("outcomes %v", got)
		}
		for txn, want := range map[string][2]int64{partial: {10000, 25}, full: {10000, 1}} {
			var refunded, rows, sum int64
			b.db.QueryRow(`SELECT refunded_cents FROM sales WHERE processor_event_id = $1`, txn).Scan(&refunded)
			b.db.QueryRow(`SELECT count(*), COALESCE(SUM(r.amount_cents), 0) FROM refunds r JOIN sales s ON s.id = r.sale_id
				WHERE s.processor_event_id = $1`, txn).Scan(&rows, &sum)
			if refunded != want[0] || sum != want[0] || rows != want[1] {
				t.Fatalf("%s: refunded %d, %d refunds summing to %d; want %d in %d", txn, refunded, rows, sum, want[0], want[1])
			}
		}
	})

	// Every credit and deduction of the partner adds up: three commissions
	// of 3000 credited, deductions of 3000, 300 and 600.
	if got := b.balance(t, w.partnerID, ledger.USD); got != 9000-3000-300-600 {
		t.Fatalf("balance %d", got)
	}
}
