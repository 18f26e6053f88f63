package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
)

// Round trips to Postgres of the hot paths, counted at the driver
// (BEGIN and COMMIT included). A change that adds one fails here: make it
// on purpose, and change the figure with the reason.
const (
	// A sale of a known customer (by key, or a repeat sale by click id):
	// BEGIN, the program with the customer and its facts, the write, COMMIT.
	saleByKeyRoundTrips   = 4
	saleByClickAgainTrips = 4
	// A first sale by click id writes the customer its click brings in
	// its one write (sale_write.go), so it takes as many.
	saleByClickRoundTrips = 4
	// Three first sales by click id in one batch, or three repeat sales of
	// known customers: BEGIN, one read of the three snapshots, one write
	// of the three sales, COMMIT.
	firstSalesBatchTrips  = 4
	repeatSalesBatchTrips = 4
	// A refund: BEGIN, one statement that takes its program's lock and
	// reads its snapshot with its rows locked (the retry check included:
	// it was one more statement, after the locks, until refunds were
	// written as batches), the write, COMMIT. With or without a
	// commission, with or without an amount.
	refundCreditedRoundTrip     = 4
	refundPendingRoundTrips     = 4
	refundUncommissionedTrips   = 4
	refundUncommissionedAmounts = 4
	// Three refunds in one batch (a credited commission, a pending one, a
	// sale without commission) take as many: one read and one write for
	// the batch (it was two or three statements per refund, and two for
	// the batch).
	refundsBatchTrips = 4
	// Refunds of partners without a balance account yet, alone or three
	// in one batch: BEGIN, the read that finds the accounts missing,
	// ROLLBACK, one statement that creates them all, then BEGIN, read,
	// write, COMMIT. A batch took a read, three statements for the
	// account and a write per partner (18 for three).
	refundsNewPartnersTrips = 8
)

