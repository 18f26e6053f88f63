package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
)

// trafficWorld is a program with a partner and a link.
type trafficWorld struct {
	program *ledger.Program
	partner *ledger.Partner
	link    *ledger.Link
	store   *postgres.TrafficStore
}

func mustTrafficWorld(t *testing.T, b *testBundle) trafficWorld {
	t.Helper()
	ctx := context.Background()
	p := MustProgram(t, b)
	pa, err := b.partners.EnrollPartner(ctx, p.ID, "pat@partner.example", "Pat")
	if err != nil {
		t.Fatal(err)
	}
	l, err := b.partners.CreateLink(ctx, p.ID, pa.ID, "pat", true)
	if err != nil {
		t.Fatal(err)
	}
	return trafficWorld{program: p, partner: pa, link: l, store: postgres.NewTrafficStore(b.db.DB)}
}

func (w trafficWorld) click(at time.Time) ledger.Click {
	id := ledger.NewClickID(at)
	occurred, _ := ledger.ClickTime(id)
	return ledger.Click{ID: id, OccurredAt: occurred, ProgramID: w.program.ID, PartnerID: &w.partner.ID,
		LinkID: &w.link.ID, SessionID: "sess_1", PageURL: "https://acme.example/?aff=pat",
		GeoCountry: "GB", DeviceType: "desktop", IP: "81.2.69.142", UserAgent: "Mozilla/5.0"}
}

func TestReferralLinkAndTrackerSettings(t *testing.T) {
	b := setup(t)
	w := mustTrafficWorld(t, b)
	ctx := context.Background()

	l, err := w.store.ReferralLink(ctx, "pat")
	if err != nil {
		t.Fatal(err)
	}
	if !l.Active || !l.Usable() || l.LinkID != w.link.ID || *l.PartnerID != w.partner.ID ||
		l.Program.ProgramID != w.program.ID || l.Program.CookieDuration != 90 || l.Program.LeadAuth != ledger.LeadServerRequired {
		t.Fatalf("link = %+v, program %+v", l, l.Program)
	}
	if _, err := w.store.ReferralLink(ctx, "PAT"); ledger.ErrorCode(err) != ledger.ENotFound {
		t.Fatalf("codes match exactly: %v", err)
	}
	// A link whose partner is gone cannot attribute a click.
	b.db.MustExec(`DELETE FROM enrollments WHERE partner_id = $1`, w.partner.ID)
	b.db.MustExec(`DELETE FROM partners WHERE id = $1`, w.partner.ID)
	if l, err := w.store.ReferralLink(ctx, "pat"); err != nil || l.Usable() {
		t.Fatalf("link without partner: %+v, %v", l, err)
	}

	s, err := w.store.TrackerSettings(ctx, w.program.ID)
	if err != nil || s.CookieDuration != 90 || s.LeadAuth != ledger.LeadServerRequired {
		t.Fatalf("settings = %+v, %v", s, err)
	}
	if _, err := w.store.TrackerSettings(ctx, w.program.ID+1000); ledger.ErrorCode(err) != ledger.ENotFound {
		t.Fatalf("unknown program: %v", err)
	}
}

func TestWriteClicksIsIdempotent(t *testing.T) {
	b := setup(t)
	w := mustTrafficWorld(t, b)
	ctx := context.Background()
	now := time.Now().UTC()
	batch := []ledger.Click{w.click(now), w.click(now), w.click(now.Add(-40 * 24 * time.Hour))}
	batch[1].IsTest = true

	for _, tc := range []struct {
		desc  string
		batch []ledger.Click
		new   int
	}{
		{"first write stores every click", batch, 3},
		{"the same batch again stores nothing", batch, 0},
		{"an overlapping batch stores only the new click", append([]ledger.Click{w.click(now)}, batch[:2]...), 1},
		{"duplicates inside one batch count once", []ledger.Click{batch[0], batch[0]}, 0},
	} {
		n, err := w.store.WriteClicks(ctx, tc.batch)
		if err != nil || n != tc.new {
			t.Fatalf("%s: wrote %d, %v; want %d", tc.desc, n, err, tc.new)
		}
	}
	var rows, tests int
	b.db.QueryRow(`SELECT count(*), count(*) FILTER (WHERE is_test) FROM clicks`).Scan(&rows, &tests)
	if rows != 4 || tests != 1 {
		t.Fatalf("%d rows (%d test), want 4 (1 test)", rows, tests)
	}
	var country, ip, session, device string
	var occurred time.Time
	b.db.QueryRow(`SELECT geo_country, host(ip), session_id, device_type, occurred_at FROM clicks WHERE click_id = $1`, batch[0].ID).
		Scan(&country, &ip, &session, &device, &occurred)
	if country != "GB" || ip != "81.2.69.142" || session != "sess_1" || device != "desktop" || !occurred.Equal(batch[0].OccurredAt) {
		t.Fatalf("stored %q %q %q %q %v", country, ip, session, device, occurred)
	}
	var nulls int
	b.db.QueryRow(`SELECT count(*) FROM clicks WHERE click_id = $1 AND referrer_url IS NULL AND geo_city IS NULL`, batch[0].ID).Scan(&nulls)
	if nulls != 1 {
		t.Fatal("empty texts are not stored as NULL")
	}
}

