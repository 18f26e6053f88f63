package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
)

// lockedBuffer is a log destination safe for concurrent sales.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// loggedSales is a sale service over a fresh database whose warnings are
// kept, to tell whether a sale's write failed and was tried again with
// less.
func loggedSales(t *testing.T) (*ledgerBundle, *postgres.SaleService, *lockedBuffer) {
	t.Helper()
	b := setupLedger(t, "0")
	logs := &lockedBuffer{}
	sales := postgres.NewSaleService(b.db.DB, postgres.SaleOptions{PlatformFeePercent: decimal.Zero,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	return b, sales, logs
}

// assertWrittenWhole fails when a sale's write failed and the sale was
// written again with less (recordAlone warns when it is).
func assertWrittenWhole(t *testing.T, logs *lockedBuffer) {
	t.Helper()
	if strings.Contains(logs.String(), "sale write failed") {
		t.Fatalf("a sale's write failed:\n%s", logs.String())
	}
}

// TestFirstSalesOfOneClickRace sends first sales of several clicks at
// once, many per click, so that batches of them race to create each
// click's customer in the one write of a first sale (sale_write.go). Each
// click gets one customer and one commission, every sale is recorded,
// and no write fails (a failed write logs a warning).
func TestFirstSalesOfOneClickRace(t *testing.T) {
	b, sales, logs := loggedSales(t)
	w := b.MustWorld(t, programInput("fixed", "10", "USD", 0, 30))
	const clicks, perClick = 4, 12
	var ids []string
	for range clicks {
		ids = append(ids, b.MustClick(t, w, w.partnerID))
	}
	var wg sync.WaitGroup
	errs := make([]error, clicks*perClick)
	start := make(chan struct{})
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = sales.RecordSale(context.Background(),
				sale{txn: fmt.Sprintf("race_%d", i), clickID: ids[i%clicks], amount: 500}.request(w.program.ID))
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("sale %d: %v", i, err)
		}
	}
	for query, want := range map[string]int{
		`SELECT count(*) FROM customers WHERE program_id = $1`:                           clicks,
		`SELECT count(*) FROM sales WHERE program_id = $1`:                               clicks * perClick,
		`SELECT count(*) FROM commissions WHERE program_id = $1`:                         clicks,
		`SELECT count(*) FROM customers WHERE program_id = $1 AND status = 'conversion'`: clicks,
	} {
		if n := b.count(t, query, w.program.ID); n != want {
			t.Fatalf("%s = %d, want %d", query, n, want)
		}
	}
	assertWrittenWhole(t, logs)
}

// TestFirstSaleThatLosesTheRaceForItsCustomer: while another transaction
// holds the customer it just created for a click, a first sale of that
// click, recorded alone, waits in its write for the customer's unique key;
// when the other transaction commits, the write fails, and the sale is
// recorded again, as a sale of that customer.
func TestFirstSaleThatLosesTheRaceForItsCustomer(t *testing.T) {
	b, sales, logs := loggedSales(t)
	w := b.MustWorld(t, programInput("fixed", "10", "USD", 0, 30))
	click := b.MustClick(t, w, w.partnerID)
	other := b.db.MustBegin()
	defer other.Rollback()
	other.MustExec(`INSERT INTO customers (program_id, partner_id, link_id, click_id, click_occurred_at)
		SELECT program_id, partner_id, link_id, click_id, occurred_at FROM clicks WHERE click_id = $1`, click)
	type answer struct {
		res *ledger.SaleResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := sales.RecordSale(context.Background(), sale{txn: "race_lost", clickID: click, amount: 500}.request(w.program.ID))
		done <- answer{res, err}
	}()
	b.waitForLockWait(t, "the sale never waited for the other transaction's customer")
	if err := other.Commit(); err != nil {
		t.Fatal(err)
	}
	got := <-done
	if got.err != nil || got.res.CommissionID == nil {
		t.Fatalf("sale: %+v, %v", got.res, got.err)
	}
	if n := b.count(t, `SELECT count(*) FROM customers WHERE click_id = $1`, click); n != 1 {
		t.Fatalf("%d customers of the click, want 1", n)
	}
	if n := b.count(t, `SELECT count(*) FROM sales s JOIN customers c ON c.id = s.customer_id WHERE c.click_id = $1`, click); n != 1 {
		t.Fatalf("%d sales of the click's customer, want 1", n)
	}
	assertWrittenWhole(t, logs)
}
