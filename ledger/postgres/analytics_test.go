package postgres_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
)

func TestAnalyticsSources(t *testing.T) {
	b := setupSynthetic(t)
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "30", "USD", 0, 30))
	p1 := w.partnerID
	partner2, err := b.partners.EnrollPartner(ctx, w.program.ID, "sam@partner.example", "Sam")
	if err != nil {
		t.Fatal(err)
	}
	link2, err := b.partners.CreateLink(ctx, w.program.ID, partner2.ID, "sam-src", true)
	if err != nil {
		t.Fatal(err)
	}
	p2 := partner2.ID
	leads := postgres.NewLeadService(b.db.DB, nil)
	now := b.clock.Now()
	at := now.Add(-2 * time.Hour)

	google1 := b.mustClickFrom(t, w, p1, w.linkID, "https://www.google.com/search?q=acme", at, false)
	b.mustClickFrom(t, w, p1, w.linkID, "https://WWW.Google.com:443/", at, false)
	hn := b.mustClickFrom(t, w, p1, w.linkID, "https://user@news.ycombinator.com/item?id=1", at, false)
	direct := b.mustClickFrom(t, w, p2, link2.ID, "", at, false)
	b.mustClickFrom(t, w, p2, link2.ID, "http://google.com/x", at, false)
	// Neither a test click nor a click outside the range counts.
	b.mustClickFrom(t, w, p1, w.linkID, "https://www.google.com/", at, true)
	b.mustClickFrom(t, w, p1, w.linkID, "https://www.google.com/", now.Add(-40*24*time.Hour), false)

	lead := func(mode, click, key string) {
		t.Helper()
		req := ledger.LeadRequest{Mode: mode, ClickID: click, CustomerKey: key}
		if mode == ledger.LeadModeServer {
			req.ProgramID = w.program.ID
		}
		if _, err := leads.TrackLead(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	lead(ledger.LeadModeServer, google1, "g-1")
	lead(ledger.LeadModeServer, direct, "d-1")
	lead(ledger.LeadModeBrowser, hn, "h-1") // provisional: does not count
	res := b.MustSale(t, w, sale{txn: "s-usd", customerKey: "g-1", amount: 10000})
	b.db.Exec(`UPDATE sales SET refunded_cents = 2500 WHERE id = $1`, res.SaleID)
	b.MustSale(t, w, sale{txn: "s-eur", customerKey: "d-1", amount: 2000, currency: "EUR"})
	if _, err := b.sales.RecordSale(ctx, ledger.SaleRequest{ProgramID: w.program.ID, TestKey: true}); err != nil {
		t.Fatal(err) // a test sale: not counted
	}

	usd := func(n int64) map[ledger.Currency]int64 { return map[ledger.Currency]int64{ledger.USD: n} }
	eur := func(n int64) map[ledger.Currency]int64 { return map[ledger.Currency]int64{ledger.EUR: n} }
	none := map[ledger.Currency]int64{}
	id := func(n int64) *int64 { return &n }
	sources := func(in ledger.SourcesQueryInput) *ledger.SourcesReport {
		t.Helper()
		q, err := in.Validate(w.program.ID, now)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := postgres.NewAnalyticsService(b.db.DB).Sources(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	cases := []struct {
		desc   string
		in     ledger.SourcesQueryInput
		want   []ledger.SourceRow
		groups int
	}{
		{
			desc: "by referrer and partner",
			want: []ledger.SourceRow{
				{ReferrerDomain: "google.com", PartnerID: id(p1), PartnerName: "Pat", Clicks: 2, Leads: 1, Sales: 1, Revenue: usd(7500)},
				{ReferrerDomain: "", PartnerID: id(p2), PartnerName: "Sam", Clicks: 1, Leads: 1, Sales: 1, Revenue: eur(2000)},
				{ReferrerDomain: "google.com", PartnerID: id(p2), PartnerName: "Sam", Clicks: 1, Revenue: none},
				{ReferrerDomain: "news.ycombinator.com", PartnerID: id(p1), PartnerName: "Pat", Clicks: 1, Revenue: none},
			},
			groups: 4,
		},
		{
			desc: "by referrer",
			in:   ledger.SourcesQueryInput{GroupBy: "referrer"},
			want: []ledger.SourceRow{
				{ReferrerDomain: "google.com", Clicks: 3, Leads: 1, Sales: 1, Revenue: usd(7500)},
				{ReferrerDomain: "", Clicks: 1, Leads: 1, Sales: 1, Revenue: eur(2000)},
				{ReferrerDomain: "news.ycombinator.com", Clicks: 1, Revenue: none},
			},
			groups: 3,
		},
		{
			desc: "by partner",
			in:   ledger.SourcesQueryInput{GroupBy: "partner"},
			want: []ledger.SourceRow{
				{PartnerID: id(p1), PartnerName: "Pat", Clicks: 3, Leads: 1, Sales: 1, Revenue: usd(7500)},
				{PartnerID: id(p2), PartnerName: "Sam", Clicks: 2, Leads: 1, Sales: 1, Revenue: eur(2000)},
			},
			groups: 2,
		},
		{
			desc:   "the top group only",
			in:     ledger.SourcesQueryInput{Limit: "1"},
			want:   []ledger.SourceRow{{ReferrerDomain: "google.com", PartnerID: id(p1), PartnerName: "Pat", Clicks: 2, Leads: 1, Sales: 1, Revenue: usd(7500)}},
			groups: 4,
		},
		{
			desc:   "a range before every event",
			in:     ledger.SourcesQueryInput{From: now.Add(-20 * 24 * time.Hour).Format(time.RFC3339), To: now.Add(-10 * 24 * time.Hour).Format(time.RFC3339)},
			groups: 0,
		},
	}
	for _, c := range cases {
		t.Run(c.desc, func(t *testing.T) {
			rep := sources(c.in)
			if rep.Groups != c.groups || len(rep.Rows) != len(c.want) {
				t.Fatalf("%d groups, rows %+v", rep.Groups, rep.Rows)
			}
			for i := range c.want {
				if !reflect.DeepEqual(rep.Rows[i], c.want[i]) {
					t.Fatalf("row %d = %+v, want %+v", i, rep.Rows[i], c.want[i])
				}
			}
		})
	}
	rep := sources(ledger.SourcesQueryInput{Limit: "1"})
	wantTotals := ledger.SourceRow{Clicks: 5, Leads: 2, Sales: 2, Revenue: map[ledger.Currency]int64{ledger.USD: 7500, ledger.EUR: 2000}}
	if !reflect.DeepEqual(rep.Totals, wantTotals) {
		t.Fatalf("totals %+v over every group, want %+v", rep.Totals, wantTotals)
	}
}
