package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
)

func TestRecordSale(t *testing.T) {
	b := setupLedger(t, "2.5")
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "30", "USD", 0, 30))

	t.Run("OKByClick", func(t *testing.T) {
		click := b.MustClick(t, w, w.partnerID)
		res := b.MustSale(t, w, sale{txn: "txn_click", clickID: click, amount: 1999})
		if res.Message != ledger.MsgSaleRecorded || res.Test {
			t.Fatalf("result = %+v", res)
		}
		c := b.MustCommission(t, *res.CommissionID)
		now := b.clock.Now()
		if c.Status != ledger.CommissionPending || c.AmountMinor != 600 || c.OriginalMinor != 600 || c.Currency != ledger.USD ||
			c.PartnerID != w.partnerID || c.TransactionID != "txn_click" || c.Credited ||
			!c.ApproveAfter.Equal(now.AddDate(0, 0, 30)) {
			t.Fatalf("commission = %+v", c)
		}
		var status string
		var firstPaid time.Time
		var converted bool
		b.db.QueryRow(`SELECT status, first_paid_at FROM customers WHERE click_id = $1`, click).Scan(&status, &firstPaid)
		b.db.QueryRow(`SELECT converted FROM clicks WHERE click_id = $1`, click).Scan(&converted)
		if status != ledger.FunnelConversion || !firstPaid.Equal(now) || !converted {
			t.Fatalf("customer %s first paid %v, click converted %v", status, firstPaid, converted)
		}
		var fee int64
		var rate string
		b.db.QueryRow(`SELECT amount_minor, rate_percent FROM platform_fees WHERE sale_id = $1`, res.SaleID).Scan(&fee, &rate)
		if fee != 50 || rate != "2.5" { // 49.975
			t.Fatalf("platform fee %d at %s%%", fee, rate)
		}
		if n := b.count(t, `SELECT count(*) FROM tracking_logs WHERE event_type = 'sale' AND reference = 'txn_click' AND NOT is_test`); n != 1 {
			t.Fatalf("%d tracking log rows", n)
		}
	})

	t.Run("OKByCustomerKey", func(t *testing.T) {
		custID := b.MustCustomerKey(t, w, "user-key-1")
		res := b.MustSale(t, w, sale{txn: "txn_key", customerKey: "user-key-1", amount: 10000, currency: "EUR"})
		c := b.MustCommission(t, *res.CommissionID)
		if c.AmountMinor != 3000 || c.Currency != ledger.EUR || c.CustomerID == nil || *c.CustomerID != custID {
			t.Fatalf("commission = %+v", c)
		}
	})

	t.Run("OKClickStillInQueue", func(t *testing.T) {
		queued := &ledger.Click{ID: ledger.NewClickID(b.clock.Now()), ProgramID: w.program.ID, PartnerID: &w.partnerID, LinkID: &w.linkID}
		queued.OccurredAt, _ = ledger.ClickTime(queued.ID)
		sales := postgres.NewSaleService(b.db.DB, postgres.SaleOptions{Logger: discard,
			Pending: pendingFunc(func(_ context.Context, id string) (*ledger.Click, error) {
				if id == queued.ID {
					return queued, nil
				}
				return nil, ledger.NewError(ledger.ENotFound, "click not found")
			})})
		res, err := sales.RecordSale(ctx, sale{txn: "txn_queued", clickID: queued.ID, amount: 1000}.request(w.program.ID))
		if err != nil || res.CommissionID == nil {
			t.Fatalf("sale on a queued click: %+v, %v", res, err)
		}
		if n := b.count(t, `SELECT count(*) FROM clicks WHERE click_id = $1 AND converted`, queued.ID); n != 1 {
			t.Fatal("the queued click was not written and converted")
		}
	})

	// The worker stores the click and deletes its record between the
	// sale's snapshot and its read of the record: the sale reads again
	// and is attributed from the stored click.
	t.Run("OKClickStoredWhileTheSaleLooked", func(t *testing.T) {
		stored := &ledger.Click{ID: ledger.NewClickID(b.clock.Now()), ProgramID: w.program.ID, PartnerID: &w.partnerID, LinkID: &w.linkID}
		stored.OccurredAt, _ = ledger.ClickTime(stored.ID)
		sales := postgres.NewSaleService(b.db.DB, postgres.SaleOptions{Logger: discard,
			Pending: pendingFunc(func(ctx context.Context, id string) (*ledger.Click, error) {
				if _, err := postgres.NewTrafficStore(b.db.DB).WriteClicks(ctx, []ledger.Click{*stored}); err != nil {
					return nil, err
				}
				return nil, ledger.NewError(ledger.ENotFound, "click not found")
			})})
		res, err := sales.RecordSale(ctx, sale{txn: "txn_stored_meanwhile", clickID: stored.ID, amount: 1000}.request(w.program.ID))
		if err != nil || res.CommissionID == nil {
			t.Fatalf("sale on a click stored while it looked: %+v, %v", res, err)
		}
		if c := b.MustCommission(t, *res.CommissionID); c.PartnerID != w.partnerID {
			t.Fatalf("commission = %+v, want partner %d", c, w.partnerID)
		}
	})

	t.Run("OKKeyUnknownFallsBackToClick", func(t *testing.T) {
		click := b.MustClick(t, w, w.partnerID)
		b.MustSale(t, w, sale{txn: "txn_fallback", customerKey: "nobody", clickID: click, amount: 100})
	})

	t.Run("OKRepeatSaleByClickFindsItsCustomer", func(t *testing.T) {
		click := b.MustClick(t, w, w.partnerID)
		b.MustSale(t, w, sale{txn: "txn_click_first", clickID: click, amount: 100})
		res, err := b.sales.RecordSale(ctx, sale{txn: "txn_click_again", clickID: click, amount: 100}.request(w.program.ID))
		if err != nil || res.Message != ledger.MsgSaleNotFirst {
			t.Fatalf("second sale of a click: %+v, %v (want %q: the customer's first sale paid)", res, err, ledger.MsgSaleNotFirst)
		}
		if n := b.count(t, `SELECT count(DISTINCT customer_id) FROM sales WHERE processor_event_id IN ('txn_click_first', 'txn_click_again')`); n != 1 {
			t.Fatalf("two sales of one click went to %d customers", n)
		}
		if n := b.count(t, `SELECT count(*) FROM customers WHERE click_id = $1`, click); n != 1 {
			t.Fatalf("%d customers for one click", n)
		}
	})

	t.Run("OKKeyWinsOverClickCustomer", func(t *testing.T) {
		keyed := b.MustCustomerKey(t, w, "cust_key_wins")
		second := b.anotherPartner(t, w)
		click := b.MustClick(t, second, second.partnerID)
		b.MustSale(t, second, sale{txn: "txn_click_owner", clickID: click, amount: 100})
		b.MustSale(t, w, sale{txn: "txn_key_wins", customerKey: "cust_key_wins", clickID: click, amount: 100})
		if n := b.count(t, `SELECT count(*) FROM sales WHERE processor_event_id = 'txn_key_wins' AND customer_id = $1 AND partner_id = $2`,
			keyed, w.partnerID); n != 1 {
			t.Fatal("a sale naming a settled customer key went to its click's customer")
		}
	})

	t.Run("ErrDuplicateAcrossPrograms", func(t *testing.T) {
		other := b.MustWorld(t, programInput("fixed", "5", "USD", 0, 30))
		first := b.MustSale(t, other, sale{txn: "txn_global", clickID: b.MustClick(t, other, other.partnerID), amount: 500})
		_, err := b.sales.RecordSale(ctx, sale{txn: "txn_global", clickID: b.MustClick(t, w, w.partnerID), amount: 500}.request(w.program.ID))
		assertCode(t, err, ledger.EDuplicateTransaction, ledger.MsgDuplicateTransaction)
		var le *ledger.Error
		if !asLedgerError(err, &le) || le.Details["sale_id"] != first.SaleID {
			t.Fatalf("details = %v, want sale_id %d", le, first.SaleID)
		}
		if n := b.count(t, `SELECT count(*) FROM sales WHERE processor_event_id = 'txn_global'`); n != 1 {
			t.Fatalf("%d sales", n)
		}
	})

	t.Run("ErrNoCustomerGiven", func(t *testing.T) {
		_, err := b.sales.RecordSale(ctx, sale{txn: "txn_none", amount: 100}.request(w.program.ID))
		assertCode(t, err, ledger.EInvalid, ledger.MsgCustomerNotFound)
	})
	t.Run("ErrUnknownCustomerKey", func(t *testing.T) {
		_, err := b.sales.RecordSale(ctx, sale{txn: "txn_nokey", customerKey: "ghost", amount: 100}.request(w.program.ID))
		assertCode(t, err, ledger.ENoAttribution, ledger.MsgCustomerNotFound)
	})
	t.Run("ErrUnknownClick", func(t *testing.T) {
		for _, id := range []string{ledger.NewClickID(b.clock.Now()), "not-a-click-id"} {
			_, err := b.sales.RecordSale(ctx, sale{txn: "txn_noclick", clickID: id, amount: 100}.request(w.program.ID))
			assertCode(t, err, ledger.ENoAttribution, ledger.MsgCustomerNotFound)
		}
	})
	t.Run("ErrClickOfAnotherProgram", func(t *testing.T) {
		other := b.MustWorld(t, programInput("percent", "10", "USD", 0, 30))
		_, err := b.sales.RecordSale(ctx, sale{txn: "txn_elsewhere", clickID: b.MustClick(t, other, other.partnerID), amount: 100}.request(w.program.ID))
		assertCode(t, err, ledger.ENoAttribution, ledger.MsgNoAttribution)
	})
	t.Run("ErrPartnerNotEnrolled", func(t *testing.T) {
		click := b.MustClick(t, w, w.partnerID)
		other := b.MustWorld(t, programInput("percent", "10", "USD", 0, 30))
		if _, err := b.db.Exec(`UPDATE clicks SET partner_id = $1 WHERE click_id = $2`, other.partnerID, click); err != nil {
			t.Fatal(err)
		}
		_, err := b.sales.RecordSale(ctx, sale{txn: "txn_unenrolled", clickID: click, amount: 100}.request(w.program.ID))
		assertCode(t, err, ledger.ENoAttribution, ledger.MsgNoRelationship)
		if n := b.count(t, `SELECT count(*) FROM sales WHERE processor_event_id = 'txn_unenrolled'`); n != 0 {
			t.Fatal("a refused sale was stored")
		}
	})
	t.Run("ErrPartnerRequiredStoresTheSale", func(t *testing.T) {
		click := b.MustClick(t, w, 0)
		req := sale{txn: "txn_orphan", clickID: click, amount: 100}.request(w.program.ID)
		_, err := b.sales.RecordSale(ctx, req)
		assertCode(t, err, ledger.ENoAttribution, ledger.MsgPartnerRequired)
		if n := b.count(t, `SELECT count(*) FROM sales WHERE processor_event_id = 'txn_orphan' AND partner_id IS NULL`); n != 1 {
			t.Fatal("the sale was not stored")
		}
		if n := b.count(t, `SELECT count(*) FROM platform_fees f JOIN sales s ON s.id = f.sale_id WHERE s.processor_event_id = 'txn_orphan'`); n != 0 {
			t.Fatal("an unattributed sale paid a platform fee")
		}
		_, err = b.sales.RecordSale(ctx, req)
		assertCode(t, err, ledger.EDuplicateTransaction, ledger.MsgDuplicateTransaction)
	})
	t.Run("ErrUnsupportedCurrencyStoresNothing", func(t *testing.T) {
		_, err := b.sales.RecordSale(ctx, sale{txn: "txn_gbp", clickID: b.MustClick(t, w, w.partnerID), amount: 100, currency: "GBP"}.request(w.program.ID))
		assertCode(t, err, ledger.EUnsupportedCurrency, "currency GBP is not supported")
		if n := b.count(t, `SELECT count(*) FROM sales WHERE processor_event_id = 'txn_gbp'`); n != 0 {
			t.Fatal("a refused sale was stored")
		}
	})
}

