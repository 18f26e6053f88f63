package postgres_test

import (
	"context"
	"testing"

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
// is rolled back and each refund applied on its own: that one on the
// careful path, which keeps a refund whose tracking log alone failed.
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
	results, errs, batched := b.refunds.ApplyTogether(ctx, []ledger.RefundInput{
		{ProgramID: w.program.ID, TransactionID: txnD, Source: ledger.SourceAPI},
		{ProgramID: w.program.ID, TransactionID: txnE, Source: ledger.SourceAPI},
	})
	if batched != 0 {
		t.Fatalf("%d refunds answered from a batch that failed", batched)
	}
	for i, cid := range []int64{cidD, cidE} {
		if errs[i] != nil {
			t.Fatalf("refund %d: %v", i, errs[i])
		}
		assertRefund(t, results[i], ledger.RefundResult{Status: ledger.RefundReversed, CommissionID: cid, DeductionMinor: 3000, Currency: ledger.USD})
	}
	if n := b.count(t, `SELECT count(*) FROM refunds`); n != 2 {
		t.Fatalf("%d refunds stored, want 2", n)
	}
}
