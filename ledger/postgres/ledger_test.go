package postgres_test

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
)

// testClock is a settable clock for the services under test.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *testClock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// ledgerBundle is a database with the ledger services over it.
type ledgerBundle struct {
	*testBundle
	clock       *testClock
	sales       *postgres.SaleService
	refunds     *postgres.RefundService
	balances    *postgres.BalanceService
	workspaceID int64
}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// setupLedger returns the ledger services over a fresh database, with a
// platform fee of feePercent and no relay (outbox rows stay for the
// sweep; tests that relay build their own refund service).
func setupLedger(t *testing.T, feePercent string) *ledgerBundle {
	t.Helper()
	return ledgerOn(t, setup(t), feePercent)
}

// ledgerOn returns the ledger services over the bundle's database, as
// setupLedger does, for benchmarks and tests that bring their own
// database.
func ledgerOn(tb testing.TB, b *testBundle, feePercent string) *ledgerBundle {
	tb.Helper()
	clock := &testClock{t: time.Now().UTC().Truncate(time.Millisecond)}
	b.db.Now = clock.Now
	ws, err := b.accounts.CreateWorkspace(context.Background(), "Acme Inc", "owner@acme.example")
	if err != nil {
		tb.Fatal(err)
	}
	return &ledgerBundle{
		testBundle: b,
		clock:      clock,
		sales: postgres.NewSaleService(b.db.DB, postgres.SaleOptions{
			PlatformFeePercent: decimal.RequireFromString(feePercent), Logger: discard}),
		refunds:     postgres.NewRefundService(b.db.DB, nil, discard),
		balances:    postgres.NewBalanceService(b.db.DB),
		workspaceID: ws.ID,
	}
}

// saleWorld is a program with one enrolled partner and its link.
type saleWorld struct {
	program   *ledger.Program
	partnerID int64
	linkID    int64
}

var worldSeq atomic.Int64

// programInput describes a program: commission type and rate, currency,
// duration and hold.
func programInput(typ, rate, currency string, months, holdDays int64) ledger.ProgramInput {
	return ledger.ProgramInput{
		Name:           ledger.Some("Acme"),
		Domain:         ledger.Some("acme.example"),
		CommissionType: ledger.Some(typ),
		CommissionRate: ledger.Some(decimal.RequireFromString(rate)),
		Currency:       ledger.Some(currency),
		DurationMonths: ledger.Some(months),
		HoldDays:       ledger.Some(holdDays),
	}
}

// MustWorld creates a program, an enrolled partner and a link.
func (b *ledgerBundle) MustWorld(tb testing.TB, in ledger.ProgramInput) saleWorld {
	tb.Helper()
	ctx := context.Background()
	p, err := b.programs.CreateProgram(ctx, b.workspaceID, in)
	if err != nil {
		tb.Fatal(err)
	}
	n := strconv.FormatInt(worldSeq.Add(1), 10)
	partner, err := b.partners.EnrollPartner(ctx, p.ID, "pat"+n+"@partner.example", "Pat")
	if err != nil {
		tb.Fatal(err)
	}
	link, err := b.partners.CreateLink(ctx, p.ID, partner.ID, "pat-"+n, true)
	if err != nil {
		tb.Fatal(err)
	}
	return saleWorld{program: p, partnerID: partner.ID, linkID: link.ID}
}

// MustClick stores a click on the world's link (partnerID 0: a click whose
// partner is gone) and returns its id.
func (b *ledgerBundle) MustClick(tb testing.TB, w saleWorld, partnerID int64) string {
	tb.Helper()
	id := ledger.NewClickID(b.clock.Now())
	at, _ := ledger.ClickTime(id)
	var partner *int64
	if partnerID != 0 {
		partner = &partnerID
	}
	if _, err := b.db.Exec(`INSERT INTO clicks (click_id, occurred_at, program_id, partner_id, link_id) VALUES ($1, $2, $3, $4, $5)`,
		id, at, w.program.ID, partner, w.linkID); err != nil {
		tb.Fatal(err)
	}
	return id
}