func asLedgerError(err error, le **ledger.Error) bool {
	e, ok := err.(*ledger.Error)
	if ok {
		*le = e
	}
	return ok
}

func TestRecordSaleFixedCommissionInProgramCurrency(t *testing.T) {
	b := setupLedger(t, "0")
	w := b.MustWorld(t, programInput("fixed", "12.345", "EUR", 0, 0))
	res := b.MustSale(t, w, sale{txn: "txn_vnd", clickID: b.MustClick(t, w, w.partnerID), amount: 250000, currency: "VND"})
	c := b.MustCommission(t, *res.CommissionID)
	if c.AmountMinor != 1235 || c.Currency != ledger.EUR || !c.ApproveAfter.Equal(b.clock.Now()) {
		t.Fatalf("commission = %+v", c)
	}
	var cur string
	var fee int64
	b.db.QueryRow(`SELECT s.currency, f.amount_minor FROM sales s JOIN platform_fees f ON f.sale_id = s.id WHERE s.id = $1`, res.SaleID).Scan(&cur, &fee)
	if cur != "VND" || fee != 0 {
		t.Fatalf("sale currency %s, fee %d (a 0%% fee is recorded as 0)", cur, fee)
	}
	// Without currency, the sale is in the program's.
	res = b.MustSale(t, w, sale{txn: "txn_default", clickID: b.MustClick(t, w, w.partnerID), amount: 100})
	b.db.QueryRow(`SELECT currency FROM sales WHERE id = $1`, res.SaleID).Scan(&cur)
	if cur != "EUR" {
		t.Fatalf("default currency %s, want the program's EUR", cur)
	}
}