func TestWriteClicksDropsWhatIsGone(t *testing.T) {
	b := setup(t)
	w := mustTrafficWorld(t, b)
	ctx := context.Background()
	now := time.Now().UTC()
	orphan := w.click(now)
	orphan.ProgramID = w.program.ID + 1000 // a program deleted since the click
	ghost := int64(999999)
	noPartner := w.click(now)
	noPartner.PartnerID, noPartner.LinkID = &ghost, &ghost
	n, err := w.store.WriteClicks(ctx, []ledger.Click{orphan, noPartner, w.click(now)})
	if err != nil || n != 2 {
		t.Fatalf("wrote %d, %v; want the two clicks of the live program", n, err)
	}
	var partner, link *int64
	b.db.QueryRow(`SELECT partner_id, link_id FROM clicks WHERE click_id = $1`, noPartner.ID).Scan(&partner, &link)
	if partner != nil || link != nil {
		t.Fatalf("a partner or link that is gone was stored: %v %v", partner, link)
	}
}

func TestWriteVisitsIsIdempotent(t *testing.T) {
	b := setup(t)
	w := mustTrafficWorld(t, b)
	ctx := context.Background()
	click := w.click(time.Now())
	id := ledger.NewClickID(time.Now())
	at, _ := ledger.ClickTime(id)
	v := ledger.Visit{ID: id, OccurredAt: at, ProgramID: w.program.ID, ClickID: click.ID, PageURL: "https://acme.example/pricing"}
	for i, want := range []int{1, 0} {
		if n, err := w.store.WriteVisits(ctx, []ledger.Visit{v}); err != nil || n != want {
			t.Fatalf("write %d: %d, %v", i, n, err)
		}
	}
	var clickID, page string
	b.db.QueryRow(`SELECT click_id, page_url FROM visits WHERE visit_id = $1`, v.ID).Scan(&clickID, &page)
	if clickID != click.ID || page != v.PageURL {
		t.Fatalf("stored %q %q", clickID, page)
	}
}

// BenchmarkWriteClicks writes batches of 42 clicks (the size the edge's
// group commit queues at about 10 k clicks/s) from four writers, as the
// click worker does; each op is one batch.
func BenchmarkWriteClicks(b *testing.B) {
	tb := bundleOn(pgtest.New(b))
	p := MustProgram(b, tb)
	ctx := context.Background()
	pa, err := tb.partners.EnrollPartner(ctx, p.ID, "pat@partner.example", "Pat")
	if err != nil {
		b.Fatal(err)
	}
	l, err := tb.partners.CreateLink(ctx, p.ID, pa.ID, "pat", true)
	if err != nil {
		b.Fatal(err)
	}
	w := trafficWorld{program: p, partner: pa, link: l, store: postgres.NewTrafficStore(tb.db.DB)}
	const batchSize = 42
	b.SetParallelism(2) // 4 writers on two cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		batch := make([]ledger.Click, batchSize)
		for pb.Next() {
			now := time.Now()
			for i := range batch {
				batch[i] = w.click(now)
			}
			if n, err := w.store.WriteClicks(ctx, batch); err != nil || n != batchSize {
				b.Fatalf("wrote %d of %d: %v", n, batchSize, err)
			}
		}
	})
	b.ReportMetric(float64(b.N*batchSize)/b.Elapsed().Seconds(), "clicks/s")
}
