package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/stripetest"
	"github.com/partnertrack/partnertrack/ratelimit"
	"github.com/partnertrack/partnertrack/workers/redistest"
)

// recorderFunc is a function-field ledger.ClickRecorder.
type recorderFunc func(ctx context.Context, c *ledger.Click) error

func (f recorderFunc) RecordClick(ctx context.Context, c *ledger.Click) error { return f(ctx, c) }

type syntheticBundle struct {
	*ledgerBundle
	store     *postgres.SyntheticStore
	synthetic *ledger.Synthetic
	readiness *postgres.ReadinessService
}

// setupSynthetic runs the chain over the real lead and sale services, the
// traffic store's link lookup and batch write (the clicks worker's), and
// the chain's cap in a Redis namespace of the test.
func setupSynthetic(t *testing.T) *syntheticBundle {
	b := &syntheticBundle{ledgerBundle: setupLedger(t, "3")}
	rdb := redistest.Client(t)
	ns := redistest.Namespace(t, rdb)
	traffic := postgres.NewTrafficStore(b.db.DB)
	b.store = postgres.NewSyntheticStore(b.db.DB)
	b.readiness = postgres.NewReadinessService(b.db.DB)
	b.synthetic = &ledger.Synthetic{
		Store: b.store,
		Cap:   ratelimit.NewCap(rdb, ns.Key("cap:"), ledger.ChainCapRuns, ledger.ChainCapWindow, b.clock.Now),
		Links: traffic,
		Clicks: recorderFunc(func(ctx context.Context, c *ledger.Click) error {
			_, err := traffic.WriteClicks(ctx, []ledger.Click{*c})
			return err
		}),
		Leads: postgres.NewLeadService(b.db.DB, nil),
		Sales: b.sales,
		Now:   b.clock.Now,
	}
	return b
}