func TestRecordTestSale(t *testing.T) {
	b := setupLedger(t, "3")
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "30", "VND", 0, 30))
	for _, tc := range []struct {
		desc string
		req  ledger.SaleRequest
	}{
		{"TestKey", ledger.SaleRequest{ProgramID: w.program.ID, TestKey: true}},
		{"TestModeFlag", ledger.SaleRequest{ProgramID: w.program.ID,
			AdditionalData: ledger.Some(ledger.AdditionalData{TestMode: ledger.Some(true)})}},
		{"TestModeWithCustomer", ledger.SaleRequest{ProgramID: w.program.ID, TransactionID: ledger.Some("txn_test"),
			AmountCents: ledger.Some(int64(5000)), ClickID: ledger.Some(b.MustClick(t, w, w.partnerID)),
			AdditionalData: ledger.Some(ledger.AdditionalData{TestMode: ledger.Some(true)})}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			res, err := b.sales.RecordSale(ctx, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Test || res.CommissionID != nil || res.ProgramID != w.program.ID || res.Message != ledger.MsgTestSaleRecorded {
				t.Fatalf("result = %+v", res)
			}
			var isTest bool
			var amount int64
			var txn string
			b.db.QueryRow(`SELECT is_test, amount_cents, processor_event_id FROM sales WHERE id = $1`, res.SaleID).Scan(&isTest, &amount, &txn)
			if !isTest || (tc.req.AmountCents.Present && amount != 5000) || (!tc.req.AmountCents.Present && amount != 1) {
				t.Fatalf("stored sale test=%v amount=%d", isTest, amount)
			}
			if n := b.count(t, `SELECT count(*) FROM tracking_logs WHERE reference = $1 AND is_test`, txn); n != 1 {
				t.Fatalf("%d test tracking log rows for %s", n, txn)
			}
		})
	}
	// Both test sales without an id were made in the same millisecond of
	// the test clock: the second got a suffix rather than a 409.
	if n := b.count(t, `SELECT count(*) FROM sales WHERE processor_event_id LIKE 'test_txn_%'`); n != 2 {
		t.Fatalf("%d generated test sales, want 2", n)
	}
	if n := b.count(t, `SELECT count(*) FROM commissions`) + b.count(t, `SELECT count(*) FROM platform_fees`); n != 0 {
		t.Fatalf("test sales created %d commissions and fees", n)
	}
	if n := b.count(t, `SELECT count(*) FROM customers WHERE status = 'conversion'`); n != 0 {
		t.Fatal("a test sale converted a customer")
	}
}

