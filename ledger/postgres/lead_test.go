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

type leadBundle struct {
	*testBundle
	leads *postgres.LeadService
	// pending is what the fake ledger.PendingClicks answers.
	mu      sync.Mutex
	pending map[string]*ledger.Click
}

func setupLeads(t *testing.T) *leadBundle {
	b := &leadBundle{testBundle: setup(t), pending: map[string]*ledger.Click{}}
	b.leads = postgres.NewLeadService(b.db.DB, pendingFunc(func(_ context.Context, id string) (*ledger.Click, error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		if c, ok := b.pending[id]; ok {
			return c, nil
		}
		return nil, ledger.NewError(ledger.ENotFound, "click not found")
	}))
	return b
}

var programCount int

// mustProgram creates a program with the lead policy and an enrolled
// partner.
func (b *leadBundle) mustProgram(t *testing.T, leadAuth string) (programID, partnerID int64) {
	t.Helper()
	ctx := context.Background()
	b.mu.Lock()
	programCount++
	n := programCount
	b.mu.Unlock()
	ws, err := b.accounts.CreateWorkspace(ctx, "Acme", fmt.Sprintf("owner%d@acme.example", n))
	if err != nil {
		t.Fatal(err)
	}
	in := percentProgram()
	in.LeadAuth = ledger.Some(leadAuth)
	p, err := b.programs.CreateProgram(ctx, ws.ID, in)
	if err != nil {
		t.Fatal(err)
	}
	partner, err := b.partners.EnrollPartner(ctx, p.ID, fmt.Sprintf("pat%d@partner.example", n), "Pat")
	if err != nil {
		t.Fatal(err)
	}
	return p.ID, partner.ID
}

// mustClick stores a click of the partner in Postgres, as the clicks
// worker does.
func (b *leadBundle) mustClick(t *testing.T, programID, partnerID int64) string {
	t.Helper()
	id := ledger.NewClickID(time.Now())
	at, _ := ledger.ClickTime(id)
	if _, err := b.db.Exec(`INSERT INTO clicks (click_id, occurred_at, program_id, partner_id) VALUES ($1, $2, $3, $4)`,
		id, at, programID, partnerID); err != nil {
		t.Fatal(err)
	}
	return id
}

func browserLead(clickID, key, email string) ledger.LeadRequest {
	return ledger.LeadRequest{Mode: ledger.LeadModeBrowser, ClickID: clickID, CustomerKey: key, Email: email}
}

func serverLead(programID int64, clickID, key string) ledger.LeadRequest {
	return ledger.LeadRequest{Mode: ledger.LeadModeServer, ProgramID: programID, ClickID: clickID, CustomerKey: key}
}

// leadRow is a stored lead.
type leadRow struct {
	ID           int64
	CustomerID   *int64
	CustomerKey  *string
	Provisional  bool
	SettledBy    *string
	Settled      bool
	SelfReferral bool
	IsTest       bool
}