// MustCustomerKey stores a customer of the world's partner whose lead
// settled with key (what the lead endpoint does) and returns its id.
func (b *ledgerBundle) MustCustomerKey(tb testing.TB, w saleWorld, key string) int64 {
	tb.Helper()
	click := b.MustClick(tb, w, w.partnerID)
	at, _ := ledger.ClickTime(click)
	var id int64
	if err := b.db.QueryRow(`
		INSERT INTO customers (program_id, partner_id, link_id, click_id, click_occurred_at, customer_key, status)
		VALUES ($1, $2, $3, $4, $5, $6, 'lead') RETURNING id`,
		w.program.ID, w.partnerID, w.linkID, click, at, key).Scan(&id); err != nil {
		tb.Fatal(err)
	}
	return id
}

// sale is a sale call by click id or customer key.
type sale struct {
	txn, clickID, customerKey, currency string
	amount                              int64
	occurredAt                          time.Time
}

func (s sale) request(programID int64) ledger.SaleRequest {
	r := ledger.SaleRequest{ProgramID: programID, TransactionID: ledger.Some(s.txn), AmountCents: ledger.Some(s.amount)}
	if s.clickID != "" {
		r.ClickID = ledger.Some(s.clickID)
	}
	if s.customerKey != "" {
		r.CustomerKey = ledger.Some(s.customerKey)
	}
	if s.currency != "" {
		r.Currency = ledger.Some(s.currency)
	}
	if !s.occurredAt.IsZero() {
		r.OccurredAt = ledger.Some(s.occurredAt.Format(time.RFC3339Nano))
	}
	return r
}

// MustSale records a sale that must earn a commission and returns it.
func (b *ledgerBundle) MustSale(tb testing.TB, w saleWorld, s sale) *ledger.SaleResult {
	tb.Helper()
	res, err := b.sales.RecordSale(context.Background(), s.request(w.program.ID))
	if err != nil {
		tb.Fatalf("RecordSale(%s): %v", s.txn, err)
	}
	if res.CommissionID == nil {
		tb.Fatalf("RecordSale(%s): no commission: %s", s.txn, res.Message)
	}
	return res
}

// MustCommission reads a commission.
func (b *ledgerBundle) MustCommission(tb testing.TB, id int64) *ledger.Commission {
	tb.Helper()
	c, err := b.balances.Commission(context.Background(), id)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// balance is a partner's balance in a currency, from the entries.
func (b *ledgerBundle) balance(tb testing.TB, partnerID int64, c ledger.Currency) int64 {
	tb.Helper()
	var sum int64
	if err := b.db.QueryRow(`SELECT COALESCE(SUM(amount_minor), 0) FROM balance_entries WHERE partner_id = $1 AND currency = $2`,
		partnerID, string(c)).Scan(&sum); err != nil {
		tb.Fatal(err)
	}
	return sum
}

// count runs a SELECT count(*) … and returns the count.
func (b *ledgerBundle) count(tb testing.TB, query string, args ...any) int {
	tb.Helper()
	var n int
	if err := b.db.QueryRow(query, args...).Scan(&n); err != nil {
		tb.Fatalf("%s: %v", query, err)
	}
	return n
}

func assertCode(tb testing.TB, err error, code, msg string) {
	tb.Helper()
	if ledger.ErrorCode(err) != code || ledger.ErrorMessage(err) != msg {
		tb.Fatalf("err = %v, want %s %q", err, code, msg)
	}
}

// waitForLockWait waits until a session of the test's database waits for
// a lock (a call in flight has met another transaction's row), and fails
// with why after ten seconds.
func (b *ledgerBundle) waitForLockWait(tb testing.TB, why string) {
	tb.Helper()
	for deadline := time.Now().Add(10 * time.Second); b.count(tb, `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock'`) == 0; {
		if time.Now().After(deadline) {
			tb.Fatal(why)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