func TestRecordSaleCommissionFailure(t *testing.T) {
	b := setupLedger(t, "0")
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "10", "USD", 0, 30))
	if _, err := b.db.Exec(`
		CREATE FUNCTION refuse_commission() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'commission store unavailable'; END $$;
		CREATE TRIGGER refuse_commission BEFORE INSERT ON commissions FOR EACH ROW EXECUTE FUNCTION refuse_commission();
		CREATE FUNCTION refuse_log() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'log store unavailable'; END $$;
		CREATE TRIGGER refuse_log BEFORE INSERT ON tracking_logs FOR EACH ROW EXECUTE FUNCTION refuse_log();`); err != nil {
		t.Fatal(err)
	}
	req := sale{txn: "txn_nocomm", clickID: b.MustClick(t, w, w.partnerID), amount: 1000}.request(w.program.ID)
	_, err := b.sales.RecordSale(ctx, req)
	assertCode(t, err, ledger.EInternal, ledger.MsgCommissionFailed)
	// The sale is stored (the failing tracking log did not stop it) and its
	// id is consumed.
	if n := b.count(t, `SELECT count(*) FROM sales WHERE processor_event_id = 'txn_nocomm'`); n != 1 {
		t.Fatal("the sale was not stored")
	}
	if n := b.count(t, `SELECT count(*) FROM commissions`) + b.count(t, `SELECT count(*) FROM tracking_logs`); n != 0 {
		t.Fatalf("%d commission and log rows", n)
	}
	_, err = b.sales.RecordSale(ctx, req)
	assertCode(t, err, ledger.EDuplicateTransaction, ledger.MsgDuplicateTransaction)

	// A tracking log that fails never fails a sale.
	if _, err := b.db.Exec(`DROP TRIGGER refuse_commission ON commissions`); err != nil {
		t.Fatal(err)
	}
	other := b.MustWorld(t, programInput("percent", "10", "USD", 0, 30))
	b.MustSale(t, other, sale{txn: "txn_nolog", clickID: b.MustClick(t, other, other.partnerID), amount: 1000})
}

