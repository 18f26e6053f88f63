package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/migrations"
)

type testBundle struct {
	db       *pgtest.DB
	accounts *postgres.AccountService
	programs *postgres.ProgramService
	partners *postgres.PartnerService
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	t.Parallel()
	return bundleOn(pgtest.New(t))
}

// bundleOn returns the services over db.
func bundleOn(db *pgtest.DB) *testBundle {
	return &testBundle{
		db:       db,
		accounts: postgres.NewAccountService(db.DB),
		programs: postgres.NewProgramService(db.DB),
		partners: postgres.NewPartnerService(db.DB),
	}
}

func percentProgram() ledger.ProgramInput {
	return ledger.ProgramInput{
		Name:           ledger.Some("Acme"),
		Domain:         ledger.Some("acme.example"),
		CommissionType: ledger.Some("percent"),
		CommissionRate: ledger.Some(decimal.NewFromInt(30)),
	}
}

// MustProgram creates a workspace and a program in it.
func MustProgram(tb testing.TB, b *testBundle) *ledger.Program {
	tb.Helper()
	ctx := context.Background()
	ws, err := b.accounts.CreateWorkspace(ctx, "Acme Inc", "owner@acme.example")
	if err != nil {
		tb.Fatal(err)
	}
	p, err := b.programs.CreateProgram(ctx, ws.ID, percentProgram())
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func TestMigrationsUpFromEmpty(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	// The cloned database is at the newest version...
	if err := migrations.CheckCurrent(ctx, b.db.DB.DB.DB); err != nil {
		t.Fatal(err)
	}
	// ...and the whole set goes down to empty and up again.
	var tables int
	b.db.QueryRow(`SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public' AND table_name = 'sales'`).Scan(&tables)
	if tables != 1 {
		t.Fatal("sales table missing after migrations")
	}
	if _, err := b.db.Exec(`DROP SCHEMA public CASCADE; CREATE SCHEMA public`); err != nil {
		t.Fatal(err)
	}
	if err := migrations.CheckCurrent(ctx, b.db.DB.DB.DB); err == nil {
		t.Fatal("CheckCurrent accepted an empty database")
	}
	if err := migrations.Up(ctx, b.db.DB.DB.DB, nil); err != nil {
		t.Fatal(err)
	}
	if err := migrations.CheckCurrent(ctx, b.db.DB.DB.DB); err != nil {
		t.Fatal(err)
	}
	// Clicks are partitioned by month, with the current month prepared.
	want := "clicks_" + time.Now().UTC().Format("2006_01")
	var exists bool
	b.db.QueryRow(`SELECT to_regclass($1) IS NOT NULL`, want).Scan(&exists)
	if !exists {
		t.Fatalf("partition %s missing", want)
	}
}

func TestProgramCreateAndRead(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	p := MustProgram(t, b)
	if p.ID == 0 || p.Name != "Acme" || p.CommissionRate.String() != "30" || p.CookieDuration != 90 || p.HoldDays != 30 {
		t.Fatalf("program = %+v", p)
	}
	if !strings.HasPrefix(p.APITokenMasked, "aff_****") {
		t.Fatalf("masked key = %q", p.APITokenMasked)
	}
	var keys int
	b.db.QueryRow(`SELECT count(*) FROM program_keys WHERE program_id = $1`, p.ID).Scan(&keys)
	if keys != 2 {
		t.Fatalf("program has %d keys, want a live and a test key", keys)
	}
	t.Run("ErrNotFound", func(t *testing.T) {
		_, err := b.programs.Program(ctx, p.ID+1000)
		if ledger.ErrorCode(err) != ledger.ENotFound {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("ErrWorkspaceNotFound", func(t *testing.T) {
		_, err := b.programs.CreateProgram(ctx, 999999, percentProgram())
		if ledger.ErrorCode(err) != ledger.ENotFound {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("Update", func(t *testing.T) {
		got, err := b.programs.UpdateProgram(ctx, p.ID, ledger.ProgramInput{CookieDuration: ledger.Some[int64](30), LeadAuth: ledger.Some("browser_allowed")})
		if err != nil {
			t.Fatal(err)
		}
		if got.CookieDuration != 30 || got.LeadAuth != "browser_allowed" || got.Name != "Acme" {
			t.Fatalf("updated = %+v", got)
		}
	})
	t.Run("ErrUpdateInvalid", func(t *testing.T) {
		_, err := b.programs.UpdateProgram(ctx, p.ID, ledger.ProgramInput{CommissionRate: ledger.Some(decimal.NewFromInt(101))})
		if ledger.ErrorMessage(err) != ledger.MsgCommissionRateCap {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestProgramKeys(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	p := MustProgram(t, b)

	g, err := b.programs.RegenerateProgramKey(ctx, p.ID, ledger.LiveKey)
	if err != nil {
		t.Fatal(err)
	}
	k, err := b.programs.AuthenticateProgramKey(ctx, g.APIKey)
	if err != nil || k.ProgramID != p.ID || k.Mode != ledger.LiveKey || k.Marked() {
		t.Fatalf("auth = %+v, %v", k, err)
	}
	var stored []byte
	b.db.QueryRow(`SELECT key_hash FROM program_keys WHERE program_id = $1 AND mode = 'live'`, p.ID).Scan(&stored)
	if strings.Contains(string(stored), g.APIKey) || len(stored) != 32 {
		t.Fatal("the key is not stored as its SHA-256")
	}

	t.Run("ExactMatchOnly", func(t *testing.T) {
		for _, tok := range []string{g.APIKey[:len(g.APIKey)-1], g.APIKey + "x", strings.ToUpper(g.APIKey), " " + g.APIKey} {
			if _, err := b.programs.AuthenticateProgramKey(ctx, tok); ledger.ErrorCode(err) != ledger.ENotFound {
				t.Fatalf("token %q: err = %v", tok, err)
			}
		}
	})

	t.Run("RotationMarkThenRegenerate", func(t *testing.T) {
		deadline := time.Now().Add(24 * time.Hour)
		r, err := b.programs.MarkKeyRotation(ctx, p.ID, deadline)
		if err != nil || !r.Deadline.Equal(deadline.UTC().Truncate(time.Microsecond)) {
			t.Fatalf("mark = %+v, %v", r, err)
		}
		k, err := b.programs.AuthenticateProgramKey(ctx, g.APIKey)
		if err != nil || !k.Marked() || k.Retired(time.Now()) {
			t.Fatalf("marked key = %+v, %v", k, err)
		}
		g2, err := b.programs.RegenerateProgramKey(ctx, p.ID, ledger.LiveKey)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.programs.AuthenticateProgramKey(ctx, g.APIKey); ledger.ErrorCode(err) != ledger.ENotFound {
			t.Fatalf("old key still authenticates: %v", err)
		}
		k2, err := b.programs.AuthenticateProgramKey(ctx, g2.APIKey)
		if err != nil || k2.Marked() {
			t.Fatalf("new key = %+v, %v (warnings must stop)", k2, err)
		}
	})

	t.Run("TestKey", func(t *testing.T) {
		tk, err := b.programs.RegenerateProgramKey(ctx, p.ID, ledger.TestKey)
		if err != nil || !strings.HasPrefix(tk.APIKey, "aff_test_") {
			t.Fatalf("test key = %+v, %v", tk, err)
		}
		k, err := b.programs.AuthenticateProgramKey(ctx, tk.APIKey)
		if err != nil || !k.IsTest() {
			t.Fatalf("test key auth = %+v, %v", k, err)
		}
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		if _, err := b.programs.RegenerateProgramKey(ctx, p.ID+1000, ledger.LiveKey); ledger.ErrorCode(err) != ledger.ENotFound {
			t.Fatalf("err = %v", err)
		}
		if _, err := b.programs.MarkKeyRotation(ctx, p.ID+1000, time.Now()); ledger.ErrorCode(err) != ledger.ENotFound {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestAccounts(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	ws, err := b.accounts.CreateWorkspace(ctx, "Acme", "Owner@Acme.example")
	if err != nil {
		t.Fatal(err)
	}
	p, err := b.programs.CreateProgram(ctx, ws.ID, percentProgram())
	if err != nil {
		t.Fatal(err)
	}
	memberID, err := b.accounts.AddMember(ctx, ws.ID, "member@acme.example", ledger.RoleMember)
	if err != nil {
		t.Fatal(err)
	}
	outsiderWS, err := b.accounts.CreateWorkspace(ctx, "Other", "other@other.example")
	if err != nil {
		t.Fatal(err)
	}

	if role, err := b.accounts.ProgramRole(ctx, ws.OwnerUserID, p.ID); err != nil || role != ledger.RoleOwner {
		t.Fatalf("owner role = %q, %v", role, err)
	}
	if role, err := b.accounts.ProgramRole(ctx, memberID, p.ID); err != nil || role != ledger.RoleMember {
		t.Fatalf("member role = %q, %v", role, err)
	}
	if _, err := b.accounts.ProgramRole(ctx, outsiderWS.OwnerUserID, p.ID); ledger.ErrorCode(err) != ledger.EForbidden {
		t.Fatalf("outsider: %v", err)
	}
	if _, err := b.accounts.ProgramRole(ctx, memberID, p.ID+999); ledger.ErrorCode(err) != ledger.ENotFound {
		t.Fatalf("unknown program: %v", err)
	}

	sess, err := b.accounts.CreateSession(ctx, memberID, ledger.DashboardSession)
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.accounts.AuthenticateSession(ctx, sess.Token)
	if err != nil || got.UserID != memberID {
		t.Fatalf("session = %+v, %v", got, err)
	}
	if _, err := b.accounts.SuspendUser(ctx, memberID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.accounts.AuthenticateSession(ctx, sess.Token); ledger.ErrorCode(err) != ledger.EUnauthorized {
		t.Fatalf("suspended user's session: %v", err)
	}
	_, err = b.accounts.CreateSession(ctx, memberID, ledger.DashboardSession)
	var le *ledger.Error
	if !errors.As(err, &le) || le.Code != ledger.EForbidden || le.Details["code"] != "ACCOUNT_BLOCKED" {
		t.Fatalf("session for suspended user: %v", err)
	}

	t.Run("ExpiredSession", func(t *testing.T) {
		ownerSess, err := b.accounts.CreateSession(ctx, ws.OwnerUserID, ledger.DashboardSession)
		if err != nil {
			t.Fatal(err)
		}
		b.db.Exec(`UPDATE sessions SET expires_at = now() - interval '1 second' WHERE user_id = $1`, ws.OwnerUserID)
		if _, err := b.accounts.AuthenticateSession(ctx, ownerSess.Token); ledger.ErrorCode(err) != ledger.EUnauthorized {
			t.Fatalf("expired session: %v", err)
		}
	})

	t.Run("ErrInvalid", func(t *testing.T) {
		if _, err := b.accounts.CreateWorkspace(ctx, "", "a@b.example"); ledger.ErrorMessage(err) != ledger.MsgWorkspaceName {
			t.Fatalf("err = %v", err)
		}
		if _, err := b.accounts.CreateWorkspace(ctx, "X", "not-an-email"); ledger.ErrorMessage(err) != ledger.MsgEmail {
			t.Fatalf("err = %v", err)
		}
		if _, err := b.accounts.AddMember(ctx, ws.ID, "x@y.example", "boss"); ledger.ErrorMessage(err) != ledger.MsgRole {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestPartnersAndLinks(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	p := MustProgram(t, b)
	partner, err := b.partners.EnrollPartner(ctx, p.ID, "Pat@Partner.example", "Pat")
	if err != nil {
		t.Fatal(err)
	}
	if partner.Email != "pat@partner.example" {
		t.Fatalf("partner = %+v", partner)
	}
	again, err := b.partners.EnrollPartner(ctx, p.ID, "pat@partner.example", "Pat")
	if err != nil || again.ID != partner.ID {
		t.Fatalf("re-enrolment made a second partner: %+v, %v", again, err)
	}
	link, err := b.partners.CreateLink(ctx, p.ID, partner.ID, "pat-30", true)
	if err != nil || link.Code != "pat-30" || !link.Active || *link.PartnerID != partner.ID {
		t.Fatalf("link = %+v, %v", link, err)
	}
	t.Run("ErrCodeTaken", func(t *testing.T) {
		_, err := b.partners.CreateLink(ctx, p.ID, partner.ID, "pat-30", true)
		if ledger.ErrorCode(err) != ledger.EConflict {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("ErrNotEnrolled", func(t *testing.T) {
		other, err := b.partners.EnrollPartner(ctx, MustProgram(t, b).ID, "other@partner.example", "O")
		if err != nil {
			t.Fatal(err)
		}
		_, err = b.partners.CreateLink(ctx, p.ID, other.ID, "other-1", true)
		if ledger.ErrorMessage(err) != ledger.MsgPartnerID {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("ErrBadCode", func(t *testing.T) {
		_, err := b.partners.CreateLink(ctx, p.ID, partner.ID, "has space", true)
		if ledger.ErrorMessage(err) != ledger.MsgLinkCode {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("Deactivate", func(t *testing.T) {
		l, err := b.partners.SetLinkActive(ctx, link.ID, false)
		if err != nil || l.Active {
			t.Fatalf("link = %+v, %v", l, err)
		}
		if _, err := b.partners.SetLinkActive(ctx, link.ID+999, false); ledger.ErrorCode(err) != ledger.ENotFound {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("ProcessorAccount", func(t *testing.T) {
		if _, err := b.partners.ConnectProcessorAccount(ctx, p.ID, "acct_123ABC"); err != nil {
			t.Fatal(err)
		}
		other := MustProgram(t, b)
		if _, err := b.partners.ConnectProcessorAccount(ctx, other.ID, "acct_123ABC"); ledger.ErrorCode(err) != ledger.EConflict {
			t.Fatalf("account connected twice: %v", err)
		}
		if _, err := b.partners.ConnectProcessorAccount(ctx, p.ID, "cus_123"); ledger.ErrorMessage(err) != ledger.MsgProcessorAcct {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("AgentKey", func(t *testing.T) {
		k, err := b.partners.CreateAgentKey(ctx, p.WorkspaceID, []string{"programs:read"})
		if err != nil || !strings.HasPrefix(k.Key, "agt_") {
			t.Fatalf("agent key = %+v, %v", k, err)
		}
		if _, err := b.partners.CreateAgentKey(ctx, p.WorkspaceID, []string{"root"}); ledger.ErrorMessage(err) != ledger.MsgScopes {
			t.Fatalf("err = %v", err)
		}
	})
}