func TestSyntheticChainNeverPaysOrShows(t *testing.T) {
	b := setupSynthetic(t)
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "30", "EUR", 0, 30))

	run, err := b.synthetic.RunChain(ctx, w.program.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := ledger.ChainVerdicts{Click: ledger.VerdictAttributed, Lead: ledger.VerdictAttributed, Sale: ledger.VerdictAttributed}
	if run.Verdict != want || !run.Verdict.Attributed() || run.ID == 0 || run.ClickID == "" || run.LeadID == nil || run.SaleID == nil {
		t.Fatalf("run %+v", run)
	}
	if run.CustomerKey != ledger.SyntheticChainPrefix+run.ClickID || run.TransactionID != run.CustomerKey {
		t.Fatalf("keys %q %q", run.CustomerKey, run.TransactionID)
	}
	fx, err := b.store.EnsureFixture(ctx, w.program.ID)
	if err != nil {
		t.Fatal(err)
	}
	if run.ShortCode != fx.Code {
		t.Fatalf("short code %q, fixture %q", run.ShortCode, fx.Code)
	}
	// Every row the chain made is a test row of the fixture partner.
	checks := []struct {
		desc  string
		query string
		args  []any
		want  int
	}{
		{"a test click of the fixture partner", `SELECT count(*) FROM clicks WHERE click_id = $1 AND is_test AND partner_id = $2`, []any{run.ClickID, fx.PartnerID}, 1},
		{"a test customer with the chain's key", `SELECT count(*) FROM customers WHERE customer_key = $1 AND is_test AND status = 'lead'`, []any{run.CustomerKey}, 1},
		{"a settled test lead", `SELECT count(*) FROM leads WHERE id = $1 AND is_test AND settled_at IS NOT NULL AND partner_id = $2`, []any{*run.LeadID, fx.PartnerID}, 1},
		{"an attributed test sale in the program currency", `SELECT count(*) FROM sales WHERE id = $1 AND is_test AND partner_id = $2 AND currency = 'EUR' AND amount_cents = 100`, []any{*run.SaleID, fx.PartnerID}, 1},
		{"no commission", `SELECT count(*) FROM commissions WHERE program_id = $1`, []any{w.program.ID}, 0},
		{"no platform fee", `SELECT count(*) FROM platform_fees WHERE program_id = $1`, []any{w.program.ID}, 0},
		{"its tracking logs are the chain's", `SELECT count(*) FROM tracking_logs WHERE program_id = $1 AND source = 'synthetic_chain' AND is_test`, []any{w.program.ID}, 2},
		{"no other tracking logs", `SELECT count(*) FROM tracking_logs WHERE program_id = $1 AND source <> 'synthetic_chain'`, []any{w.program.ID}, 0},
		{"one recorded run", `SELECT count(*) FROM synthetic_chains WHERE program_id = $1 AND sale_verdict = 'attributed'`, []any{w.program.ID}, 1},
	}
	for _, c := range checks {
		if got := b.count(t, c.query, c.args...); got != c.want {
			t.Errorf("%s: %d rows, want %d", c.desc, got, c.want)
		}
	}
	// The listing shows none of it.
	page, err := postgres.NewEventService(b.db.DB).TrackingEvents(ctx, ledger.EventQuery{ProgramID: w.program.ID, Page: 1, PageSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != 0 {
		t.Fatalf("listing shows %d events of the chain", page.Total)
	}
	// Readiness sees the chain only as the live gate's input.
	f, err := b.readiness.ReadinessFacts(ctx, w.program.ID, b.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if f.LastChain == nil || f.LastChain.ID != run.ID || f.LastChain.Verdict != want || f.LastLeadAt != nil || f.LastSaleAt != nil ||
		f.LastClickAt != nil || f.ServerSaleAt != nil || f.KeyUsedAt != nil || f.Counts24h != (ledger.EventCounts{}) || f.RealAttributedSale {
		t.Fatalf("readiness facts after a chain: %+v", f)
	}
}

func TestSyntheticChainCap(t *testing.T) {
	b := setupSynthetic(t)
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "30", "USD", 0, 30))
	other := b.MustWorld(t, programInput("percent", "30", "USD", 0, 30))
	for i := 0; i < ledger.ChainCapRuns; i++ {
		if _, err := b.synthetic.RunChain(ctx, w.program.ID); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		b.clock.Add(time.Minute)
	}
	// The fixture is refreshed before the cap refuses the 11th run.
	fx, _ := b.store.EnsureFixture(ctx, w.program.ID)
	b.db.Exec(`UPDATE links SET active = false WHERE id = $1`, fx.LinkID)
	_, err := b.synthetic.RunChain(ctx, w.program.ID)
	le, _ := err.(*ledger.Error)
	if le == nil || le.Code != ledger.ERateLimited || le.Message != ledger.MsgChainCap || le.Details["retry_after_seconds"] != 50*60 {
		t.Fatalf("11th run: %#v", err)
	}
	if got := b.count(t, `SELECT count(*) FROM links WHERE id = $1 AND active`, fx.LinkID); got != 1 {
		t.Fatal("the refused run did not refresh the fixture first")
	}
	if got := b.count(t, `SELECT count(*) FROM synthetic_chains WHERE program_id = $1`, w.program.ID); got != ledger.ChainCapRuns {
		t.Fatalf("%d runs recorded", got)
	}
	// Another program has its own cap; an hour after the first run one
	// slot opens.
	if _, err := b.synthetic.RunChain(ctx, other.program.ID); err != nil {
		t.Fatal(err)
	}
	b.clock.Add(50 * time.Minute)
	if _, err := b.synthetic.RunChain(ctx, w.program.ID); err != nil {
		t.Fatalf("run after the window slid: %v", err)
	}
}

func TestSyntheticChainVerdicts(t *testing.T) {
	b := setupSynthetic(t)
	ctx := context.Background()

	t.Run("the lead is refused: the sale stays pending", func(t *testing.T) {
		w := b.MustWorld(t, programInput("percent", "30", "USD", 0, 30))
		s := *b.synthetic
		s.Leads = leadFunc(func(context.Context, ledger.LeadRequest) (*ledger.LeadResult, error) {
			return nil, ledger.NewError(ledger.EInvalid, ledger.MsgLeadCustomerNotFound)
		})
		run, err := s.RunChain(ctx, w.program.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := ledger.ChainVerdicts{Click: ledger.VerdictAttributed, Lead: ledger.VerdictUnattributed, Sale: ledger.VerdictPending}
		if run.Verdict != want || run.Verdict.Attributed() || run.SaleID != nil {
			t.Fatalf("run %+v", run)
		}
	})
	t.Run("the link does not resolve: nothing is recorded but the run", func(t *testing.T) {
		w := b.MustWorld(t, programInput("percent", "30", "USD", 0, 30))
		s := *b.synthetic
		s.Links = linkFunc(func(context.Context, string) (*ledger.ReferralLink, error) {
			return nil, ledger.NewError(ledger.ENotFound, "link not found")
		})
		run, err := s.RunChain(ctx, w.program.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := ledger.ChainVerdicts{Click: ledger.VerdictUnattributed, Lead: ledger.VerdictPending, Sale: ledger.VerdictPending}
		if run.Verdict != want || run.ClickID != "" || run.ID == 0 {
			t.Fatalf("run %+v", run)
		}
		if got := b.count(t, `SELECT count(*) FROM clicks WHERE program_id = $1`, w.program.ID); got != 0 {
			t.Fatalf("%d clicks recorded", got)
		}
	})
	t.Run("the sale reaches another partner: wrong_partner", func(t *testing.T) {
		w := b.MustWorld(t, programInput("percent", "30", "USD", 0, 30))
		s := *b.synthetic
		s.Sales = saleFunc(func(ctx context.Context, r ledger.SaleRequest) (*ledger.SaleResult, error) {
			// A sale recorded for the world's own partner instead.
			key := r.CustomerKey.Value + "-other"
			b.MustCustomerKey(t, w, key)
			r.CustomerKey = ledger.Some(key)
			return b.sales.RecordSale(ctx, r)
		})
		run, err := s.RunChain(ctx, w.program.ID)
		if err != nil {
			t.Fatal(err)
		}
		if run.Verdict.Sale != ledger.VerdictWrongPartner || run.Verdict.Attributed() {
			t.Fatalf("run %+v", run)
		}
	})
	t.Run("an unexpected failure is returned", func(t *testing.T) {
		w := b.MustWorld(t, programInput("percent", "30", "USD", 0, 30))
		s := *b.synthetic
		s.Clicks = recorderFunc(func(context.Context, *ledger.Click) error { return context.DeadlineExceeded })
		if _, err := s.RunChain(ctx, w.program.ID); err == nil || ledger.ErrorCode(err) != ledger.EInternal {
			t.Fatalf("err %v", err)
		}
	})
}

type leadFunc func(context.Context, ledger.LeadRequest) (*ledger.LeadResult, error)

func (f leadFunc) TrackLead(ctx context.Context, r ledger.LeadRequest) (*ledger.LeadResult, error) {
	return f(ctx, r)
}
func (leadFunc) SettleProvisionalLead(context.Context, ledger.Settlement) (*ledger.SettleResult, error) {
	return nil, nil
}
func (leadFunc) FindCustomer(context.Context, ledger.CustomerQuery) (*ledger.CustomerView, error) {
	return nil, nil
}

type saleFunc func(context.Context, ledger.SaleRequest) (*ledger.SaleResult, error)

func (f saleFunc) RecordSale(ctx context.Context, r ledger.SaleRequest) (*ledger.SaleResult, error) {
	return f(ctx, r)
}

type linkFunc func(context.Context, string) (*ledger.ReferralLink, error)

func (f linkFunc) ReferralLink(ctx context.Context, code string) (*ledger.ReferralLink, error) {
	return f(ctx, code)
}
func (linkFunc) TrackerSettings(context.Context, int64) (*ledger.TrackerSettings, error) {
	return nil, ledger.NewError(ledger.ENotFound, "program not found")
}

func TestSaleOfATestCustomerIsATestSale(t *testing.T) {
	b := setupSynthetic(t)
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "30", "USD", 0, 30))
	// A click on a test link (as the click endpoint records it) brings a
	// test customer; a live sale call for it is stored attributed, flagged.
	b.db.Exec(`UPDATE links SET is_test = true WHERE id = $1`, w.linkID)
	click := b.MustClick(t, w, w.partnerID)
	b.db.Exec(`UPDATE clicks SET is_test = true WHERE click_id = $1`, click)
	res, err := b.sales.RecordSale(ctx, sale{txn: "t-1", clickID: click, amount: 5000}.request(w.program.ID))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Test || res.CommissionID != nil || res.Message != ledger.MsgTestSaleRecorded {
		t.Fatalf("result %+v", res)
	}
	if got := b.count(t, `SELECT count(*) FROM sales WHERE id = $1 AND is_test AND partner_id = $2 AND customer_id IS NOT NULL`, res.SaleID, w.partnerID); got != 1 {
		t.Fatal("the test sale is not stored attributed and flagged")
	}
	if got := b.count(t, `SELECT count(*) FROM commissions`) + b.count(t, `SELECT count(*) FROM platform_fees`); got != 0 {
		t.Fatalf("%d commissions and fees", got)
	}
	// The id is consumed as any sale's.
	if _, err := b.sales.RecordSale(ctx, sale{txn: "t-1", clickID: click, amount: 5000}.request(w.program.ID)); ledger.ErrorCode(err) != ledger.EDuplicateTransaction {
		t.Fatalf("resend: %v", err)
	}
}

func TestSingleTestEvents(t *testing.T) {
	b := setupSynthetic(t)
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "30", "VND", 0, 30))
	for _, typ := range []string{"click", "lead", "sale"} {
		res, err := b.synthetic.TestEvent(ctx, w.program.ID, typ)
		if err != nil || res.EventType != typ || res.EventID == "" {
			t.Fatalf("%s: %+v, %v", typ, res, err)
		}
	}
	checks := []struct {
		desc, query string
		want        int
	}{
		{"a test click on the fixture link", `SELECT count(*) FROM clicks c JOIN links l ON l.id = c.link_id WHERE c.program_id = $1 AND c.is_test AND l.is_test`, 1},
		{"a test lead", `SELECT count(*) FROM leads WHERE program_id = $1 AND is_test AND customer_key LIKE 'synthetic\_test\_%'`, 1},
		{"a test sale of one dong", `SELECT count(*) FROM sales WHERE program_id = $1 AND is_test AND source = 'test_event' AND amount_cents = 1 AND currency = 'VND'`, 1},
		{"two CLI tracking logs", `SELECT count(*) FROM tracking_logs WHERE program_id = $1 AND is_test AND source = 'cli_test'`, 2},
	}
	for _, c := range checks {
		if got := b.count(t, c.query, w.program.ID); got != c.want {
			t.Errorf("%s: %d, want %d", c.desc, got, c.want)
		}
	}
	if _, err := b.synthetic.TestEvent(ctx, w.program.ID, "refund"); ledger.ErrorMessage(err) != ledger.MsgInvalidEventType("refund") {
		t.Fatalf("unknown type: %v", err)
	}
	f, err := b.readiness.ReadinessFacts(ctx, w.program.ID, b.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if f.LastClickAt != nil || f.LastLeadAt != nil || f.LastSaleAt != nil || f.Counts24h != (ledger.EventCounts{}) {
		t.Fatalf("readiness counts the CLI's own test events: %+v", f)
	}
}

