package postgres_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
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
	// its one write (salefirst.go), so it takes as many.
	saleByClickRoundTrips = 4
	// Three first sales by click id in one batch: BEGIN, then each its
	// read and its write, with no savepoint (a refusal writes nothing),
	// then COMMIT.
	firstSalesBatchTrips = 2 + 3*2
	// Three repeat sales of known customers in one batch: BEGIN, each its
	// read, then one write for the three (salemulti.go), then COMMIT.
	repeatSalesBatchTrips   = 2 + 3 + 1
	refundCreditedRoundTrip = 5
	refundPendingRoundTrips = 5
	// A refund of a sale without commission: the statement that finds the
	// sale locks it, then the write; with an amount, one more reads the
	// sale's earlier refunds once it is locked (the retry check).
	refundUncommissionedTrips   = 4
	refundUncommissionedAmounts = 5
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
		if _, err := tx.ExecContext(ctx, `INSERT INTO balance_entries (partner_id, currency, kind, amount_minor, commission_id)
			VALUES ($1, 'USD', 'credit', 600, $2)`, w.partnerID, commissionID); err != nil {
			return err
		}
		return tx.Commit()
	})
}

// BenchmarkRefund applies partial refunds, each with its own refund id, to
// credited commissions of 64 sales of 16 partners (every refund deducts
// from its partner's balance), from 16 clients.
func BenchmarkRefund(b *testing.B) {
	lb, worlds, keys := benchWorld(b, 64)
	w := worlds[0]
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
	runParallel(b, func(i int64) error {
		_, err := lb.refunds.ApplyRefund(ctx, ledger.RefundInput{ProgramID: w.program.ID, TransactionID: txns[i%int64(len(txns))],
			AmountCents: 7, RefundID: "re_bench_" + strconv.FormatInt(i, 10), Source: ledger.SourceAPI})
		return err
	})
}

// TestLeanSaleMatchesCarefulSale records the same sales on the lean path
// (RecordSale) and on the careful path (savepoints), each in a program of
// its own with a webhook endpoint, and compares every row they write and
// every webhook payload, ids aside.
func TestLeanSaleMatchesCarefulSale(t *testing.T) {
	b := setupLedger(t, "2.5")
	ctx := context.Background()
	hooks := postgres.NewWebhookService(b.db.DB, nil)
	type path struct {
		name   string
		record func(context.Context, ledger.SaleRequest) (*ledger.SaleResult, error)
	}
	paths := []path{{"lean", b.sales.RecordSale}, {"careful", b.sales.RecordSaleCareful}}
	// A partner enrolled elsewhere only: a sale by its click is refused.
	elsewhere := b.MustWorld(t, programInput("percent", "10", "USD", 0, 30))
	programs := []ledger.ProgramInput{
		programInput("percent", "12.5", "EUR", 0, 30),
		programInput("fixed", "9.995", "EUR", 0, 30),
		programInput("recurring_percent", "30", "USD", 2, 0),
	}
	for pi, in := range programs {
		var snapshots [2]string
		for i, p := range paths {
			w := b.MustWorld(t, in)
			if _, err := hooks.CreateEndpoint(ctx, w.program.ID, ledger.WebhookInput{
				URL: ledger.Some("https://93.184.215.14/hooks"), Events: ledger.Some(ledger.WebhookEventTypes)}); err != nil {
				t.Fatal(err)
			}
			key := "cust_" + p.name + strconv.Itoa(pi)
			b.MustCustomerKey(t, w, key)
			click := b.MustClick(t, w, w.partnerID)
			orphan := b.MustClick(t, w, 0)
			stray := b.MustClick(t, w, w.partnerID)
			b.db.MustExec(`UPDATE clicks SET partner_id = $1 WHERE click_id = $2`, elsewhere.partnerID, stray)
			txn := p.name + strconv.Itoa(pi)
			sales := []sale{
				{txn: txn + "_key1", customerKey: key, amount: 333, currency: "EUR"},
				{txn: txn + "_key2", customerKey: key, amount: 1999},
				{txn: txn + "_click", clickID: click, amount: 199999, currency: "VND"},
				{txn: txn + "_orphan", clickID: orphan, amount: 500},
				{txn: txn + "_stray", clickID: stray, amount: 700},
				{txn: txn + "_click2", clickID: click, amount: 800},
				{txn: txn + "_orphan2", clickID: orphan, amount: 900},
				{txn: txn + "_key1", customerKey: key, amount: 333},
			}
			var answers []string
			for _, s := range sales {
				res, err := p.record(ctx, s.request(w.program.ID))
				answers = append(answers, describeSale(res, err))
			}
			snapshots[i] = strings.Join(answers, "\n") + "\n" + b.saleSnapshot(t, w)
		}
		if snapshots[0] != snapshots[1] {
			t.Fatalf("program %d: lean path:\n%s\ncareful path:\n%s", pi, snapshots[0], snapshots[1])
		}
	}
}