func TestCommissionWindows(t *testing.T) {
	b := setupLedger(t, "0")
	ctx := context.Background()
	start := b.clock.Now()
	at := func(days int) time.Time { return start.AddDate(0, 0, days) }

	t.Run("OneTimePaysTheFirstSaleOnly", func(t *testing.T) {
		w := b.MustWorld(t, programInput("fixed", "10", "USD", 0, 30))
		b.MustCustomerKey(t, w, "one-time")
		b.MustSale(t, w, sale{txn: "ot_1", customerKey: "one-time", amount: 500})
		res, err := b.sales.RecordSale(ctx, sale{txn: "ot_2", customerKey: "one-time", amount: 500}.request(w.program.ID))
		if err != nil || res.CommissionID != nil || res.Message != ledger.MsgSaleNotFirst {
			t.Fatalf("second sale = %+v, %v", res, err)
		}
	})

	t.Run("RecurringWithinDuration", func(t *testing.T) {
		// The clock moves forward month by month (a sale may be at most 30
		// days old); the window runs from the customer's first paid sale.
		w := b.MustWorld(t, programInput("recurring_percent", "20", "EUR", 2, 30))
		b.MustCustomerKey(t, w, "subscriber")
		clock := &testClock{t: start}
		b.db.Now = clock.Now
		defer func() { b.db.Now = b.clock.Now }()
		for _, tc := range []struct {
			txn     string
			after   time.Duration
			paysOut bool
		}{
			{"rec_0", 0, true},
			{"rec_1", 31 * 24 * time.Hour, true},
			{"rec_2", 31 * 24 * time.Hour, false}, // day 62: two months (at most 62 days) after the first sale
		} {
			clock.Add(tc.after)
			res, err := b.sales.RecordSale(ctx, sale{txn: tc.txn, customerKey: "subscriber", amount: 999}.request(w.program.ID))
			if err != nil {
				t.Fatal(err)
			}
			if (res.CommissionID != nil) != tc.paysOut {
				t.Fatalf("%s at %v: commission %v, want %v (%s)", tc.txn, clock.Now(), res.CommissionID, tc.paysOut, res.Message)
			}
			if !tc.paysOut && res.Message != ledger.MsgSaleDurationOver {
				t.Fatalf("message %q", res.Message)
			}
		}
	})

	t.Run("RecurringWindowFromAnEarlierDatedSale", func(t *testing.T) {
		w := b.MustWorld(t, programInput("recurring_fixed", "3", "USD", 1, 30))
		b.MustCustomerKey(t, w, "backfill")
		// The renewal is reported first, then the first payment, dated 25
		// days earlier: first_paid_at moves back to it.
		b.MustSale(t, w, sale{txn: "bf_2", customerKey: "backfill", amount: 100, occurredAt: at(0)})
		b.MustSale(t, w, sale{txn: "bf_1", customerKey: "backfill", amount: 100, occurredAt: at(-25)})
		var first time.Time
		b.db.QueryRow(`SELECT first_paid_at FROM customers WHERE customer_key = 'backfill'`).Scan(&first)
		if !first.Equal(at(-25)) {
			t.Fatalf("first_paid_at = %v, want %v", first, at(-25))
		}
	})

	t.Run("RecurringLifetime", func(t *testing.T) {
		w := b.MustWorld(t, programInput("recurring_percent", "5", "VND", 0, 30))
		b.MustCustomerKey(t, w, "forever")
		if _, err := b.db.Exec(`UPDATE customers SET first_paid_at = now() - interval '10 years' WHERE customer_key = 'forever'`); err != nil {
			t.Fatal(err)
		}
		res := b.MustSale(t, w, sale{txn: "life", customerKey: "forever", amount: 199999})
		if c := b.MustCommission(t, *res.CommissionID); c.AmountMinor != 10000 || c.Currency != ledger.VND { // 9999.95
			t.Fatalf("commission = %+v", c)
		}
	})
}

