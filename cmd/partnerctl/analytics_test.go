package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
)

// TestAnalyticsCommands: `analytics verify` prints "0 differences" and
// exits 0 when the rollups match the raw events, prints each difference
// and exits 1 after a rollup row is tampered with; `analytics rebuild`
// fixes it.
func TestAnalyticsCommands(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	ws, err := postgres.NewAccountService(db.DB).CreateWorkspace(ctx, "Acme", "owner@acme.example")
	if err != nil {
		t.Fatal(err)
	}
	p, err := postgres.NewProgramService(db.DB).CreateProgram(ctx, ws.ID, ledger.ProgramInput{Name: ledger.Some("Acme"),
		Domain: ledger.Some("acme.example"), CommissionType: ledger.Some("percent"), CommissionRate: ledger.Some(decimal.NewFromInt(30))})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 9, 12, 0, 0, 0, time.UTC)
	clicks := []ledger.Click{}
	for _, s := range []string{"s1", "s1", "s2"} {
		id := ledger.NewClickID(at)
		occurred, _ := ledger.ClickTime(id)
		clicks = append(clicks, ledger.Click{ID: id, OccurredAt: occurred, ProgramID: p.ID, SessionID: s})
	}
	if _, err := postgres.NewTrafficStore(db.DB).WriteClicks(ctx, clicks); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATABASE_URL": db.URL, "LOG_LEVEL": "error"}
	program := strconv.FormatInt(p.ID, 10)

	out, err := run(t, env, "analytics", "verify", "--program", program)
	if err != nil || out != "0 differences\n" {
		t.Fatalf("verify: %q, %v", out, err)
	}
	if _, err := db.Exec(`UPDATE rollup_traffic_daily SET clicks = 7 WHERE program_id = $1`, p.ID); err != nil {
		t.Fatal(err)
	}
	out, err = run(t, env, "analytics", "verify", "--program", program, "--from", "2026-03-09", "--to", "2026-03-09")
	want := "rollup_traffic_daily day=2026-03-09 partner=0 link=0 clicks: stored 7, recomputed 3\n1 differences\n"
	if out != want || err == nil || exitCode(err) != exitFailure {
		t.Fatalf("verify after tampering: %q, %v (exit %d), want %q and exit 1", out, err, exitCode(err), want)
	}
	// Another day has no difference.
	if out, err := run(t, env, "analytics", "verify", "--program", program, "--from", "2026-03-10"); err != nil || out != "0 differences\n" {
		t.Fatalf("verify of later days: %q, %v", out, err)
	}
	out, err = run(t, env, "analytics", "rebuild", "--program", program)
	if err != nil || out != "program "+program+" rebuilt\n" {
		t.Fatalf("rebuild: %q, %v", out, err)
	}
	if out, err := run(t, env, "analytics", "verify", "--program", program); err != nil || out != "0 differences\n" {
		t.Fatalf("verify after rebuild: %q, %v", out, err)
	}
	if out, err := run(t, env, "analytics", "rebuild"); err != nil || !strings.Contains(out, "program "+program+" rebuilt\n") {
		t.Fatalf("rebuild all: %q, %v", out, err)
	}

	for _, tc := range []struct {
		desc string
		args []string
		want string
	}{
		{"no program", []string{"analytics", "verify"}, "--program must be a program id"},
		{"bad day", []string{"analytics", "verify", "--program", program, "--from", "09/03/2026"}, "--from must be a day as YYYY-MM-DD"},
		{"reversed days", []string{"analytics", "verify", "--program", program, "--from", "2026-03-10", "--to", "2026-03-09"},
			"--to must not be before --from"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := run(t, env, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) || exitCode(err) != exitUser {
				t.Fatalf("%v: %v, want %q and exit 2", tc.args, err, tc.want)
			}
		})
	}
	if _, err := run(t, env, "analytics", "verify", "--program", "999999"); err == nil || ledger.ErrorCode(err) != ledger.ENotFound {
		t.Fatalf("unknown program: %v", err)
	}
}