func TestProcessorPaymentOfATestCustomerIsATestSale(t *testing.T) {
	b := setupProcessor(t)
	w := b.MustWorld(t, percentProgram())
	acct := b.connect(t, w)
	click := b.MustClick(t, w, w.partnerID)
	b.db.Exec(`UPDATE clicks SET is_test = true WHERE click_id = $1`, click)

	ev := stripetest.CheckoutCompleted(acct).Set("metadata.svc_click_id", click)
	res := b.deliver(t, ev)
	wantResult(t, res, ledger.EventProcessed, ledger.MsgTestSaleRecorded)
	s := b.sale(t, ev.Get("id").(string))
	if s.CommissionID != nil || s.Source != ledger.SourceProcessor || s.ID != res.SaleID {
		t.Fatalf("sale %+v", s)
	}
	if n := b.count(t, `SELECT count(*) FROM sales WHERE id = $1 AND is_test AND partner_id = $2`, s.ID, w.partnerID); n != 1 {
		t.Fatal("the processor's sale of a test customer is not stored attributed and flagged")
	}
	if n := b.count(t, `SELECT count(*) FROM platform_fees`) + b.count(t, `SELECT count(*) FROM commissions`); n != 0 {
		t.Fatalf("%d fees and commissions", n)
	}
}