func TestHotPathRoundTrips(t *testing.T) {
	t.Parallel()
	db, rt := pgtest.NewCounting(t)
	b := ledgerOn(t, bundleOn(db), "2.5")
	w := b.MustWorld(t, programInput("recurring_percent", "30", "USD", 0, 30))
	ctx := context.Background()
	measure := func(t *testing.T, want int, op func() error) {
		t.Helper()
		rt.Reset()
		if err := op(); err != nil {
			t.Fatal(err)
		}
		if got := rt.Count(); got != want {
			t.Fatalf("%d round trips, want %d:\n%s", got, want, strings.Join(rt.Statements(), "\n"))
		}
	}
	b.MustCustomerKey(t, w, "cust_rt")
	// Steady state: the hot statements are prepared on the connection
	// (a new connection prepares each once, one round trip each).
	warm, _ := b.approved(t, w, 10000)
	b.refund(t, w, ledger.RefundInput{TransactionID: warm, AmountCents: 1000, RefundID: "re_warm"})
	b.refund(t, w, ledger.RefundInput{TransactionID: warm, AmountCents: 1000})

	t.Run("SaleByCustomerKey", func(t *testing.T) {
		measure(t, saleByKeyRoundTrips, func() error {
			_, err := b.sales.RecordSale(ctx, sale{txn: "txn_rt_key", customerKey: "cust_rt", amount: 1000}.request(w.program.ID))
			return err
		})
	})
	t.Run("SaleByClickID", func(t *testing.T) {
		click := b.MustClick(t, w, w.partnerID)
		measure(t, saleByClickRoundTrips, func() error {
			_, err := b.sales.RecordSale(ctx, sale{txn: "txn_rt_click", clickID: click, amount: 1000}.request(w.program.ID))
			return err
		})
		measure(t, saleByClickAgainTrips, func() error {
			_, err := b.sales.RecordSale(ctx, sale{txn: "txn_rt_click_2", clickID: click, amount: 1000}.request(w.program.ID))
			return err
		})
	})
	t.Run("FirstSalesOfClicksInOneBatch", func(t *testing.T) {
		var reqs []ledger.SaleRequest
		for i := 0; i < 3; i++ {
			reqs = append(reqs, sale{txn: "txn_rt_batch_" + strconv.Itoa(i), clickID: b.MustClick(t, w, w.partnerID), amount: 1000}.request(w.program.ID))
		}
		measure(t, firstSalesBatchTrips, func() error {
			_, errs, batched := b.sales.RecordTogether(ctx, reqs)
			if batched != len(reqs) {
				return fmt.Errorf("%d of %d sales batched", batched, len(reqs))
			}
			return errors.Join(errs...)
		})
	})
	t.Run("RepeatSalesOfKnownCustomersInOneBatch", func(t *testing.T) {
		var reqs []ledger.SaleRequest
		for i := 0; i < 3; i++ {
			key := "cust_rt_repeat_" + strconv.Itoa(i)
			b.MustCustomerKey(t, w, key)
			b.MustSale(t, w, sale{txn: "txn_rt_repeat_first_" + strconv.Itoa(i), customerKey: key, amount: 1000})
			reqs = append(reqs, sale{txn: "txn_rt_repeat_" + strconv.Itoa(i), customerKey: key, amount: 1000}.request(w.program.ID))
		}
		measure(t, repeatSalesBatchTrips, func() error {
			_, errs, batched := b.sales.RecordTogether(ctx, reqs)
			if batched != len(reqs) {
				return fmt.Errorf("%d of %d sales batched", batched, len(reqs))
			}
			return errors.Join(errs...)
		})
	})
	t.Run("PartialRefundOfCreditedCommission", func(t *testing.T) {
		txn, _ := b.approved(t, w, 10000)
		measure(t, refundCreditedRoundTrip, func() error {
			_, err := b.refunds.ApplyRefund(ctx, ledger.RefundInput{ProgramID: w.program.ID, TransactionID: txn,
				AmountCents: 1000, RefundID: "re_rt", Source: ledger.SourceAPI})
			return err
		})
	})
	t.Run("RefundOfSaleWithoutCommission", func(t *testing.T) {
		full, _ := b.sold(t, w, 10000)
		partial, _ := b.sold(t, w, 10000)
		b.db.MustExec(`DELETE FROM commissions WHERE sale_id IN (SELECT id FROM sales WHERE processor_event_id IN ($1, $2))`, full, partial)
		measure(t, refundUncommissionedTrips, func() error {
			_, err := b.refunds.ApplyRefund(ctx, ledger.RefundInput{ProgramID: w.program.ID, TransactionID: full, Source: ledger.SourceAPI})
			return err
		})
		measure(t, refundUncommissionedAmounts, func() error {
			_, err := b.refunds.ApplyRefund(ctx, ledger.RefundInput{ProgramID: w.program.ID, TransactionID: partial,
				AmountCents: 1000, Source: ledger.SourceAPI})
			return err
		})
	})
	t.Run("RefundsInOneBatch", func(t *testing.T) {
		credited, _ := b.approved(t, w, 10000)
		pending, _ := b.sold(t, w, 10000)
		bare, _ := b.sold(t, w, 10000)
		b.db.MustExec(`DELETE FROM commissions WHERE sale_id IN (SELECT id FROM sales WHERE processor_event_id = $1)`, bare)
		var ins []ledger.RefundInput
		for _, txn := range []string{credited, pending, bare} {
			ins = append(ins, ledger.RefundInput{ProgramID: w.program.ID, TransactionID: txn, AmountCents: 1000,
				RefundID: "re_rt_batch", Source: ledger.SourceAPI})
		}
		measure(t, refundsBatchTrips, func() error {
			_, errs, batched := b.refunds.ApplyTogether(ctx, ins)
			if batched != len(ins) {
				return fmt.Errorf("%d of %d refunds batched", batched, len(ins))
			}
			return errors.Join(errs...)
		})
	})
	t.Run("RefundsOfPartnersWithoutBalanceAccounts", func(t *testing.T) {
		var ins []ledger.RefundInput
		var partners []int64
		for i := 0; i < 4; i++ {
			p := b.anotherPartner(t, w)
			txn, _ := b.sold(t, p, 10000)
			ins = append(ins, ledger.RefundInput{ProgramID: w.program.ID, TransactionID: txn, AmountCents: 1000, Source: ledger.SourceAPI})
			partners = append(partners, p.partnerID)
		}
		measure(t, refundsNewPartnersTrips, func() error {
			res, err := b.refunds.ApplyRefund(ctx, ins[0])
			if err == nil && res.Status != ledger.RefundRefunded {
				err = fmt.Errorf("lone refund %s, want %s", res.Status, ledger.RefundRefunded)
			}
			return err
		})
		measure(t, refundsNewPartnersTrips, func() error {
			results, errs, batched := b.refunds.ApplyTogether(ctx, ins[1:])
			if batched != len(ins)-1 {
				return fmt.Errorf("%d of %d refunds batched", batched, len(ins)-1)
			}
			for i, res := range results {
				if errs[i] == nil && res.Status != ledger.RefundRefunded {
					errs[i] = fmt.Errorf("refund %d %s, want %s", i, res.Status, ledger.RefundRefunded)
				}
			}
			return errors.Join(errs...)
		})
		if n := b.count(t, `SELECT count(*) FROM balance_accounts WHERE partner_id = ANY ($1)`, pq.Array(partners)); n != len(partners) {
			t.Fatalf("%d balance accounts for the %d partners, want one each", n, len(partners))
		}
	})
	t.Run("PartialRefundOfPendingCommission", func(t *testing.T) {
		txn, _ := b.sold(t, w, 10000)
		measure(t, refundPendingRoundTrips, func() error {
			_, err := b.refunds.ApplyRefund(ctx, ledger.RefundInput{ProgramID: w.program.ID, TransactionID: txn,
				AmountCents: 1000, RefundID: "re_rt", Source: ledger.SourceAPI})
			return err
		})
	})
}