// TestConcurrentDuplicateSales sends one transaction id 50 times at once:
// exactly one sale, commission and fee are stored, and every other call
// answers 409 with that sale's id.
func TestConcurrentDuplicateSales(t *testing.T) {
	b := setupLedger(t, "1")
	w := b.MustWorld(t, programInput("percent", "30", "USD", 0, 30))
	clicks := make([]string, 5)
	for i := range clicks {
		clicks[i] = b.MustClick(t, w, w.partnerID)
	}
	const calls = 50
	// Several customers race too: attribution does not serialise them,
	// the unique constraint does.
	results, errs := recordAtOnce(b, calls, func(i int) ledger.SaleRequest {
		return sale{txn: "txn_race", clickID: clicks[i%len(clicks)], amount: 10000}.request(w.program.ID)
	})
	var winner *ledger.SaleResult
	for i := 0; i < calls; i++ {
		if errs[i] == nil {
			if winner != nil {
				t.Fatalf("two calls recorded the sale: %+v and %+v", winner, results[i])
			}
			winner = results[i]
		}
	}
	if winner == nil || winner.CommissionID == nil {
		t.Fatalf("no call recorded the sale: %v", errs[0])
	}
	for i := 0; i < calls; i++ {
		if errs[i] == nil {
			continue
		}
		var le *ledger.Error
		if !asLedgerError(errs[i], &le) || le.Code != ledger.EDuplicateTransaction || le.Details["sale_id"] != winner.SaleID {
			t.Fatalf("call %d: %v", i, errs[i])
		}
	}
	for query, want := range map[string]int{
		`SELECT count(*) FROM sales`:                                  1,
		`SELECT count(*) FROM commissions`:                            1,
		`SELECT count(*) FROM platform_fees`:                          1,
		`SELECT count(*) FROM tracking_logs`:                          1,
		`SELECT count(*) FROM customers WHERE status = 'conversion'`:  1,
		`SELECT count(*) FROM commissions WHERE amount_minor = 3000`:  1,
		`SELECT count(*) FROM platform_fees WHERE amount_minor = 100`: 1,
	} {
		if n := b.count(t, query); n != want {
			t.Fatalf("%s = %d, want %d", query, n, want)
		}
	}
}

