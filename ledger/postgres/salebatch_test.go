package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
)

// TestSalesRecordedTogether records eight sales as one batch of
// concurrent sales, each answering as it would alone: two of one customer
// (the second sees the first's commission), one whose transaction id the
// first took, one refused because its partner left the program (nothing
// left behind), the first sale of a click and a second sale of that click
// (which finds the customer the first created, and its commission), one
// naming nobody, and the first sale of a click whose partner is not in the
// program (refused: its savepoint takes the click's customer back).
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

// TestSalesWrittenTogetherMatchSalesAlone records the same repeat sales of
// existing customers in two identical worlds, one at a time and as one
// batch (whose group of sales is written by one statement), and finds the
// same answers and the same rows: a customer's first paid sale (conversion,
// click converted, commission), a repeat sale of a one-time program (no
// commission), a customer without partner (stored, refused), a sale dated
// before the customer's first one, every optional field, and a recurring
// program's commission, with brand webhooks for all of them.
func TestSalesWrittenTogetherMatchSalesAlone(t *testing.T) {
	b := setupLedger(t, "2.5")
	ctx := context.Background()
	hooks := postgres.NewWebhookService(b.db.DB, nil)
	var answers, snapshots [2]string
	start := b.clock.Now()
	for i, together := range []bool{false, true} {
		b.clock.Add(start.Sub(b.clock.Now())) // both worlds at the same times
		oneTime := b.MustWorld(t, programInput("percent", "12.5", "EUR", 0, 30))
		recurring := b.MustWorld(t, programInput("recurring_fixed", "3", "USD", 0, 30))
		for _, w := range []saleWorld{oneTime, recurring} {
			if _, err := hooks.CreateEndpoint(ctx, w.program.ID, ledger.WebhookInput{
				URL: ledger.Some("https://93.184.215.14/hooks"), Events: ledger.Some(ledger.WebhookEventTypes)}); err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{"a", "b", "c", "d", "e"} {
				b.MustCustomerKey(t, w, key)
			}
			b.db.MustExec(`UPDATE customers SET updated_at = $2 WHERE program_id = $1`, w.program.ID, start)
		}
		b.db.MustExec(`UPDATE customers SET partner_id = NULL WHERE customer_key = 'c' AND program_id = $1`, oneTime.program.ID)
		earlier := b.clock.Now().Add(-48 * time.Hour)
		txn := func(id string) string { return strconv.Itoa(i) + "_" + id } // transaction ids are the platform's
		for j, w := range []saleWorld{oneTime, recurring} {
			b.MustSale(t, w, sale{txn: txn(strconv.Itoa(j) + "before_b"), customerKey: "b", amount: 1000})
			b.MustSale(t, w, sale{txn: txn(strconv.Itoa(j) + "before_d"), customerKey: "d", amount: 1000})
		}
		b.clock.Add(time.Minute)
		full := sale{txn: txn("e1"), customerKey: "e", amount: 4200, currency: "USD"}.request(oneTime.program.ID)
		full.Provider, full.ProviderPaymentID, full.Livemode = ledger.Some("stripe"), ledger.Some("pi_123"), ledger.Some(false)
		full.SaleType, full.IsRecurring = ledger.Some(ledger.SaleTypeSubscription), ledger.Some(true)
		full.SubscriptionID, full.ProductID, full.EventName = ledger.Some("sub_9"), ledger.Some("prod_7"), ledger.Some("renewal \"q\"")
		// In the order a batch writes them: program, then customer key.
		reqs := []ledger.SaleRequest{
			sale{txn: txn("a1"), customerKey: "a", amount: 1999}.request(oneTime.program.ID),
			sale{txn: txn("b1"), customerKey: "b", amount: 500}.request(oneTime.program.ID),
			sale{txn: txn("c1"), customerKey: "c", amount: 700}.request(oneTime.program.ID),
			sale{txn: txn("d1"), customerKey: "d", amount: 800, occurredAt: earlier}.request(oneTime.program.ID),
			full,
			sale{txn: txn("r_a1"), customerKey: "a", amount: 100}.request(recurring.program.ID),
			sale{txn: txn("r_b1"), customerKey: "b", amount: 200}.request(recurring.program.ID),
		}
		var described []string
		if together {
			results, errs, batched := b.sales.RecordTogether(ctx, reqs)
			if batched != len(reqs) {
				t.Fatalf("%d of %d sales recorded by the batch", batched, len(reqs))
			}
			for j := range reqs {
				described = append(described, describeSale(results[j], errs[j]))
			}
		} else {
			for _, r := range reqs {
				described = append(described, describeSale(b.sales.RecordSale(ctx, r)))
			}
		}
		answers[i] = strings.Join(described, "\n")
		snapshots[i] = b.saleSnapshot(t, oneTime) + "\n" + b.saleSnapshot(t, recurring)
	}
	if answers[0] != answers[1] {
		t.Fatalf("answers alone:\n%s\ntogether:\n%s", answers[0], answers[1])
	}
	if snapshots[0] != snapshots[1] {
		t.Fatalf("rows alone:\n%s\ntogether:\n%s", snapshots[0], snapshots[1])
	}
	for _, want := range []string{describeSale(&ledger.SaleResult{CommissionID: new(int64), Message: ledger.MsgSaleRecorded}, nil),
		describeSale(&ledger.SaleResult{Message: ledger.MsgSaleNotFirst}, nil), "error " + ledger.ENoAttribution} {
		if !strings.Contains(answers[1], want) {
			t.Fatalf("no answer %q among:\n%s", want, answers[1])
		}
	}
	var meta json.RawMessage
	b.db.QueryRow(`SELECT metadata FROM sales WHERE processor_event_id = '1_e1'`).Scan(&meta)
	if !strings.Contains(string(meta), `renewal \"q\"`) {
		t.Fatalf("metadata of the batched sale: %s", meta)
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
