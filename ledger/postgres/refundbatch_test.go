package postgres_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
)

// TestRefundsAppliedTogether applies five refunds as one batch of
// concurrent refunds, over two partners' balance accounts: each answers
// as it would alone (a second refund with the same refund_id sees the
// first, in the same transaction), and the balances move as the refunds
// say.
func TestRefundsAppliedTogether(t *testing.T) {
	b := setupLedger(t, "0")
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "30", "USD", 0, 30))
	w2 := b.anotherPartner(t, w)
	txnA, cidA := b.approved(t, w, 10000)
	txnB, cidB := b.sold(t, w2, 10000)
	txnC, cidC := b.approved(t, w2, 10000)
	before1, before2 := b.balance(t, w.partnerID, ledger.USD), b.balance(t, w2.partnerID, ledger.USD)
	in := func(txn, refundID string, amount int64) ledger.RefundInput {
		return ledger.RefundInput{ProgramID: w.program.ID, TransactionID: txn, RefundID: refundID, AmountCents: amount, Source: ledger.SourceAPI}
	}
	results, errs, batched := b.refunds.ApplyTogether(ctx, []ledger.RefundInput{
		in(txnA, "re_a", 10000),
		in(txnB, "re_b", 10000),
		in(txnB, "re_b", 10000),
		in(txnC, "re_c", 4000),
		in("txn_nowhere", "re_x", 0),
	})
	if batched != 5 {
		t.Fatalf("%d refunds answered by the batch, want 5", batched)
	}
	for i := 0; i < 4; i++ {
		if errs[i] != nil {
			t.Fatalf("refund %d: %v", i, errs[i])
		}
	}
	assertRefund(t, results[0], ledger.RefundResult{Status: ledger.RefundReversed, CommissionID: cidA, DeductionMinor: 3000, Currency: ledger.USD})
	assertRefund(t, results[1], ledger.RefundResult{Status: ledger.RefundReversed, CommissionID: cidB, DeductionMinor: 3000, Currency: ledger.USD})
	assertRefund(t, results[2], ledger.RefundResult{Status: ledger.RefundSkipped, CommissionID: cidB, SkipReason: ledger.SkipRefundID})
	assertRefund(t, results[3], ledger.RefundResult{Status: ledger.RefundRefunded, CommissionID: cidC, DeductionMinor: 1200, Currency: ledger.USD})
	assertCode(t, errs[4], ledger.ENotFound, ledger.MsgSaleNotFound)
	if got := b.balance(t, w.partnerID, ledger.USD); got != before1-3000 {
		t.Fatalf("first partner's balance %d, want %d", got, before1-3000)
	}
	if got := b.balance(t, w2.partnerID, ledger.USD); got != before2-1200 {
		t.Fatalf("second partner's balance %d, want %d (a pending commission deducts nothing)", got, before2-1200)
	}
	if n := b.count(t, `SELECT count(*) FROM refunds`); n != 3 {
		t.Fatalf("%d refunds stored, want 3", n)
	}
}