// TestConcurrentFirstSalesOfOneClick sends 20 sales with distinct
// transaction ids, all naming one click not seen before, at once, on a
// program that pays the first sale only: the click brings exactly one
// customer (found or created and locked by one statement), every sale is
// stored, and exactly one earns the commission.
func TestConcurrentFirstSalesOfOneClick(t *testing.T) {
	b := setupLedger(t, "0")
	w := b.MustWorld(t, programInput("fixed", "10", "USD", 0, 30))
	click := b.MustClick(t, w, w.partnerID)
	const calls = 20
	results, errs := recordAtOnce(b, calls, func(i int) ledger.SaleRequest {
		return sale{txn: fmt.Sprintf("first_%d", i), clickID: click, amount: 500}.request(w.program.ID)
	})
	assertOnePaid(t, results, errs)
	for query, want := range map[string]int{
		`SELECT count(*) FROM customers WHERE click_id = '` + click + `'`:                                        1,
		`SELECT count(*) FROM sales s JOIN customers c ON c.id = s.customer_id AND c.click_id = '` + click + `'`: calls,
		`SELECT count(*) FROM commissions`:                                                                       1,
	} {
		if n := b.count(t, query); n != want {
			t.Fatalf("%s = %d, want %d", query, n, want)
		}
	}
}

// TestConcurrentSalesOfOneKnownCustomer sends 20 sales of one settled
// customer at once on a program that pays the first sale only. Each reads
// its customer locked with the program, so all but one wait for the lock
// in a statement whose snapshot predates the commission of the sale that
// held it: exactly one sale earns the commission, because the write
// itself looks for an earlier one.
func TestConcurrentSalesOfOneKnownCustomer(t *testing.T) {
	b := setupLedger(t, "0")
	w := b.MustWorld(t, programInput("fixed", "10", "USD", 0, 30))
	customer := b.MustCustomerKey(t, w, "cust_at_once")
	const calls = 20
	results, errs := recordAtOnce(b, calls, func(i int) ledger.SaleRequest {
		return sale{txn: fmt.Sprintf("known_%d", i), customerKey: "cust_at_once", amount: 500}.request(w.program.ID)
	})
	assertOnePaid(t, results, errs)
	if n := b.count(t, `SELECT count(*) FROM commissions WHERE customer_id = $1`, customer); n != 1 {
		t.Fatalf("%d commissions for one customer, want 1", n)
	}
	if n := b.count(t, `SELECT count(*) FROM sales WHERE customer_id = $1`, customer); n != calls {
		t.Fatalf("%d sales stored, want %d", n, calls)
	}
}