// benchClients is the number of concurrent callers of the Postgres
// benchmarks (16, as the sale-shaped baseline).
const benchClients = 16

// benchPartners is how many partners the benchmarked sales and refunds
// spread over (customer i belongs to partner i % benchPartners).
const benchPartners = 16

// benchWorld is a recurring program (every sale pays) with benchPartners
// enrolled partners and customers whose leads settled, so that each
// benchmarked sale writes a commission.
func benchWorld(b *testing.B, customers int) (*ledgerBundle, []saleWorld, []string) {
	b.Helper()
	lb := ledgerOn(b, bundleOn(pgtest.New(b)), "2.5")
	worlds := []saleWorld{lb.MustWorld(b, programInput("recurring_percent", "30", "USD", 0, 30))}
	for len(worlds) < benchPartners {
		worlds = append(worlds, lb.anotherPartner(b, worlds[0]))
	}
	keys := make([]string, customers)
	for i := range keys {
		keys[i] = "cust_bench_" + strconv.Itoa(i)
		lb.MustCustomerKey(b, worlds[i%benchPartners], keys[i])
	}
	return lb, worlds, keys
}

// anotherPartner enrolls one more partner, with a link, in w's program.
func (b *ledgerBundle) anotherPartner(tb testing.TB, w saleWorld) saleWorld {
	tb.Helper()
	ctx := context.Background()
	n := strconv.FormatInt(worldSeq.Add(1), 10)
	partner, err := b.partners.EnrollPartner(ctx, w.program.ID, "pat"+n+"@partner.example", "Pat")
	if err != nil {
		tb.Fatal(err)
	}
	link, err := b.partners.CreateLink(ctx, w.program.ID, partner.ID, "pat-"+n, true)
	if err != nil {
		tb.Fatal(err)
	}
	return saleWorld{program: w.program, partnerID: partner.ID, linkID: link.ID}
}

// runParallel runs op from benchClients goroutines (on two cores) and
// reports, besides ns/op, the 50th and 99th percentile of one op's
// latency (with every client busy: a closed loop at full load, not a
// fixed arrival rate).
func runParallel(b *testing.B, op func(i int64) error) {
	b.Helper()
	var seq atomic.Int64
	var mu sync.Mutex
	var latencies []time.Duration
	b.SetParallelism((benchClients + 1) / 2)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		defer func() {
			mu.Lock()
			latencies = append(latencies, mine...)
			mu.Unlock()
		}()
		for pb.Next() {
			start := time.Now()
			if err := op(seq.Add(1)); err != nil {
				b.Error(err)
				return
			}
			mine = append(mine, time.Since(start))
		}
	})
	b.StopTimer()
	reportPercentiles(b, latencies)
}

