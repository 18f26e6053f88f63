package stack

import (
	"context"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
)

// TestLoadClickRollups: the rollups written for loaded clicks add up to
// the clicks, per day and in all (and per hour over the last two days),
// and writing them again replaces them.
func TestLoadClickRollups(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	f := db.MustFixture(t, "bench-rollups")
	ctx := context.Background()
	if _, err := LoadClicks(ctx, db.URL, Clicks{ProgramID: f.ProgramID, PartnerID: f.PartnerID, LinkID: f.LinkID,
		N: 5000, Span: 5 * 24 * time.Hour, Workers: 2}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := LoadClickRollups(ctx, db.URL, f.ProgramID); err != nil {
			t.Fatal(err)
		}
	}
	var clicks, visitors, programClicks, programVisitors, days int64
	if err := db.QueryRow(`SELECT sum(clicks), sum(visitors), count(*) FROM rollup_traffic_daily
		WHERE program_id = $1 AND partner_id = $2 AND link_id = $3`, f.ProgramID, f.PartnerID, f.LinkID).Scan(&clicks, &visitors, &days); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT sum(clicks), sum(visitors) FROM rollup_visitors_daily WHERE program_id = $1`, f.ProgramID).Scan(&programClicks, &programVisitors); err != nil {
		t.Fatal(err)
	}
	// Every loaded click has its own session.
	if clicks != 5000 || visitors != 5000 || programClicks != 5000 || programVisitors != 5000 || days < 5 || days > 6 {
		t.Fatalf("rollups: %d clicks, %d visitors, %d program clicks, %d program visitors over %d days", clicks, visitors,
			programClicks, programVisitors, days)
	}
	// The hours of the last two days hold those days' clicks.
	var hourly, recent int64
	if err := db.QueryRow(`SELECT (SELECT sum(clicks) FROM rollup_clicks_hourly WHERE program_id = $1),
		(SELECT count(*) FROM clicks WHERE program_id = $1 AND occurred_at >= now() - interval '48 hours')`,
		f.ProgramID).Scan(&hourly, &recent); err != nil {
		t.Fatal(err)
	}
	if hourly != recent || recent < 1000 {
		t.Fatalf("clicks per hour sum to %d, the last 48 hours hold %d", hourly, recent)
	}
}