// assertOnePaid checks that every sale was recorded and exactly one
// earned the commission, the others answering that the program pays the
// first sale only.
func assertOnePaid(t *testing.T, results []*ledger.SaleResult, errs []error) {
	t.Helper()
	paid := 0
	for i := range results {
		if errs[i] != nil {
			t.Fatalf("sale %d: %v", i, errs[i])
		}
		if results[i].CommissionID != nil {
			paid++
		} else if results[i].Message != ledger.MsgSaleNotFirst {
			t.Fatalf("sale %d without commission: %q", i, results[i].Message)
		}
	}
	if paid != 1 {
		t.Fatalf("%d sales earned the commission, want 1", paid)
	}
}

// recordAtOnce records n sales, the request of each from req, all
// released at the same instant, and returns each call's result and error.
func recordAtOnce(b *ledgerBundle, n int, req func(i int) ledger.SaleRequest) ([]*ledger.SaleResult, []error) {
	var wg sync.WaitGroup
	results := make([]*ledger.SaleResult, n)
	errs := make([]error, n)
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			results[i], errs[i] = b.sales.RecordSale(context.Background(), req(i))
		}(i)
	}
	close(start)
	wg.Wait()
	return results, errs
}

// A repeat sale leaves its customer's row as it is (no new row version,
// updated_at kept); a sale dated
// before the customer's first paid sale still moves first_paid_at back.
func TestRepeatSaleLeavesTheCustomerAsItIs(t *testing.T) {
	b := setupLedger(t, "0")
	ctx := context.Background()
	w := b.MustWorld(t, programInput("recurring_percent", "10", "USD", 0, 30))
	type customerRow struct {
		xmin      string
		updatedAt time.Time
		firstPaid time.Time
	}
	read := func(key string) customerRow {
		t.Helper()
		var r customerRow
		if err := b.db.QueryRow(`SELECT xmin::text, updated_at, first_paid_at FROM customers WHERE customer_key = $1`, key).
			Scan(&r.xmin, &r.updatedAt, &r.firstPaid); err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, path := range []struct {
		name   string
		record func(ledger.SaleRequest) (*ledger.SaleResult, error)
	}{
		{"Alone", func(r ledger.SaleRequest) (*ledger.SaleResult, error) { return b.sales.RecordSale(ctx, r) }},
		{"InABatch", func(r ledger.SaleRequest) (*ledger.SaleResult, error) {
			results, errs, _ := b.sales.RecordTogether(ctx, []ledger.SaleRequest{r, sale{txn: r.TransactionID.Value + "-other",
				customerKey: "other-" + r.TransactionID.Value, amount: 1}.request(w.program.ID)})
			return results[0], errs[0]
		}},
	} {
		t.Run(path.name, func(t *testing.T) {
			key := "repeat-" + path.name
			b.MustCustomerKey(t, w, key)
			must := func(s sale) {
				t.Helper()
				if res, err := path.record(s.request(w.program.ID)); err != nil || res.CommissionID == nil {
					t.Fatalf("sale %s: %+v, %v", s.txn, res, err)
				}
			}
			must(sale{txn: key + "-1", customerKey: key, amount: 1000})
			first := read(key)
			if !first.firstPaid.Equal(b.clock.Now()) {
				t.Fatalf("first_paid_at %v after the first sale at %v", first.firstPaid, b.clock.Now())
			}
			b.clock.Add(time.Hour)
			must(sale{txn: key + "-2", customerKey: key, amount: 1000})
			if again := read(key); again != first {
				t.Fatalf("a repeat sale rewrote the customer: %+v, was %+v", again, first)
			}
			earlier := first.firstPaid.Add(-24 * time.Hour)
			must(sale{txn: key + "-0", customerKey: key, amount: 1000, occurredAt: earlier})
			moved := read(key)
			if !moved.firstPaid.Equal(earlier) || moved.xmin == first.xmin || !moved.updatedAt.Equal(b.clock.Now()) {
				t.Fatalf("a sale dated before the first one: %+v, want first_paid_at %v", moved, earlier)
			}
		})
	}
}