// TestFailedRefundBatchIsAppliedRefundByRefund: when one refund's write
// fails in the batch (here Postgres refuses its tracking log), the batch
// is rolled back and each refund applied on its own. The tracking log is
// written in the same statement as the refund, so the refund whose log
// cannot be written fails with nothing stored; the other is applied, and
// the failed one, retried once the fault is gone, is applied once.
func TestFailedRefundBatchIsAppliedRefundByRefund(t *testing.T) {
	b := setupLedger(t, "0")
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "30", "USD", 0, 30))
	txnD, cidD := b.sold(t, w, 10000)
	txnE, cidE := b.sold(t, w, 10000)
	b.db.MustExec(`
		CREATE FUNCTION refuse_log_of() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.reference = '` + txnD + `' AND NEW.event_type = 'refund' THEN RAISE EXCEPTION 'log refused'; END IF; RETURN NEW; END $$;
		CREATE TRIGGER refuse_log_of BEFORE INSERT ON tracking_logs FOR EACH ROW EXECUTE FUNCTION refuse_log_of();`)
	outboxBefore := b.count(t, `SELECT count(*) FROM outbox`)
	refundD := ledger.RefundInput{ProgramID: w.program.ID, TransactionID: txnD, Source: ledger.SourceAPI}
	results, errs, batched := b.refunds.ApplyTogether(ctx, []ledger.RefundInput{
		refundD,
		{ProgramID: w.program.ID, TransactionID: txnE, Source: ledger.SourceAPI},
	})
	if batched != 0 {
		t.Fatalf("%d refunds answered from a batch that failed", batched)
	}
	if errs[0] == nil || ledger.ErrorCode(errs[0]) != ledger.EInternal {
		t.Fatalf("refund whose tracking log was refused: %+v, %v; want an internal error", results[0], errs[0])
	}
	if errs[1] != nil {
		t.Fatalf("refund 1: %v", errs[1])
	}
	assertRefund(t, results[1], ledger.RefundResult{Status: ledger.RefundReversed, CommissionID: cidE, DeductionMinor: 3000, Currency: ledger.USD})
	for _, q := range []struct {
		desc, query string
		args        []any
		want        int
	}{
		{"refunds of the failed sale", `SELECT count(*) FROM refunds r JOIN sales s ON s.id = r.sale_id WHERE s.processor_event_id = $1`, []any{txnD}, 0},
		{"refunded cents of the failed sale", `SELECT refunded_cents FROM sales WHERE processor_event_id = $1`, []any{txnD}, 0},
		{"the failed sale's commission changed", `SELECT count(*) FROM commissions WHERE id = $1 AND status <> 'pending'`, []any{cidD}, 0},
		{"refunds stored", `SELECT count(*) FROM refunds`, nil, 1},
		{"outbox rows written (the other refund's notification)", `SELECT count(*) FROM outbox`, nil, outboxBefore + 1},
	} {
		if n := b.count(t, q.query, q.args...); n != q.want {
			t.Fatalf("%s: %d, want %d", q.desc, n, q.want)
		}
	}

	b.db.MustExec(`DROP TRIGGER refuse_log_of ON tracking_logs`)
	for i := 0; i < 2; i++ {
		res, err := b.refunds.ApplyRefund(ctx, refundD)
		if err != nil {
			t.Fatalf("retry %d: %v", i, err)
		}
		want := ledger.RefundResult{Status: ledger.RefundReversed, CommissionID: cidD, DeductionMinor: 3000, Currency: ledger.USD}
		if i == 1 {
			want = ledger.RefundResult{Status: ledger.RefundSkipped, CommissionID: cidD, SkipReason: ledger.SkipAlreadyReverse}
		}
		assertRefund(t, res, want)
	}
	if n := b.count(t, `SELECT count(*) FROM refunds`); n != 2 {
		t.Fatalf("%d refunds stored, want 2", n)
	}
}

// TestRefundBatchesOfAProgramTakeTurns: a batch of refunds first takes
// the advisory lock of each program it writes for, so that two batches of
// one program never each hold rollup rows the other wants (they did, and
// deadlocked: docs/decisions.md, "Refund batches take turns per
// program"). While another transaction holds the program's lock, a batch
// waits before it writes anything; then it goes on and answers every
// refund itself.
func TestRefundBatchesOfAProgramTakeTurns(t *testing.T) {
	b := setupLedger(t, "0")
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "30", "USD", 0, 30))
	w2 := b.anotherPartner(t, w)
	txnA, _ := b.approved(t, w, 10000)
	txnB, _ := b.approved(t, w2, 10000)
	held := holdRefundLock(t, b, w.program.ID)
	batched := make(chan int, 1)
	go func() {
		_, _, n := b.refunds.ApplyTogether(ctx, []ledger.RefundInput{
			{ProgramID: w.program.ID, TransactionID: txnA, Source: ledger.SourceAPI},
			{ProgramID: w.program.ID, TransactionID: txnB, Source: ledger.SourceAPI},
		})
		batched <- n
	}()
	waitForRefundLock(t, b, w.program.ID, "the batch")
	if n := b.count(t, `SELECT count(*) FROM refunds`); n != 0 {
		t.Fatalf("%d refunds written before the batch had its program's lock", n)
	}
	if err := held.Rollback(); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-batched:
		if n != 2 {
			t.Fatalf("%d of 2 refunds answered by the batch", n)
		}
	case <-time.After(time.Minute):
		t.Fatal("the batch did not finish once the lock was free")
	}
	if n := b.count(t, `SELECT count(*) FROM refunds`); n != 2 {
		t.Fatalf("%d refunds stored, want 2", n)
	}
}

