package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/partnertrack/partnertrack/ledger"
)

// TestSalesRecordedTogether records eight sales as one batch of
// concurrent sales, each answering as it would alone: two of one customer
// (the second sees the first's commission), one whose transaction id the
// first took, one refused because its partner left the program (nothing
// left behind), the first sale of a click and a second sale of that click
// (which finds the customer the first created, and its commission), one
// naming nobody, and the first sale of a click whose partner is not in the
// program (refused before anything of it is written).
func TestSalesRecordedTogether(t *testing.T) {
	b := setupLedger(t, "0")
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "10", "USD", 0, 30))
	first := b.MustCustomerKey(t, w, "tog_k1")
	b.MustCustomerKey(t, w, "tog_k2")
	gone := b.MustCustomerKey(t, w, "tog_k3")
	elsewhere := b.MustWorld(t, programInput("percent", "10", "USD", 0, 30))
	b.db.MustExec(`UPDATE customers SET partner_id = $1 WHERE id = $2`, elsewhere.partnerID, gone)
	click := b.MustClick(t, w, w.partnerID)
	strayClick := b.MustClick(t, w, w.partnerID)
	b.db.MustExec(`UPDATE clicks SET partner_id = $1 WHERE click_id = $2`, elsewhere.partnerID, strayClick)

	reqs := []ledger.SaleRequest{
		sale{txn: "tog_1", customerKey: "tog_k1", amount: 1000}.request(w.program.ID),
		sale{txn: "tog_2", customerKey: "tog_k1", amount: 500}.request(w.program.ID),
		sale{txn: "tog_1", customerKey: "tog_k2", amount: 700}.request(w.program.ID),
		sale{txn: "tog_4", clickID: click, amount: 1000}.request(w.program.ID),
		sale{txn: "tog_5", customerKey: "nobody", amount: 1000}.request(w.program.ID),
		sale{txn: "tog_6", customerKey: "tog_k3", amount: 1000}.request(w.program.ID),
		sale{txn: "tog_7", clickID: strayClick, amount: 1000}.request(w.program.ID),
		sale{txn: "tog_8", clickID: click, amount: 300}.request(w.program.ID),
	}
	results, errs, batched := b.sales.RecordTogether(ctx, reqs)
	if batched != len(reqs) {
		t.Fatalf("%d sales recorded by the batch, want all %d", batched, len(reqs))
	}
	if errs[0] != nil || results[0].CommissionID == nil {
		t.Fatalf("first sale: %+v, %v", results[0], errs[0])
	}
	if errs[1] != nil || results[1].Message != ledger.MsgSaleNotFirst {
		t.Fatalf("second sale of the customer: %+v, %v (want %q)", results[1], errs[1], ledger.MsgSaleNotFirst)
	}
	assertCode(t, errs[2], ledger.EDuplicateTransaction, ledger.MsgDuplicateTransaction)
	if errs[3] != nil || results[3].CommissionID == nil {
		t.Fatalf("first sale of a click: %+v, %v", results[3], errs[3])
	}
	assertCode(t, errs[4], ledger.ENoAttribution, ledger.MsgCustomerNotFound)
	assertCode(t, errs[5], ledger.ENoAttribution, ledger.MsgNoRelationship)
	assertCode(t, errs[6], ledger.ENoAttribution, ledger.MsgNoRelationship)
	if errs[7] != nil || results[7].Message != ledger.MsgSaleNotFirst {
		t.Fatalf("second sale of the click: %+v, %v (want %q)", results[7], errs[7], ledger.MsgSaleNotFirst)
	}
	for query, want := range map[string]int{
		`SELECT count(*) FROM sales WHERE processor_event_id = 'tog_1'`:                      1,
		`SELECT count(*) FROM sales WHERE processor_event_id IN ('tog_5', 'tog_6', 'tog_7')`: 0,
		`SELECT count(*) FROM customers WHERE click_id = '` + strayClick + `'`:               0,
		`SELECT count(*) FROM customers WHERE click_id = '` + click + `'`:                    1,
		`SELECT count(*) FROM sales`:       4,
		`SELECT count(*) FROM commissions`: 2,
	} {
		if n := b.count(t, query); n != want {
			t.Fatalf("%s = %d, want %d", query, n, want)
		}
	}
	if n := b.count(t, `SELECT count(*) FROM commissions WHERE customer_id = $1`, first); n != 1 {
		t.Fatalf("%d commissions for the customer of two sales, want 1", n)
	}
}