func reportPercentiles(b *testing.B, latencies []time.Duration) {
	if len(latencies) == 0 {
		return
	}
	slices.Sort(latencies)
	at := func(p float64) float64 {
		return float64(latencies[int(p*float64(len(latencies)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

// BenchmarkRecordSale records attributed sales by customer key, each with
// its commission and platform fee, from 16 clients (on two cores).
func BenchmarkRecordSale(b *testing.B) {
	lb, worlds, keys := benchWorld(b, 64)
	w := worlds[0]
	ctx := context.Background()
	runParallel(b, func(i int64) error {
		req := sale{txn: "txn_bench_" + strconv.FormatInt(i, 10), customerKey: keys[i%int64(len(keys))], amount: 1999}
		_, err := lb.sales.RecordSale(ctx, req.request(w.program.ID))
		return err
	})
}

// BenchmarkRecordSaleAlone records sales one after another from one
// caller, so that each is a batch of its own: what a sale pays for its
// transaction and its statements when the rate is low (make bench's
// fixed-rate sales run batches of about three).
func BenchmarkRecordSaleAlone(b *testing.B) {
	lb, worlds, keys := benchWorld(b, 64)
	w := worlds[0]
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		req := sale{txn: "txn_alone_" + strconv.Itoa(i), customerKey: keys[i%len(keys)], amount: 1999}
		if _, err := lb.sales.RecordSale(ctx, req.request(w.program.ID)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecordSaleByClickAlone records sales by click id one after
// another, each a batch of its own, as make bench's fixed-rate sales do:
// first is each click's first sale (it makes the click's customer and
// its conversion), repeat a later sale of a click that has its customer.
// The fixed-rate phase's opening seconds are first sales, the rest
// repeats.
func BenchmarkRecordSaleByClickAlone(b *testing.B) {
	lb, worlds, _ := benchWorld(b, 0)
	w := worlds[0]
	ctx := context.Background()
	var seq int
	record := func(b *testing.B, click string) {
		seq++
		req := sale{txn: "txn_click_" + strconv.Itoa(seq), clickID: click, amount: 1999}
		if _, err := lb.sales.RecordSale(ctx, req.request(w.program.ID)); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("first", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			click := lb.mustClickFrom(b, w, w.partnerID, w.linkID, "", lb.clock.Now().Add(-time.Minute), false)
			b.StartTimer()
			record(b, click)
		}
	})
	b.Run("repeat", func(b *testing.B) {
		clicks := make([]string, 64)
		for i := range clicks {
			clicks[i] = lb.mustClickFrom(b, w, w.partnerID, w.linkID, "", lb.clock.Now().Add(-time.Minute), false)
			record(b, clicks[i])
		}
		b.ResetTimer()
		for i := range b.N {
			record(b, clicks[i%len(clicks)])
		}
	})
}

// BenchmarkRawSaleTransaction is the ceiling BenchmarkRecordSale is
// measured against: the sale-shaped transaction (lock the
// partner's balance, insert a sale, insert its commission, add to the
// balance) in plain SQL, over the same 16 partners, from 16 clients.
func BenchmarkRawSaleTransaction(b *testing.B) {
	lb, worlds, _ := benchWorld(b, 0)
	ctx := context.Background()
	for _, w := range worlds {
		if _, err := lb.db.Exec(`INSERT INTO balance_accounts (partner_id, currency) VALUES ($1, 'USD')`, w.partnerID); err != nil {
			b.Fatal(err)
		}
	}
	runParallel(b, func(i int64) error {
		w := worlds[i%benchPartners]
		tx, err := lb.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		var saleID, commissionID int64
		if _, err := tx.ExecContext(ctx, `SELECT 1 FROM balance_accounts WHERE partner_id = $1 AND currency = 'USD' FOR NO KEY UPDATE`, w.partnerID); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `INSERT INTO sales (program_id, partner_id, processor_event_id, amount_cents, currency, source, occurred_at)
			VALUES ($1, $2, $3, 1999, 'USD', 'api', now()) RETURNING id`, w.program.ID, w.partnerID, "raw_"+strconv.FormatInt(i, 10)).Scan(&saleID); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `INSERT INTO commissions (program_id, partner_id, sale_id, currency, original_minor, amount_minor, status, approve_after)
			VALUES ($1, $2, $3, 'USD', 600, 600, 'pending', now()) RETURNING id`, w.program.ID, w.partnerID, saleID).Scan(&commissionID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO balance_entries (partner_id, currency, kind, amount_minor, commission_id, program_id)
			VALUES ($1, 'USD', 'credit', 600, $2, $3)`, w.partnerID, commissionID, w.program.ID); err != nil {
			return err
		}
		return tx.Commit()
	})
}

// refundableSales records a large sale for each customer key and approves
// its commission, so that every refund of it deducts from the balance;
// it returns their transaction ids.
func refundableSales(b *testing.B, lb *ledgerBundle, w saleWorld, keys []string) []string {
	b.Helper()
	ctx := context.Background()
	txns := make([]string, len(keys))
	for i, key := range keys {
		txns[i] = "txn_refunded_" + strconv.Itoa(i)
		res, err := lb.sales.RecordSale(ctx, sale{txn: txns[i], customerKey: key, amount: 1_000_000_000}.request(w.program.ID))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := lb.balances.ApproveCommission(ctx, *res.CommissionID); err != nil {
			b.Fatal(err)
		}
	}
	return txns
}

// BenchmarkRefund applies partial refunds, each with its own refund id, to
// credited commissions of 64 sales of 16 partners (every refund deducts
// from its partner's balance), from 16 clients.
func BenchmarkRefund(b *testing.B) {
	lb, worlds, keys := benchWorld(b, 64)
	w := worlds[0]
	ctx := context.Background()
	txns := refundableSales(b, lb, w, keys)
	runParallel(b, func(i int64) error {
		_, err := lb.refunds.ApplyRefund(ctx, ledger.RefundInput{ProgramID: w.program.ID, TransactionID: txns[i%int64(len(txns))],
			AmountCents: 7, RefundID: "re_bench_" + strconv.FormatInt(i, 10), Source: ledger.SourceAPI})
		return err
	})
}

// BenchmarkRefundAlone applies partial refunds one after another from
// one caller, each a batch of its own, to sales whose commissions were
// removed: a refund that changes no commission, as most of make bench's.
func BenchmarkRefundAlone(b *testing.B) {
	lb, worlds, keys := benchWorld(b, 64)
	w := worlds[0]
	ctx := context.Background()
	txns := refundableSales(b, lb, w, keys)
	lb.db.MustExec(`DELETE FROM balance_entries WHERE program_id = $1`, w.program.ID)
	lb.db.MustExec(`DELETE FROM commissions WHERE program_id = $1`, w.program.ID)
	b.ResetTimer()
	for i := range b.N {
		if _, err := lb.refunds.ApplyRefund(ctx, ledger.RefundInput{ProgramID: w.program.ID, TransactionID: txns[i%len(txns)],
			AmountCents: 7, RefundID: "re_alone_" + strconv.Itoa(i), Source: ledger.SourceAPI}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAuthenticateProgramKey is the program-key lookup of every sale
// and refund call (one indexed read; it is not cached, so that a
// regenerated key is refused on every edge at once).
func BenchmarkAuthenticateProgramKey(b *testing.B) {
	lb, worlds, _ := benchWorld(b, 0)
	ctx := context.Background()
	key, err := lb.programs.RegenerateProgramKey(ctx, worlds[0].program.ID, ledger.LiveKey)
	if err != nil {
		b.Fatal(err)
	}
	runParallel(b, func(int64) error {
		_, err := lb.programs.AuthenticateProgramKey(ctx, key.APIKey)
		return err
	})
}

// benchPrograms is benchPartners programs (make bench's shape: each
// brand its own program, partner and customers), with customers customer
// keys spread over them: key i is of program i % benchPartners.
func benchPrograms(b *testing.B, customers int) (*ledgerBundle, []saleWorld, []string) {
	b.Helper()
	lb := ledgerOn(b, bundleOn(pgtest.New(b)), "2.5")
	worlds := make([]saleWorld, benchPartners)
	for i := range worlds {
		worlds[i] = lb.MustWorld(b, programInput("recurring_percent", "30", "USD", 0, 30))
	}
	keys := make([]string, customers)
	for i := range keys {
		keys[i] = "cust_bench_" + strconv.Itoa(i)
		lb.MustCustomerKey(b, worlds[i%benchPartners], keys[i])
	}
	return lb, worlds, keys
}

// BenchmarkRefundManyPrograms is BenchmarkRefund over benchPartners
// programs, each refund taking its program's refund lock.
func BenchmarkRefundManyPrograms(b *testing.B) {
	lb, worlds, keys := benchPrograms(b, 64)
	ctx := context.Background()
	txns := make([]string, len(keys))
	for i, key := range keys {
		txns[i] = "txn_refunded_" + strconv.Itoa(i)
		res, err := lb.sales.RecordSale(ctx, sale{txn: txns[i], customerKey: key, amount: 1_000_000_000}.request(worlds[i%benchPartners].program.ID))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := lb.balances.ApproveCommission(ctx, *res.CommissionID); err != nil {
			b.Fatal(err)
		}
	}
	runParallel(b, func(i int64) error {
		n := i % int64(len(txns))
		_, err := lb.refunds.ApplyRefund(ctx, ledger.RefundInput{ProgramID: worlds[n%benchPartners].program.ID, TransactionID: txns[n],
			AmountCents: 7, RefundID: "re_bench_" + strconv.FormatInt(i, 10), Source: ledger.SourceAPI})
		return err
	})
}