// describeSale is a sale call's answer without ids.
func describeSale(res *ledger.SaleResult, err error) string {
	if err != nil {
		return "error " + ledger.ErrorCode(err) + " " + ledger.ErrorMessage(err)
	}
	return fmt.Sprintf("commission %v test %v message %q", res.CommissionID != nil, res.Test, res.Message)
}

// saleSnapshot renders what the sales of w's program wrote, ids and
// transaction ids aside, in a stable order.
func (b *ledgerBundle) saleSnapshot(tb testing.TB, w saleWorld) string {
	tb.Helper()
	var parts []string
	for _, q := range []string{
		`SELECT jsonb_agg(to_jsonb(s) - 'id' - 'program_id' - 'customer_id' - 'partner_id' - 'processor_event_id' - 'click_id' ORDER BY s.id)
			FROM sales s WHERE program_id = $1`,
		`SELECT jsonb_agg(to_jsonb(c) - 'id' - 'program_id' - 'partner_id' - 'sale_id' - 'customer_id' ORDER BY c.id)
			FROM commissions c WHERE program_id = $1`,
		`SELECT jsonb_agg(to_jsonb(f) - 'id' - 'program_id' - 'sale_id' ORDER BY f.id) FROM platform_fees f WHERE program_id = $1`,
		`SELECT jsonb_agg(to_jsonb(l) - 'id' - 'program_id' - 'reference' ORDER BY l.id) FROM tracking_logs l WHERE program_id = $1`,
		`SELECT jsonb_agg(to_jsonb(c) - 'id' - 'program_id' - 'partner_id' - 'link_id' - 'click_id' - 'customer_key' - 'created_at' ORDER BY c.id)
			FROM customers c WHERE program_id = $1`,
		`SELECT jsonb_agg(jsonb_build_array(c.partner_id IS NULL, c.converted) ORDER BY c.partner_id IS NULL, c.converted)
			FROM clicks c WHERE program_id = $1`,
	} {
		var s sql.NullString
		if err := b.db.QueryRow(q, w.program.ID).Scan(&s); err != nil {
			tb.Fatalf("%s: %v", q, err)
		}
		parts = append(parts, s.String)
	}
	rows, err := b.db.Query(`SELECT o.task_type, o.queue, o.payload, o.created_at FROM outbox o
		WHERE o.payload->>'endpoint_id' IN (SELECT id::text FROM webhook_endpoints WHERE program_id = $1) ORDER BY o.id`, w.program.ID)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var taskType, queue string
		var payload []byte
		var created time.Time
		if err := rows.Scan(&taskType, &queue, &payload, &created); err != nil {
			tb.Fatal(err)
		}
		var msg ledger.WebhookMessage
		var event map[string]any
		if err := json.Unmarshal(payload, &msg); err != nil {
			tb.Fatal(err)
		}
		if err := json.Unmarshal([]byte(msg.Body), &event); err != nil {
			tb.Fatal(err)
		}
		data := event["data"].(map[string]any)
		for _, id := range []string{"sale_id", "program_id", "partner_id", "customer_id", "commission_id", "click_id", "transaction_id"} {
			if v, ok := data[id]; ok && v != nil {
				data[id] = "<id>"
			}
		}
		normal, _ := json.Marshal(event)
		parts = append(parts, fmt.Sprintf("%s %s %s %s %s", taskType, queue, msg.EventType, created.UTC().Format(time.RFC3339Nano), normal))
	}
	return strings.Join(parts, "\n")
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