// TestFailedSaleBatchIsRecordedSaleBySale: when one sale's write fails in
// the batch (here Postgres refuses its commission), the batch is rolled
// back and each sale is recorded on its own: the others as usual, the
// failing one as it would alone (stored, 500 Failed to create commission).
func TestFailedSaleBatchIsRecordedSaleBySale(t *testing.T) {
	b := setupLedger(t, "0")
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "10", "USD", 0, 30))
	for _, key := range []string{"bad_k1", "bad_k2", "bad_k3"} {
		b.MustCustomerKey(t, w, key)
	}
	b.db.MustExec(`
		CREATE FUNCTION refuse_77() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.amount_minor = 77 THEN RAISE EXCEPTION 'commission of 77 refused'; END IF; RETURN NEW; END $$;
		CREATE TRIGGER refuse_77 BEFORE INSERT ON commissions FOR EACH ROW EXECUTE FUNCTION refuse_77();`)
	reqs := []ledger.SaleRequest{
		sale{txn: "bad_1", customerKey: "bad_k1", amount: 1000}.request(w.program.ID),
		sale{txn: "bad_2", customerKey: "bad_k2", amount: 770}.request(w.program.ID),
		sale{txn: "bad_3", customerKey: "bad_k3", amount: 1000}.request(w.program.ID),
	}
	results, errs, batched := b.sales.RecordTogether(ctx, reqs)
	if batched != 0 {
		t.Fatalf("%d sales answered from a batch that failed", batched)
	}
	for _, i := range []int{0, 2} {
		if errs[i] != nil || results[i].CommissionID == nil {
			t.Fatalf("sale %d: %+v, %v", i, results[i], errs[i])
		}
	}
	assertCode(t, errs[1], ledger.EInternal, ledger.MsgCommissionFailed)
	if n := b.count(t, `SELECT count(*) FROM sales`); n != 3 {
		t.Fatalf("%d sales stored, want 3 (the one without commission too)", n)
	}
	if n := b.count(t, `SELECT count(*) FROM commissions`); n != 2 {
		t.Fatalf("%d commissions, want 2", n)
	}
}

// TestSaleRacedInTheGroupWriteIsADuplicate: a sale whose transaction id
// another transaction inserts between its read and the group's write gets
// the 409 of that sale, and writes nothing, while the group's other sale
// is stored as usual.
func TestSaleRacedInTheGroupWriteIsADuplicate(t *testing.T) {
	b := setupLedger(t, "0")
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "10", "USD", 0, 30))
	racer := b.MustCustomerKey(t, w, "race_other")
	b.MustCustomerKey(t, w, "race_a")
	b.MustCustomerKey(t, w, "race_b")
	other, err := b.db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback()
	var racedID int64
	if err := other.QueryRow(`INSERT INTO sales (program_id, customer_id, processor_event_id, amount_cents, currency, source, occurred_at)
		VALUES ($1, $2, 'race_1', 100, 'USD', 'api', now()) RETURNING id`, w.program.ID, racer).Scan(&racedID); err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		results []*ledger.SaleResult
		errs    []error
		batched int
	}
	done := make(chan outcome, 1)
	go func() {
		r, e, n := b.sales.RecordTogether(ctx, []ledger.SaleRequest{
			sale{txn: "race_1", customerKey: "race_a", amount: 1000}.request(w.program.ID),
			sale{txn: "race_2", customerKey: "race_b", amount: 1000}.request(w.program.ID),
		})
		done <- outcome{r, e, n}
	}()
	b.waitForLockWait(t, "the group's write never waited for the other transaction's race_1")
	if err := other.Commit(); err != nil {
		t.Fatal(err)
	}
	got := <-done
	if got.batched != 2 {
		t.Fatalf("%d of 2 sales recorded by the batch", got.batched)
	}
	assertCode(t, got.errs[0], ledger.EDuplicateTransaction, ledger.MsgDuplicateTransaction)
	var e *ledger.Error
	if !errors.As(got.errs[0], &e) || e.Details["sale_id"] != racedID {
		t.Fatalf("409 details %+v, want sale_id %d", e, racedID)
	}
	if got.errs[1] != nil || got.results[1].CommissionID == nil {
		t.Fatalf("the group's other sale: %+v, %v", got.results[1], got.errs[1])
	}
	for query, want := range map[string]int{
		`SELECT count(*) FROM sales WHERE processor_event_id = 'race_1'`:                         1,
		`SELECT count(*) FROM tracking_logs WHERE reference = 'race_1'`:                          0,
		`SELECT count(*) FROM customers WHERE customer_key = 'race_a' AND status = 'conversion'`: 0,
		`SELECT count(*) FROM commissions`:                                                       1,
		`SELECT count(*) FROM platform_fees`:                                                     1,
	} {
		if n := b.count(t, query); n != want {
			t.Fatalf("%s = %d, want %d", query, n, want)
		}
	}
}
