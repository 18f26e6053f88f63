package postgres_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
)

// brandLinkQuery is a listing query of the program with the defaults.
func brandLinkQuery(t *testing.T, programID int64, in ledger.BrandLinkQueryInput) ledger.BrandLinkQuery {
	t.Helper()
	q, err := in.Validate(programID)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func TestBrandLinks(t *testing.T) {
	b := setup(t)
	w := mustTrafficWorld(t, b) // program, partner Pat and its link "pat"
	ctx := context.Background()
	links := postgres.NewBrandLinkService(b.db.DB)

	t.Run("OK create", func(t *testing.T) {
		l, err := links.CreateLink(ctx, w.program.ID, w.partner.ID, "pat-2", true)
		if err != nil {
			t.Fatal(err)
		}
		if l.ID == 0 || l.Code != "pat-2" || !l.Active || *l.PartnerID != w.partner.ID || *l.ProgramID != w.program.ID ||
			l.PartnerName != "Pat" || l.PartnerEmail != "pat@partner.example" || l.Clicks != 0 ||
			l.URL() != "https://acme.example/?aff=pat-2" {
			t.Fatalf("link = %+v, url %s", l, l.URL())
		}
		d, err := links.CreateLink(ctx, w.program.ID, w.partner.ID, "pat-off", false)
		if err != nil || d.Active {
			t.Fatalf("disabled link = %+v, %v", d, err)
		}
	})
	t.Run("ErrCodeTaken", func(t *testing.T) {
		_, err := links.CreateLink(ctx, w.program.ID, w.partner.ID, "pat", true)
		if ledger.ErrorCode(err) != ledger.EConflict || ledger.ErrorMessage(err) != ledger.MsgLinkCodeTaken {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		other := MustProgram(t, b)
		stranger, err := b.partners.EnrollPartner(ctx, other.ID, "sam@partner.example", "Sam")
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			desc      string
			partnerID int64
			code      string
			msg       string
		}{
			{"code with a space", w.partner.ID, "a b", ledger.MsgLinkCode},
			{"code too long", w.partner.ID, string(make([]byte, 65)), ledger.MsgLinkCode},
			{"empty code", w.partner.ID, "", ledger.MsgLinkCode},
			{"partner of another program", stranger.ID, "sam-here", ledger.MsgPartnerID},
			{"no such partner", stranger.ID + 1000, "ghost", ledger.MsgPartnerID},
		} {
			_, err := links.CreateLink(ctx, w.program.ID, tc.partnerID, tc.code, true)
			if ledger.ErrorCode(err) != ledger.EInvalid || ledger.ErrorMessage(err) != tc.msg {
				t.Errorf("%s: err = %v", tc.desc, err)
			}
		}
		if _, err := links.CreateLink(ctx, other.ID+1000, w.partner.ID, "nowhere", true); ledger.ErrorCode(err) != ledger.ENotFound {
			t.Errorf("unknown program: %v", err)
		}
	})

	t.Run("OK status", func(t *testing.T) {
		l, err := links.SetLinkStatus(ctx, w.program.ID, w.link.ID, false)
		if err != nil || l.Active || l.Code != "pat" || l.PartnerName != "Pat" {
			t.Fatalf("disabled: %+v, %v", l, err)
		}
		l, err = links.SetLinkStatus(ctx, w.program.ID, w.link.ID, true)
		if err != nil || !l.Active {
			t.Fatalf("re-enabled: %+v, %v", l, err)
		}
		var active bool
		b.db.QueryRow(`SELECT active FROM links WHERE id = $1`, w.link.ID).Scan(&active)
		if !active {
			t.Fatal("stored link is not active")
		}
	})
	t.Run("ErrNotFound status", func(t *testing.T) {
		other := MustProgram(t, b)
		if _, err := links.SetLinkStatus(ctx, other.ID, w.link.ID, false); ledger.ErrorCode(err) != ledger.ENotFound {
			t.Fatalf("link of another program: %v", err)
		}
		var active bool
		b.db.QueryRow(`SELECT active FROM links WHERE id = $1`, w.link.ID).Scan(&active)
		if !active {
			t.Fatal("another program's call changed the link")
		}
		b.db.MustExec(`INSERT INTO links (program_id, code, is_test) VALUES ($1, 'fixture', true)`, w.program.ID)
		var testID int64
		b.db.QueryRow(`SELECT id FROM links WHERE code = 'fixture'`).Scan(&testID)
		if _, err := links.SetLinkStatus(ctx, w.program.ID, testID, false); ledger.ErrorCode(err) != ledger.ENotFound {
			t.Fatalf("test link: %v", err)
		}
	})
}

func TestBrandLinkListing(t *testing.T) {
	b := setup(t)
	w := mustTrafficWorld(t, b)
	ctx := context.Background()
	links := postgres.NewBrandLinkService(b.db.DB)
	kim, err := b.partners.EnrollPartner(ctx, w.program.ID, "kim@partner.example", "Kim")
	if err != nil {
		t.Fatal(err)
	}
	// Links, oldest first: pat (w.link), kim-1, kim-2 (disabled), pat-2,
	// and the program's test fixture, which the listing leaves out.
	kim1, _ := links.CreateLink(ctx, w.program.ID, kim.ID, "kim-1", true)
	kim2, _ := links.CreateLink(ctx, w.program.ID, kim.ID, "kim-2", false)
	pat2, err := links.CreateLink(ctx, w.program.ID, w.partner.ID, "pat-2", true)
	if err != nil {
		t.Fatal(err)
	}
	b.db.MustExec(`INSERT INTO links (program_id, code, is_test) VALUES ($1, 'fixture', true)`, w.program.ID)
	// Another program's link is never listed.
	other := MustProgram(t, b)
	sam, _ := b.partners.EnrollPartner(ctx, other.ID, "sam@partner.example", "Sam")
	if _, err := links.CreateLink(ctx, other.ID, sam.ID, "sam", true); err != nil {
		t.Fatal(err)
	}

	// Clicks: 3 on pat, 1 on kim-1, and a test click on pat that is not counted.
	now := time.Now().UTC()
	clicks := []ledger.Click{w.click(now), w.click(now), w.click(now.Add(-time.Minute))}
	kc := w.click(now)
	kc.PartnerID, kc.LinkID = &kim.ID, &kim1.ID
	tc := w.click(now)
	tc.IsTest = true
	if _, err := w.store.WriteClicks(ctx, append(clicks, kc, tc)); err != nil {
		t.Fatal(err)
	}

	codes := func(p *ledger.BrandLinkPage) []string {
		var out []string
		for _, l := range p.Links {
			out = append(out, l.Code)
		}
		return out
	}
	for _, tc := range []struct {
		desc      string
		in        ledger.BrandLinkQueryInput
		want      []string
		total     int64
		pageCount int64
	}{
		{"every link newest first", ledger.BrandLinkQueryInput{}, []string{"pat-2", "kim-2", "kim-1", "pat"}, 4, 1},
		{"page 1 of 2", ledger.BrandLinkQueryInput{PageSize: ledger.Some[int64](3)}, []string{"pat-2", "kim-2", "kim-1"}, 4, 2},
		{"page 2 of 2", ledger.BrandLinkQueryInput{Page: ledger.Some[int64](2), PageSize: ledger.Some[int64](3)}, []string{"pat"}, 4, 2},
		{"past the last page", ledger.BrandLinkQueryInput{Page: ledger.Some[int64](9), PageSize: ledger.Some[int64](3)}, nil, 4, 2},
		{"a page far past any row", ledger.BrandLinkQueryInput{Page: ledger.Some[int64](1 << 62), PageSize: ledger.Some[int64](100)}, nil, 4, 1},
		{"one partner", ledger.BrandLinkQueryInput{PartnerID: ledger.Some(kim.ID)}, []string{"kim-2", "kim-1"}, 2, 1},
		{"active", ledger.BrandLinkQueryInput{Status: ledger.Some("active")}, []string{"pat-2", "kim-1", "pat"}, 3, 1},
		{"disabled", ledger.BrandLinkQueryInput{Status: ledger.Some("disabled")}, []string{"kim-2"}, 1, 1},
		{"one partner's active links", ledger.BrandLinkQueryInput{PartnerID: ledger.Some(w.partner.ID), Status: ledger.Some("active")}, []string{"pat-2", "pat"}, 2, 1},
		{"a partner of another program", ledger.BrandLinkQueryInput{PartnerID: ledger.Some(sam.ID)}, nil, 0, 0},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			p, err := links.ListLinks(ctx, brandLinkQuery(t, w.program.ID, tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if got := codes(p); len(got) != len(tc.want) || !slices.Equal(got, tc.want) {
				t.Fatalf("codes %v, want %v", got, tc.want)
			}
			if p.Total != tc.total || p.PageCount() != tc.pageCount {
				t.Fatalf("total %d, pages %d; want %d, %d", p.Total, p.PageCount(), tc.total, tc.pageCount)
			}
		})
	}

	p, err := links.ListLinks(ctx, brandLinkQuery(t, w.program.ID, ledger.BrandLinkQueryInput{}))
	if err != nil {
		t.Fatal(err)
	}
	clicksOf := map[string]int64{}
	for _, l := range p.Links {
		clicksOf[l.Code] = l.Clicks
		if l.Domain != "acme.example" || l.CreatedAt.IsZero() || l.CreatedAt.Location() != time.UTC {
			t.Fatalf("row %+v", l)
		}
	}
	if clicksOf["pat"] != 3 || clicksOf["kim-1"] != 1 || clicksOf["kim-2"] != 0 || clicksOf["pat-2"] != 0 {
		t.Fatalf("clicks %v", clicksOf)
	}
	if p.Links[0].ID != pat2.ID || p.Links[1].ID != kim2.ID || p.Links[1].PartnerName != "Kim" || p.Links[1].PartnerEmail != "kim@partner.example" {
		t.Fatalf("rows %+v", p.Links[:2])
	}
}