// TestLoneRefundWaitsForItsProgramsBatch: a refund applied on its own
// takes its program's refund lock before any row lock, as a batch does,
// so that it waits for a batch of its program instead of deadlocking
// with it (one did in these tests before).
func TestLoneRefundWaitsForItsProgramsBatch(t *testing.T) {
	b := setupLedger(t, "0")
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "30", "USD", 0, 30))
	txn, cid := b.approved(t, w, 10000)
	held := holdRefundLock(t, b, w.program.ID)
	type answer struct {
		res *ledger.RefundResult
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		res, err := b.refunds.ApplyRefund(ctx, ledger.RefundInput{ProgramID: w.program.ID, TransactionID: txn, Source: ledger.SourceAPI})
		answered <- answer{res, err}
	}()
	waitForRefundLock(t, b, w.program.ID, "the refund")
	// It has locked nothing yet: the partner's balance account, its
	// first row lock, is free.
	if _, err := held.ExecContext(ctx, `SELECT 1 FROM balance_accounts WHERE partner_id = $1 FOR NO KEY UPDATE NOWAIT`, w.partnerID); err != nil {
		t.Fatalf("the balance account is locked while the refund waits for its program's lock: %v", err)
	}
	if err := held.Rollback(); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-answered:
		if a.err != nil {
			t.Fatal(a.err)
		}
		assertRefund(t, a.res, ledger.RefundResult{Status: ledger.RefundReversed, CommissionID: cid, DeductionMinor: 3000, Currency: ledger.USD})
	case <-time.After(time.Minute):
		t.Fatal("the refund did not finish once the lock was free")
	}
}

// holdRefundLock takes program's refund lock (22, program) in a
// transaction of the test's own, as a batch in flight would hold it; the
// test rolls it back to let the waiting refunds go on.
func holdRefundLock(t *testing.T, b *ledgerBundle, program int64) *sql.Tx {
	t.Helper()
	held, err := b.db.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { held.Rollback() })
	if _, err := held.Exec(`SELECT pg_advisory_xact_lock(22, $1::int)`, program); err != nil {
		t.Fatal(err)
	}
	return held
}

// waitForRefundLock waits until a session of the test's database waits
// for program's refund lock, and fails the test if who never does.
func waitForRefundLock(t *testing.T, b *ledgerBundle, program int64, who string) {
	t.Helper()
	waiting := `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = 22 AND objid = $1
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`
	for deadline := time.Now().Add(30 * time.Second); b.count(t, waiting, program) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not wait for its program's lock", who)
		}
	}
}

// TestRefundBatchRereadsASaleRefundedWhileItWaited: a batch reads its
// snapshot in the statement that waits for its program's lock, so a
// refund committed meanwhile is missing from that snapshot. The sale's
// locked row shows it (every refund updates its sale), and the batch
// reads that refund's snapshot again once it holds the locks: a retry
// of the same amount, applied while the batch waited, is skipped, not
// applied twice.
func TestRefundBatchRereadsASaleRefundedWhileItWaited(t *testing.T) {
	b := setupLedger(t, "0")
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "30", "USD", 0, 30))
	txnA, cidA := b.approved(t, w, 10000)
	txnB, cidB := b.approved(t, w, 10000)
	held := holdRefundLock(t, b, w.program.ID)
	// What a refund of 1000 of txnA, without refund id, writes to the sale.
	if _, err := held.ExecContext(ctx, `
		WITH s AS (UPDATE sales SET refunded_cents = refunded_cents + 1000 WHERE processor_event_id = $1 RETURNING id, program_id)
		INSERT INTO refunds (sale_id, program_id, amount_cents, source) SELECT id, program_id, 1000, 'api' FROM s`, txnA); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		results []*ledger.RefundResult
		errs    []error
		batched int
	}
	answered := make(chan answer, 1)
	go func() {
		results, errs, n := b.refunds.ApplyTogether(ctx, []ledger.RefundInput{
			{ProgramID: w.program.ID, TransactionID: txnA, AmountCents: 1000, Source: ledger.SourceAPI},
			{ProgramID: w.program.ID, TransactionID: txnB, AmountCents: 1000, Source: ledger.SourceAPI},
		})
		answered <- answer{results, errs, n}
	}()
	waitForRefundLock(t, b, w.program.ID, "the batch")
	if err := held.Commit(); err != nil {
		t.Fatal(err)
	}
	var a answer
	select {
	case a = <-answered:
	case <-time.After(time.Minute):
		t.Fatal("the batch did not finish once the lock was free")
	}
	if a.batched != 2 {
		t.Fatalf("%d of 2 refunds answered by the batch", a.batched)
	}
	for i, err := range a.errs {
		if err != nil {
			t.Fatalf("refund %d: %v", i, err)
		}
	}
	assertRefund(t, a.results[0], ledger.RefundResult{Status: ledger.RefundSkipped, CommissionID: cidA, SkipReason: ledger.SkipSameAmount})
	assertRefund(t, a.results[1], ledger.RefundResult{Status: ledger.RefundRefunded, CommissionID: cidB, DeductionMinor: 300, Currency: ledger.USD})
	if n := b.count(t, `SELECT refunded_cents FROM sales WHERE processor_event_id = $1`, txnA); n != 1000 {
		t.Fatalf("refunded cents of the sale refunded while the batch waited: %d, want 1000", n)
	}
}