func (b *leadBundle) leadsOf(t *testing.T, clickID string) []leadRow {
	t.Helper()
	rows, err := b.db.Query(`SELECT id, customer_id, customer_key, provisional, settled_by, settled_at IS NOT NULL,
		self_referral, is_test FROM leads WHERE click_id = $1 ORDER BY id`, clickID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []leadRow
	for rows.Next() {
		var l leadRow
		if err := rows.Scan(&l.ID, &l.CustomerID, &l.CustomerKey, &l.Provisional, &l.SettledBy, &l.Settled, &l.SelfReferral, &l.IsTest); err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

func (b *leadBundle) customer(t *testing.T, programID int64, clickID string) *ledger.CustomerView {
	t.Helper()
	v, err := b.leads.FindCustomer(context.Background(), ledger.CustomerQuery{ProgramID: programID, ClickID: clickID})
	if err != nil {
		t.Fatalf("customer of click %s: %v", clickID, err)
	}
	return v
}

func wantStatusError(t *testing.T, err error, status string) {
	t.Helper()
	if ledger.ErrorCode(err) != ledger.EInvalid || ledger.ErrorMessage(err) != ledger.MsgLeadStatus(status) {
		t.Fatalf("err = %v, want %q", err, ledger.MsgLeadStatus(status))
	}
}

func TestLeadLife(t *testing.T) {
	b := setupLeads(t)
	ctx := context.Background()
	programID, partnerID := b.mustProgram(t, ledger.LeadServerRequired)

	t.Run("provisional, then settled by a server lead", func(t *testing.T) {
		click := b.mustClick(t, programID, partnerID)
		signedUp := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
		b.db.Now = func() time.Time { return signedUp }
		defer func() { b.db.Now = time.Now }()
		res, err := b.leads.TrackLead(ctx, browserLead(click, "user-1", "ann@example.com"))
		if err != nil {
			t.Fatal(err)
		}
		if !res.Provisional || res.ProgramID != programID || res.ClickID != click {
			t.Fatalf("browser lead = %+v", res)
		}
		// Not counted: the customer stays at click, no key saved.
		c := b.customer(t, programID, click)
		if c.Status != ledger.FunnelClick || c.CustomerKey != "" || !c.Provisional {
			t.Fatalf("customer after a provisional lead = %+v", c)
		}
		if _, err := b.leads.FindCustomer(ctx, ledger.CustomerQuery{ProgramID: programID, CustomerKey: "user-1"}); ledger.ErrorCode(err) != ledger.ENotFound {
			t.Fatalf("key saved while provisional: %v", err)
		}
		// A first server lead with only the key finds no customer (spec
		// rule 5).
		_, err = b.leads.TrackLead(ctx, serverLead(programID, "", "user-1"))
		if ledger.ErrorMessage(err) != ledger.MsgLeadCustomerNotFound {
			t.Fatalf("key-only server lead: %v", err)
		}
		// The browser sends again: the same provisional lead.
		again, err := b.leads.TrackLead(ctx, browserLead(click, "", ""))
		if err != nil || again.LeadID != res.LeadID || !again.Provisional {
			t.Fatalf("second browser lead = %+v, %v", again, err)
		}

		b.db.Now = func() time.Time { return signedUp.Add(time.Hour) }
		settled, err := b.leads.TrackLead(ctx, serverLead(programID, click, "user-1"))
		if err != nil {
			t.Fatal(err)
		}
		if settled.Provisional || settled.LeadID != res.LeadID {
			t.Fatalf("server lead = %+v", settled)
		}
		c = b.customer(t, programID, click)
		if c.Status != ledger.FunnelLead || c.CustomerKey != "user-1" || c.Email != "ann@example.com" || c.Provisional {
			t.Fatalf("customer after settlement = %+v", c)
		}
		leads := b.leadsOf(t, click)
		if len(leads) != 1 || !leads[0].Settled || *leads[0].SettledBy != ledger.SettledByServerLead || !leads[0].Provisional {
			t.Fatalf("leads = %+v", leads)
		}
		// The lead keeps its own time, the signup; it counts from settlement.
		var occurred, settledAt time.Time
		b.db.QueryRow(`SELECT occurred_at, settled_at FROM leads WHERE id = $1`, res.LeadID).Scan(&occurred, &settledAt)
		if !occurred.Equal(signedUp) || !settledAt.Equal(signedUp.Add(time.Hour)) {
			t.Fatalf("occurred_at %v, settled_at %v", occurred, settledAt)
		}
		// The key now finds the customer, who has had its lead.
		_, err = b.leads.TrackLead(ctx, serverLead(programID, "", "user-1"))
		wantStatusError(t, err, ledger.FunnelLead)
		_, err = b.leads.TrackLead(ctx, browserLead(click, "", ""))
		wantStatusError(t, err, ledger.FunnelLead)

		var logs []string
		if err := b.db.Select(&logs, `SELECT source FROM tracking_logs WHERE program_id = $1 AND reference = $2 ORDER BY id`,
			programID, fmt.Sprint(res.LeadID)); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(logs) != "[browser_provisional browser_provisional server]" {
			t.Fatalf("tracking logs = %v", logs)
		}
	})

	t.Run("a click still in the queue", func(t *testing.T) {
		id := ledger.NewClickID(time.Now())
		at, _ := ledger.ClickTime(id)
		b.mu.Lock()
		b.pending[id] = &ledger.Click{ID: id, OccurredAt: at, ProgramID: programID, PartnerID: &partnerID}
		b.mu.Unlock()
		res, err := b.leads.TrackLead(ctx, serverLead(programID, id, "user-queued"))
		if err != nil {
			t.Fatal(err)
		}
		if res.Provisional || res.ClickID != id {
			t.Fatalf("lead = %+v", res)
		}
		var clicks int
		b.db.QueryRow(`SELECT count(*) FROM clicks WHERE click_id = $1`, id).Scan(&clicks)
		if c := b.customer(t, programID, id); clicks != 1 || c.Status != ledger.FunnelLead || *c.PartnerID != partnerID {
			t.Fatalf("%d click rows; customer %+v", clicks, c)
		}
	})

	t.Run("ErrCustomerNotFound unknown click", func(t *testing.T) {
		for _, req := range []ledger.LeadRequest{
			browserLead(ledger.NewClickID(time.Now()), "", ""),
			browserLead("not-one-of-ours", "", ""),
			serverLead(programID, ledger.NewClickID(time.Now()), "nobody"),
		} {
			if _, err := b.leads.TrackLead(ctx, req); ledger.ErrorMessage(err) != ledger.MsgLeadCustomerNotFound {
				t.Fatalf("%+v: %v", req, err)
			}
		}
	})

	t.Run("ErrOtherProgram", func(t *testing.T) {
		otherID, otherPartner := b.mustProgram(t, ledger.LeadServerRequired)
		click := b.mustClick(t, otherID, otherPartner)
		// A server lead with this program's key, and a browser lead that
		// names this program, cannot move the other program's customer.
		for _, req := range []ledger.LeadRequest{
			serverLead(programID, click, "user-x"),
			{Mode: ledger.LeadModeBrowser, ClickID: click, ProgramHint: fmt.Sprint(programID)},
		} {
			if _, err := b.leads.TrackLead(ctx, req); ledger.ErrorMessage(err) != ledger.MsgLeadOtherProgram {
				t.Fatalf("%+v: %v", req, err)
			}
		}
		var customers int
		b.db.QueryRow(`SELECT count(*) FROM customers WHERE click_id = $1`, click).Scan(&customers)
		if customers != 0 {
			t.Fatal("a refused lead created a customer")
		}
	})

	t.Run("ErrStatus after a sale", func(t *testing.T) {
		click := b.mustClick(t, programID, partnerID)
		if _, err := b.leads.TrackLead(ctx, serverLead(programID, click, "")); err != nil {
			t.Fatal(err)
		}
		// The sale code moves a paying customer to conversion.
		b.db.MustExec(`UPDATE customers SET status = 'conversion' WHERE click_id = $1`, click)
		_, err := b.leads.TrackLead(ctx, serverLead(programID, click, ""))
		wantStatusError(t, err, ledger.FunnelConversion)
	})

	t.Run("self-referral flagged, not refused", func(t *testing.T) {
		click := b.mustClick(t, programID, partnerID)
		var partnerEmail string
		b.db.QueryRow(`SELECT email FROM partners WHERE id = $1`, partnerID).Scan(&partnerEmail)
		req := serverLead(programID, click, "self")
		req.Email = partnerEmail
		if _, err := b.leads.TrackLead(ctx, req); err != nil {
			t.Fatal(err)
		}
		if l := b.leadsOf(t, click); len(l) != 1 || !l[0].SelfReferral {
			t.Fatalf("leads = %+v", l)
		}
	})

	t.Run("a test click's customer is flagged", func(t *testing.T) {
		click := b.mustClick(t, programID, partnerID)
		b.db.MustExec(`UPDATE clicks SET is_test = true WHERE click_id = $1`, click)
		if _, err := b.leads.TrackLead(ctx, serverLead(programID, click, "tester")); err != nil {
			t.Fatal(err)
		}
		if l := b.leadsOf(t, click); len(l) != 1 || !l[0].IsTest || !l[0].Settled {
			t.Fatalf("leads = %+v", l)
		}
	})
}

func TestBrowserAllowedLeadSettlesAtOnce(t *testing.T) {
	b := setupLeads(t)
	ctx := context.Background()
	programID, partnerID := b.mustProgram(t, ledger.LeadBrowserAllowed)
	click := b.mustClick(t, programID, partnerID)
	res, err := b.leads.TrackLead(ctx, ledger.LeadRequest{Mode: ledger.LeadModeBrowser, ClickID: click, CustomerKey: "user-b", ProgramHint: fmt.Sprint(programID)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Provisional {
		t.Fatal("browser lead provisional on a browser_allowed program")
	}
	c := b.customer(t, programID, click)
	if c.Status != ledger.FunnelLead || c.CustomerKey != "user-b" || c.Provisional {
		t.Fatalf("customer = %+v", c)
	}
	if l := b.leadsOf(t, click); len(l) != 1 || l[0].Provisional || *l[0].SettledBy != ledger.SettledByBrowserAllowed {
		t.Fatalf("leads = %+v", l)
	}
}

func TestSettleProvisionalLead(t *testing.T) {
	b := setupLeads(t)
	ctx := context.Background()
	programID, partnerID := b.mustProgram(t, ledger.LeadServerRequired)

	provisional := func(t *testing.T, key string) (click string, customerID int64) {
		t.Helper()
		click = b.mustClick(t, programID, partnerID)
		res, err := b.leads.TrackLead(ctx, browserLead(click, key, "buyer@example.com"))
		if err != nil || !res.Provisional {
			t.Fatalf("browser lead = %+v, %v", res, err)
		}
		return click, res.CustomerID
	}

	t.Run("by a processor payment, once", func(t *testing.T) {
		click, customerID := provisional(t, "user-p")
		// A sale sent to the sale endpoint moves the customer on but does
		// not settle the lead.
		b.db.MustExec(`UPDATE customers SET status = 'conversion' WHERE id = $1`, customerID)
		if c := b.customer(t, programID, click); !c.Provisional || c.CustomerKey != "" {
			t.Fatalf("customer after a sale = %+v", c)
		}
		res, err := b.leads.SettleProvisionalLead(ctx, ledger.Settlement{ProgramID: programID, CustomerID: customerID})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Settled || !res.KeySaved || res.LeadID == 0 {
			t.Fatalf("settlement = %+v", res)
		}
		c := b.customer(t, programID, click)
		if c.Status != ledger.FunnelConversion || c.CustomerKey != "user-p" || c.Provisional || c.Email != "buyer@example.com" {
			t.Fatalf("customer = %+v (the funnel never moves back)", c)
		}
		if l := b.leadsOf(t, click); len(l) != 1 || *l[0].SettledBy != ledger.SettledByProcessorPayment {
			t.Fatalf("leads = %+v", l)
		}
		again, err := b.leads.SettleProvisionalLead(ctx, ledger.Settlement{ProgramID: programID, CustomerID: customerID})
		if err != nil || again.Settled {
			t.Fatalf("second settlement = %+v, %v", again, err)
		}
	})

	t.Run("the payment's key wins over the browser's", func(t *testing.T) {
		click, customerID := provisional(t, "typed-by-browser")
		res, err := b.leads.SettleProvisionalLead(ctx, ledger.Settlement{ProgramID: programID, CustomerID: customerID, CustomerKey: "user-from-metadata", Email: "Paid@Example.com"})
		if err != nil || !res.KeySaved {
			t.Fatalf("settlement = %+v, %v", res, err)
		}
		if c := b.customer(t, programID, click); c.Status != ledger.FunnelLead || c.CustomerKey != "user-from-metadata" || c.Email != "paid@example.com" {
			t.Fatalf("customer = %+v", c)
		}
	})

	t.Run("a key another customer has stays with it", func(t *testing.T) {
		first := b.mustClick(t, programID, partnerID)
		if _, err := b.leads.TrackLead(ctx, serverLead(programID, first, "shared")); err != nil {
			t.Fatal(err)
		}
		click, customerID := provisional(t, "")
		res, err := b.leads.SettleProvisionalLead(ctx, ledger.Settlement{ProgramID: programID, CustomerID: customerID, CustomerKey: "shared"})
		if err != nil || !res.Settled || res.KeySaved {
			t.Fatalf("settlement = %+v, %v", res, err)
		}
		if c := b.customer(t, programID, click); c.Status != ledger.FunnelLead || c.CustomerKey != "" {
			t.Fatalf("customer = %+v", c)
		}
		if c := b.customer(t, programID, first); c.CustomerKey != "shared" {
			t.Fatalf("first customer lost its key: %+v", c)
		}
	})

	t.Run("no provisional lead", func(t *testing.T) {
		click := b.mustClick(t, programID, partnerID)
		res, err := b.leads.TrackLead(ctx, serverLead(programID, click, ""))
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.leads.SettleProvisionalLead(ctx, ledger.Settlement{ProgramID: programID, CustomerID: res.CustomerID})
		if err != nil || got.Settled {
			t.Fatalf("settlement = %+v, %v", got, err)
		}
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		_, customerID := provisional(t, "")
		_, err := b.leads.SettleProvisionalLead(ctx, ledger.Settlement{ProgramID: programID + 1000, CustomerID: customerID})
		if ledger.ErrorCode(err) != ledger.ENotFound {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("ErrInvalid by", func(t *testing.T) {
		_, err := b.leads.SettleProvisionalLead(ctx, ledger.Settlement{ProgramID: programID, CustomerID: 1, By: "sale"})
		if ledger.ErrorCode(err) != ledger.EInvalid {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestLeadCustomerKeyTaken(t *testing.T) {
	b := setupLeads(t)
	ctx := context.Background()
	programID, partnerID := b.mustProgram(t, ledger.LeadServerRequired)
	first := b.mustClick(t, programID, partnerID)
	if _, err := b.leads.TrackLead(ctx, serverLead(programID, first, "user-k")); err != nil {
		t.Fatal(err)
	}
	// The same person, through another click: they have had their lead.
	second := b.mustClick(t, programID, partnerID)
	for _, req := range []ledger.LeadRequest{serverLead(programID, second, "user-k"), browserLead(second, "user-k", "")} {
		_, err := b.leads.TrackLead(ctx, req)
		wantStatusError(t, err, ledger.FunnelLead)
	}
	if l := b.leadsOf(t, second); len(l) != 0 {
		t.Fatalf("a refused lead was stored: %+v", l)
	}
	var customers int
	b.db.QueryRow(`SELECT count(*) FROM customers WHERE click_id = $1`, second).Scan(&customers)
	if customers != 0 {
		t.Fatal("a refused lead created a customer")
	}
}

func TestConcurrentSettlement(t *testing.T) {
	b := setupLeads(t)
	ctx := context.Background()
	programID, partnerID := b.mustProgram(t, ledger.LeadServerRequired)

	t.Run("server leads and payments race for one provisional lead", func(t *testing.T) {
		click := b.mustClick(t, programID, partnerID)
		res, err := b.leads.TrackLead(ctx, browserLead(click, "racer", ""))
		if err != nil {
			t.Fatal(err)
		}
		const n = 8
		var wg sync.WaitGroup
		settled := make(chan string, n)
		errs := make(chan error, n)
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				if i%2 == 0 {
					_, err := b.leads.TrackLead(ctx, serverLead(programID, click, "racer"))
					if err == nil {
						settled <- "server"
					} else if ledger.ErrorMessage(err) != ledger.MsgLeadStatus(ledger.FunnelLead) {
						errs <- err
					}
					return
				}
				r, err := b.leads.SettleProvisionalLead(ctx, ledger.Settlement{ProgramID: programID, CustomerID: res.CustomerID})
				if err != nil {
					errs <- err
				} else if r.Settled {
					settled <- "payment"
				}
			}(i)
		}
		wg.Wait()
		close(settled)
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if len(settled) != 1 {
			t.Fatalf("%d settlements, want exactly one", len(settled))
		}
		by := <-settled
		l := b.leadsOf(t, click)
		if len(l) != 1 || !l[0].Settled {
			t.Fatalf("leads = %+v", l)
		}
		if want := map[string]string{"server": ledger.SettledByServerLead, "payment": ledger.SettledByProcessorPayment}[by]; *l[0].SettledBy != want {
			t.Fatalf("settled by %s, lead says %s", by, *l[0].SettledBy)
		}
		if c := b.customer(t, programID, click); c.Status != ledger.FunnelLead || c.CustomerKey != "racer" || c.Provisional {
			t.Fatalf("customer = %+v", c)
		}
	})

	t.Run("server leads race for one new customer", func(t *testing.T) {
		click := b.mustClick(t, programID, partnerID)
		const n = 6
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok, refused := 0, 0
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				// Each names a key of its own: one settles, the others find
				// the customer already at lead.
				_, err := b.leads.TrackLead(ctx, serverLead(programID, click, fmt.Sprintf("key-%d", i)))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					ok++
				case ledger.ErrorMessage(err) == ledger.MsgLeadStatus(ledger.FunnelLead):
					refused++
				default:
					t.Error(err)
				}
			}(i)
		}
		wg.Wait()
		if ok != 1 || refused != n-1 {
			t.Fatalf("%d accepted, %d refused", ok, refused)
		}
		var customers, keys int
		b.db.QueryRow(`SELECT count(*), count(customer_key) FROM customers WHERE click_id = $1`, click).Scan(&customers, &keys)
		if customers != 1 || keys != 1 || len(b.leadsOf(t, click)) != 1 {
			t.Fatalf("%d customers, %d keys, leads %+v", customers, keys, b.leadsOf(t, click))
		}
	})

	t.Run("two customers race for one key", func(t *testing.T) {
		clicks := []string{b.mustClick(t, programID, partnerID), b.mustClick(t, programID, partnerID)}
		var wg sync.WaitGroup
		results := make([]error, len(clicks))
		for i, click := range clicks {
			wg.Add(1)
			go func(i int, click string) {
				defer wg.Done()
				_, results[i] = b.leads.TrackLead(ctx, serverLead(programID, click, "contested"))
			}(i, click)
		}
		wg.Wait()
		accepted := 0
		for _, err := range results {
			if err == nil {
				accepted++
			} else if ledger.ErrorMessage(err) != ledger.MsgLeadStatus(ledger.FunnelLead) {
				t.Fatal(err)
			}
		}
		var owners int
		b.db.QueryRow(`SELECT count(*) FROM customers WHERE program_id = $1 AND customer_key = 'contested'`, programID).Scan(&owners)
		if accepted != 1 || owners != 1 {
			t.Fatalf("%d accepted, %d customers with the key", accepted, owners)
		}
	})
}

func TestTestModeLead(t *testing.T) {
	b := setupLeads(t)
	ctx := context.Background()
	programID, partnerID := b.mustProgram(t, ledger.LeadServerRequired)
	click := b.mustClick(t, programID, partnerID)

	for _, tc := range []struct {
		desc string
		req  ledger.LeadRequest
		code string
		msg  string
	}{
		{desc: "OK server mode, no click needed", req: ledger.LeadRequest{Mode: ledger.LeadModeServer, ProgramID: programID, Test: true, ClickID: "test_lead_001", CustomerKey: "test_customer"}},
		{desc: "OK browser mode names its program", req: ledger.LeadRequest{Mode: ledger.LeadModeBrowser, Test: true, ClickID: "test_lead_002", ProgramHint: fmt.Sprint(programID)}},
		{desc: "OK browser mode by a click of the program", req: ledger.LeadRequest{Mode: ledger.LeadModeBrowser, Test: true, ClickID: click}},
		{desc: "ErrUnknownProgram", req: ledger.LeadRequest{Mode: ledger.LeadModeBrowser, Test: true, ClickID: "x", ProgramHint: "999999"}, code: ledger.EInvalid, msg: ledger.MsgUnknownProgramID},
		{desc: "ErrUnknownProgram not an id", req: ledger.LeadRequest{Mode: ledger.LeadModeBrowser, Test: true, ClickID: "x", ProgramHint: "YOUR_PROGRAM_ID"}, code: ledger.EInvalid, msg: ledger.MsgUnknownProgramID},
		{desc: "ErrNoProgram", req: ledger.LeadRequest{Mode: ledger.LeadModeBrowser, Test: true, ClickID: "x"}, code: ledger.EInvalid, msg: ledger.MsgLeadTestProgram},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			res, err := b.leads.TrackLead(ctx, tc.req)
			if tc.code != "" {
				if ledger.ErrorCode(err) != tc.code || ledger.ErrorMessage(err) != tc.msg {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !res.Test || res.ProgramID != programID || res.CustomerID != 0 {
				t.Fatalf("result = %+v", res)
			}
			l := b.leadsOf(t, tc.req.ClickID)
			if len(l) != 1 || !l[0].IsTest || l[0].CustomerID != nil || l[0].Settled {
				t.Fatalf("leads = %+v", l)
			}
			var logs int
			b.db.QueryRow(`SELECT count(*) FROM tracking_logs WHERE reference = $1 AND is_test AND event_type = 'lead'`, fmt.Sprint(res.LeadID)).Scan(&logs)
			if logs != 1 {
				t.Fatalf("%d test tracking logs", logs)
			}
		})
	}
	// No customer was created or moved by test calls.
	var customers int
	b.db.QueryRow(`SELECT count(*) FROM customers WHERE program_id = $1`, programID).Scan(&customers)
	if customers != 0 {
		t.Fatalf("test-mode leads created %d customers", customers)
	}
}

// TestProvisionalLeadsCountWhenSettled checks that a provisional lead is
// left out of every count (CLI status leads_24h, readiness, analytics
// sources) until it settles, and then counts exactly once, whichever way
// it settles.
func TestProvisionalLeadsCountWhenSettled(t *testing.T) {
	b := setupLeads(t)
	ctx := context.Background()
	programID, partnerID := b.mustProgram(t, ledger.LeadServerRequired)
	cli := postgres.NewCLIService(b.db.DB)
	readiness := postgres.NewReadinessService(b.db.DB)
	analytics := postgres.NewAnalyticsService(b.db.DB)

	wantLeads := func(t *testing.T, want int64) {
		t.Helper()
		st, err := cli.Status(ctx, programID)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		f, err := readiness.ReadinessFacts(ctx, programID, now)
		if err != nil {
			t.Fatal(err)
		}
		q, err := ledger.SourcesQueryInput{}.Validate(programID, now)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := analytics.Sources(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if st.Recent.Leads != want || f.Counts24h.Leads != want || rep.Totals.Leads != want {
			t.Fatalf("leads counted: status %d, readiness %d, analytics %d; want %d",
				st.Recent.Leads, f.Counts24h.Leads, rep.Totals.Leads, want)
		}
	}
	provisional := func(t *testing.T) (click string, customerID int64) {
		t.Helper()
		click = b.mustClick(t, programID, partnerID)
		for range 2 { // the browser sends twice: still one provisional lead
			res, err := b.leads.TrackLead(ctx, browserLead(click, "", ""))
			if err != nil || !res.Provisional {
				t.Fatalf("browser lead = %+v, %v", res, err)
			}
			customerID = res.CustomerID
		}
		return click, customerID
	}

	byServer, _ := provisional(t)
	_, byPayment := provisional(t)
	provisional(t) // never settles
	wantLeads(t, 0)

	if _, err := b.leads.TrackLead(ctx, serverLead(programID, byServer, "user-s")); err != nil {
		t.Fatal(err)
	}
	wantLeads(t, 1)

	res, err := b.leads.SettleProvisionalLead(ctx, ledger.Settlement{ProgramID: programID, CustomerID: byPayment})
	if err != nil || !res.Settled {
		t.Fatalf("settlement = %+v, %v", res, err)
	}
	wantLeads(t, 2)
	// A repeated settlement settles nothing and counts nothing.
	if again, err := b.leads.SettleProvisionalLead(ctx, ledger.Settlement{ProgramID: programID, CustomerID: byPayment}); err != nil || again.Settled {
		t.Fatalf("second settlement = %+v, %v", again, err)
	}
	wantLeads(t, 2)
}