// TestRefundBatchCreatesABalanceAccountInLockOrder: a refund whose
// partner has no balance account yet (a pending commission) and every
// refund after it in the lock order lock nothing in the batch's first
// read; the account is created, then they are read again, so no lock is
// taken out of order. Each answers as it would alone.
func TestRefundBatchCreatesABalanceAccountInLockOrder(t *testing.T) {
	b := setupLedger(t, "0")
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "30", "USD", 0, 30))
	w2 := b.anotherPartner(t, w)
	txnA, cidA := b.sold(t, w, 10000)
	txnB, cidB := b.approved(t, w2, 10000)
	accounts := `SELECT count(*) FROM balance_accounts WHERE partner_id = $1`
	if n := b.count(t, accounts, w.partnerID); n != 0 {
		t.Fatalf("the first partner has %d balance accounts before its refund, want 0", n)
	}
	before := b.balance(t, w2.partnerID, ledger.USD)
	results, errs, batched := b.refunds.ApplyTogether(ctx, []ledger.RefundInput{
		{ProgramID: w.program.ID, TransactionID: txnB, AmountCents: 1000, Source: ledger.SourceAPI},
		{ProgramID: w.program.ID, TransactionID: txnA, AmountCents: 1000, Source: ledger.SourceAPI},
	})
	if batched != 2 {
		t.Fatalf("%d of 2 refunds answered by the batch", batched)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("refund %d: %v", i, err)
		}
	}
	assertRefund(t, results[0], ledger.RefundResult{Status: ledger.RefundRefunded, CommissionID: cidB, DeductionMinor: 300, Currency: ledger.USD})
	assertRefund(t, results[1], ledger.RefundResult{Status: ledger.RefundRefunded, CommissionID: cidA, DeductionMinor: 300, Currency: ledger.USD})
	if n := b.count(t, accounts, w.partnerID); n != 1 {
		t.Fatalf("the first partner has %d balance accounts after its refund, want 1", n)
	}
	if got := b.balance(t, w2.partnerID, ledger.USD); got != before-300 {
		t.Fatalf("second partner's balance %d, want %d", got, before-300)
	}
	if n := b.count(t, `SELECT count(*) FROM refunds`); n != 2 {
		t.Fatalf("%d refunds stored, want 2", n)
	}
}

// TestRefundBatchFitsOpenWithdrawalsOnce: two deductions of one partner
// in a batch lower its open withdrawal once, after both, to what the
// balance then holds, as fitting it after each would.
func TestRefundBatchFitsOpenWithdrawalsOnce(t *testing.T) {
	b := setupLedger(t, "0")
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "30", "USD", 0, 30))
	txnA, _ := b.approved(t, w, 100000)
	txnB, _ := b.approved(t, w, 100000)
	if got := b.balance(t, w.partnerID, ledger.USD); got != 60000 {
		t.Fatalf("balance %d before the refunds, want 60000", got)
	}
	wd, err := b.balances.CreateWithdrawal(ctx, w.partnerID, ledger.USD, 50000)
	if err != nil {
		t.Fatal(err)
	}
	_, errs, batched := b.refunds.ApplyTogether(ctx, []ledger.RefundInput{
		{ProgramID: w.program.ID, TransactionID: txnA, AmountCents: 50000, Source: ledger.SourceAPI},
		{ProgramID: w.program.ID, TransactionID: txnB, AmountCents: 50000, Source: ledger.SourceAPI},
	})
	if batched != 2 {
		t.Fatalf("%d of 2 refunds answered by the batch", batched)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("refund %d: %v", i, err)
		}
	}
	if got := b.balance(t, w.partnerID, ledger.USD); got != 30000 {
		t.Fatalf("balance %d after the refunds, want 30000", got)
	}
	got, err := b.balances.Withdrawal(ctx, wd.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != ledger.WithdrawalOpen || got.AmountMinor != 30000 || got.RequestedMinor != 50000 {
		t.Fatalf("withdrawal = %+v, want open, lowered to 30000 of 50000", got)
	}
}
