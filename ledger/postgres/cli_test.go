package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
)

type cliBundle struct {
	*testBundle
	clock *testClock
	cli   *postgres.CLIService
}

func setupCLI(t *testing.T) *cliBundle {
	b := &cliBundle{testBundle: setup(t), clock: &testClock{t: time.Now().UTC().Truncate(time.Second)}}
	b.db.Now = b.clock.Now
	b.cli = postgres.NewCLIService(b.db.DB)
	return b
}

// mustUser creates a user owning a workspace; it returns both ids.
func (b *cliBundle) mustUser(t *testing.T, email string) (userID, workspaceID int64) {
	t.Helper()
	ws, err := b.accounts.CreateWorkspace(context.Background(), "WS "+email, email)
	if err != nil {
		t.Fatal(err)
	}
	return ws.OwnerUserID, ws.ID
}

func TestCLILoginLife(t *testing.T) {
	b := setupCLI(t)
	ctx := context.Background()
	userID, wsID := b.mustUser(t, "brand@acme.example")

	start, err := startConfirmed(ctx, b.cli)
	if err != nil {
		t.Fatal(err)
	}
	if want := b.clock.Now().Add(5 * time.Minute); !start.ExpiresAt.Equal(want) || len(start.State) < 32 {
		t.Fatalf("start %+v, want expiry %v", start, want)
	}
	// Only the state's hash is stored.
	var rows int
	if err := b.db.QueryRow(`SELECT count(*) FROM cli_sessions WHERE state_hash = sha256($1::bytea) AND status = 'pending'`,
		[]byte(start.State)).Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("hashed state rows %d, %v", rows, err)
	}

	if p, err := b.cli.PollLogin(ctx, start.State, ""); err != nil || p.Status != ledger.PollPending || p.Token != "" {
		t.Fatalf("poll before sign-in: %+v, %v", p, err)
	}
	b.clock.Add(time.Minute)
	if err := b.cli.CheckLogin(ctx, start.State); err != nil {
		t.Fatal(err)
	}
	if err := b.cli.CompleteLogin(ctx, start.State, userID); err != nil {
		t.Fatal(err)
	}
	// A second callback finds the session used.
	if err := b.cli.CompleteLogin(ctx, start.State, userID); ledger.ErrorMessage(err) != ledger.MsgCLISessionNotFoundUsed {
		t.Fatalf("second callback: %v", err)
	}
	p, err := b.cli.PollLogin(ctx, start.State, "")
	if err != nil || p.Status != ledger.PollComplete || p.Email != "brand@acme.example" || p.UserID != userID ||
		p.AdvertiserID == nil || *p.AdvertiserID != wsID {
		t.Fatalf("first poll after sign-in: %+v, %v", p, err)
	}
	if !p.TokenExpires.Equal(b.clock.Now().Add(ledger.CLISessionTTL)) {
		t.Fatalf("token expires %v", p.TokenExpires)
	}
	sess, err := b.accounts.AuthenticateSession(ctx, p.Token)
	if err != nil || sess.Kind != ledger.CLISession || sess.UserID != userID {
		t.Fatalf("token authenticates as %+v, %v", sess, err)
	}
	// The token is handed out once.
	if _, err := b.cli.PollLogin(ctx, start.State, ""); ledger.ErrorMessage(err) != ledger.MsgCLISessionConsumed || ledger.ErrorCode(err) != ledger.EInvalid {
		t.Fatalf("re-poll: %v", err)
	}
	b.clock.Add(time.Hour)
	if _, err := b.cli.PollLogin(ctx, start.State, ""); ledger.ErrorMessage(err) != ledger.MsgCLISessionConsumed {
		t.Fatalf("re-poll after expiry: %v", err)
	}
	if _, err := b.cli.PollLogin(ctx, "no-such-state", ""); ledger.ErrorMessage(err) != ledger.MsgCLISessionNotFound || ledger.ErrorCode(err) != ledger.ENotFound {
		t.Fatalf("unknown state: %v", err)
	}
}

func TestCLILoginExpiry(t *testing.T) {
	b := setupCLI(t)
	ctx := context.Background()
	userID, _ := b.mustUser(t, "late@acme.example")
	cases := []struct {
		desc    string
		signIn  bool          // signed in before the expiry
		advance time.Duration // after the start
	}{
		{desc: "pending at exactly five minutes", advance: ledger.CLILoginTTL},
		{desc: "pending long after", advance: 2 * time.Hour},
		{desc: "signed in but first polled after five minutes", signIn: true, advance: ledger.CLILoginTTL + time.Second},
	}
	for _, c := range cases {
		t.Run(c.desc, func(t *testing.T) {
			start, err := startConfirmed(ctx, b.cli)
			if err != nil {
				t.Fatal(err)
			}
			if c.signIn {
				if err := b.cli.CompleteLogin(ctx, start.State, userID); err != nil {
					t.Fatal(err)
				}
			}
			b.clock.Add(c.advance)
			defer b.clock.Add(-c.advance)
			if p, err := b.cli.PollLogin(ctx, start.State, ""); err != nil || p.Status != ledger.PollExpired || p.Token != "" {
				t.Fatalf("poll: %+v, %v", p, err)
			}
			want := ledger.MsgCLISessionExpired
			if c.signIn {
				want = ledger.MsgCLISessionNotFoundUsed
			}
			if err := b.cli.CheckLogin(ctx, start.State); ledger.ErrorMessage(err) != want {
				t.Fatalf("callback check: %v, want %q", err, want)
			}
			if err := b.cli.CompleteLogin(ctx, start.State, userID); ledger.ErrorMessage(err) != want {
				t.Fatalf("callback: %v, want %q", err, want)
			}
		})
	}
	t.Run("sessions expired for a day are deleted by later starts", func(t *testing.T) {
		old, err := startConfirmed(ctx, b.cli)
		if err != nil {
			t.Fatal(err)
		}
		b.clock.Add(25 * time.Hour)
		defer b.clock.Add(-25 * time.Hour)
		if _, err := startConfirmed(ctx, b.cli); err != nil {
			t.Fatal(err)
		}
		if _, err := b.cli.PollLogin(ctx, old.State, ""); ledger.ErrorMessage(err) != ledger.MsgCLISessionNotFound {
			t.Fatalf("old session: %v", err)
		}
	})
}

func TestCLILoginConcurrentPollsHandOutOneToken(t *testing.T) {
	b := setupCLI(t)
	ctx := context.Background()
	userID, _ := b.mustUser(t, "race@acme.example")
	start, err := startConfirmed(ctx, b.cli)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.cli.CompleteLogin(ctx, start.State, userID); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	tokens, consumed := 0, 0
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := b.cli.PollLogin(ctx, start.State, "")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && p.Status == ledger.PollComplete && p.Token != "":
				tokens++
			case ledger.ErrorMessage(err) == ledger.MsgCLISessionConsumed:
				consumed++
			default:
				t.Errorf("poll: %+v, %v", p, err)
			}
		}()
	}
	wg.Wait()
	if tokens != 1 || consumed != 9 {
		t.Fatalf("%d tokens, %d consumed; want 1 and 9", tokens, consumed)
	}
	var sessions int
	b.db.QueryRow(`SELECT count(*) FROM sessions WHERE user_id = $1 AND kind = 'cli'`, userID).Scan(&sessions)
	if sessions != 1 {
		t.Fatalf("%d CLI sessions minted", sessions)
	}
}

func TestCLILoginSuspendedAfterSignIn(t *testing.T) {
	b := setupCLI(t)
	ctx := context.Background()
	userID, _ := b.mustUser(t, "gone@acme.example")
	start, _ := startConfirmed(ctx, b.cli)
	if err := b.cli.CompleteLogin(ctx, start.State, userID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.accounts.SuspendUser(ctx, userID); err != nil {
		t.Fatal(err)
	}
	_, err := b.cli.PollLogin(ctx, start.State, "")
	le, _ := err.(*ledger.Error)
	if le == nil || le.Code != ledger.EForbidden || le.Details["code"] != ledger.DetailAccountBlocked {
		t.Fatalf("poll of a suspended user: %v", err)
	}
	var status string
	b.db.QueryRow(`SELECT status FROM cli_sessions WHERE state_hash = sha256($1::bytea)`, []byte(start.State)).Scan(&status)
	if status != "signed_in" {
		t.Fatalf("session %s after a refused poll, want signed_in (nothing minted)", status)
	}
}

func TestCLILoginWithoutWorkspace(t *testing.T) {
	b := setupCLI(t)
	ctx := context.Background()
	u, err := b.accounts.LinkIdentity(ctx, ledger.Identity{Subject: "s-1", Email: "new@brand.example"})
	if err != nil {
		t.Fatal(err)
	}
	start, _ := startConfirmed(ctx, b.cli)
	if err := b.cli.CompleteLogin(ctx, start.State, u.ID); err != nil {
		t.Fatal(err)
	}
	p, err := b.cli.PollLogin(ctx, start.State, "")
	if err != nil || p.Status != ledger.PollComplete || p.AdvertiserID != nil {
		t.Fatalf("poll: %+v, %v (want no advertiser)", p, err)
	}
}

func TestCLIProgramsAndStatus(t *testing.T) {
	b := setupCLI(t)
	ctx := context.Background()
	ownerID, wsID := b.mustUser(t, "owner@acme.example")
	_, otherWS := b.mustUser(t, "other@else.example")
	if _, err := b.accounts.AddMember(ctx, otherWS, "owner@acme.example", ledger.RoleMember); err != nil {
		t.Fatal(err)
	}
	in := percentProgram()
	in.CommissionType = ledger.Some("recurring_percent")
	in.DurationMonths = ledger.Some(int64(12))
	p1, err := b.programs.CreateProgram(ctx, wsID, in)
	if err != nil {
		t.Fatal(err)
	}
	b.clock.Add(time.Second)
	p2, err := b.programs.CreateProgram(ctx, otherWS, percentProgram())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if _, err := b.partners.EnrollPartner(ctx, p1.ID, fmt.Sprintf("pat%d@partner.example", i), "Pat"); err != nil {
			t.Fatal(err)
		}
	}
	// The test fixture's partner is never counted.
	if _, err := postgres.NewSyntheticStore(b.db.DB).EnsureFixture(ctx, p1.ID); err != nil {
		t.Fatal(err)
	}

	list, err := b.cli.Programs(ctx, ownerID)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != p1.ID || list[1].ID != p2.ID {
		t.Fatalf("programs %+v", list)
	}
	if l := list[0]; l.Commission != "30% recurring (12 months)" || l.Partners != 2 || l.Status != "active" || l.Name != "Acme" {
		t.Fatalf("first program %+v", l)
	}
	if l := list[1]; l.Commission != "30% one-time" || l.Partners != 0 {
		t.Fatalf("second program %+v", l)
	}
	if list, _ := b.cli.Programs(ctx, 999999); len(list) != 0 {
		t.Fatalf("programs of nobody: %+v", list)
	}

	st, err := b.cli.Status(ctx, p1.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.ProgramID != p1.ID || st.ActivePartners != 2 || st.PendingCommissions != 0 || st.ProcessorConnected ||
		st.Recent != (ledger.EventCounts{}) {
		t.Fatalf("status %+v", st)
	}
	if _, err := b.cli.Status(ctx, 999999); ledger.ErrorCode(err) != ledger.ENotFound {
		t.Fatalf("status of no program: %v", err)
	}
}

func TestSyntheticFixture(t *testing.T) {
	b := setupCLI(t)
	ctx := context.Background()
	p := MustProgram(t, b.testBundle)
	store := postgres.NewSyntheticStore(b.db.DB)

	fx, err := store.EnsureFixture(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !fx.Changed || fx.Code == "" || fx.Domain != "acme.example" || fx.Currency != ledger.USD {
		t.Fatalf("first fixture %+v", fx)
	}
	var partnerTest, linkTest, linkActive bool
	var enrolment string
	b.db.QueryRow(`SELECT is_test FROM partners WHERE id = $1`, fx.PartnerID).Scan(&partnerTest)
	b.db.QueryRow(`SELECT is_test, active FROM links WHERE id = $1`, fx.LinkID).Scan(&linkTest, &linkActive)
	b.db.QueryRow(`SELECT status FROM enrollments WHERE program_id = $1 AND partner_id = $2`, p.ID, fx.PartnerID).Scan(&enrolment)
	if !partnerTest || !linkTest || !linkActive || enrolment != "active" {
		t.Fatalf("partner test %v, link test %v active %v, enrolment %s", partnerTest, linkTest, linkActive, enrolment)
	}

	again, err := store.EnsureFixture(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if again.Changed || again.PartnerID != fx.PartnerID || again.LinkID != fx.LinkID || again.Code != fx.Code {
		t.Fatalf("second fixture %+v, first %+v", again, fx)
	}

	// Refreshed: a disabled link and a removed enrolment come back.
	b.db.Exec(`UPDATE links SET active = false WHERE id = $1`, fx.LinkID)
	b.db.Exec(`UPDATE enrollments SET status = 'removed' WHERE program_id = $1 AND partner_id = $2`, p.ID, fx.PartnerID)
	refreshed, err := store.EnsureFixture(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	b.db.QueryRow(`SELECT active FROM links WHERE id = $1`, fx.LinkID).Scan(&linkActive)
	b.db.QueryRow(`SELECT status FROM enrollments WHERE program_id = $1 AND partner_id = $2`, p.ID, fx.PartnerID).Scan(&enrolment)
	if !refreshed.Changed || refreshed.LinkID != fx.LinkID || !linkActive || enrolment != "active" {
		t.Fatalf("refreshed %+v, active %v, enrolment %s", refreshed, linkActive, enrolment)
	}

	// Concurrent first runs of another program make one partner and link.
	p2, err := b.programs.CreateProgram(ctx, p.WorkspaceID, percentProgram())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := store.EnsureFixture(ctx, p2.ID); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	var links int
	b.db.QueryRow(`SELECT count(*) FROM links WHERE program_id = $1 AND is_test`, p2.ID).Scan(&links)
	if links != 1 {
		t.Fatalf("%d fixture links after concurrent runs", links)
	}
	if _, err := store.EnsureFixture(ctx, 999999); ledger.ErrorCode(err) != ledger.ENotFound {
		t.Fatalf("fixture of no program: %v", err)
	}
}

// startConfirmed starts a login and confirms its code, as the person does
// on the sign-in page before signing in.
func startConfirmed(ctx context.Context, cli *postgres.CLIService) (*ledger.CLILoginStart, error) {
	start, err := cli.StartLogin(ctx, ledger.CLILoginOptions{})
	if err != nil {
		return nil, err
	}
	return start, cli.ConfirmLogin(ctx, start.State, start.UserCode)
}

func TestCLILoginBinding(t *testing.T) {
	b := setupCLI(t)
	ctx := context.Background()
	uid, _ := b.mustUser(t, "bind@example.com")
	u := struct{ ID int64 }{uid}
	verifier := "a-verifier-only-the-starting-terminal-knows-0123456789"
	start, err := b.cli.StartLogin(ctx, ledger.CLILoginOptions{UserAgent: "partnertrack-cli/1.0\n", CodeChallenge: ledger.CodeChallengeS256(verifier)})
	if err != nil {
		t.Fatal(err)
	}
	if len(start.UserCode) != 8 || strings.Trim(start.UserCode, "BCDFGHJKLMNPQRSTVWXZ") != "" {
		t.Fatalf("user code = %q", start.UserCode)
	}
	info, err := b.cli.LoginInfo(ctx, start.State)
	if err != nil || info.UserCode != start.UserCode || info.UserAgent != "partnertrack-cli/1.0" || info.Confirmed {
		t.Fatalf("info = %+v, %v", info, err)
	}
	// Unconfirmed, the callback may still complete it (the contract's
	// callback takes state and id_token alone; the page asks first).
	if err := b.cli.CheckLogin(ctx, start.State); err != nil {
		t.Fatalf("check before confirmation: %v", err)
	}
	if err := b.cli.ConfirmLogin(ctx, start.State, "BBBB-BBBB"); ledger.ErrorMessage(err) != ledger.MsgCLIUserCodeMismatch {
		t.Fatalf("confirm with another code: %v", err)
	}
	typed := strings.ToLower(ledger.FormatUserCode(start.UserCode))
	if err := b.cli.ConfirmLogin(ctx, start.State, typed); err != nil {
		t.Fatal(err)
	}
	if err := b.cli.CompleteLogin(ctx, start.State, u.ID); err != nil {
		t.Fatal(err)
	}
	// The state alone gets nothing, nor does another verifier.
	for _, v := range []string{"", "another-verifier"} {
		if _, err := b.cli.PollLogin(ctx, start.State, v); ledger.ErrorCode(err) != ledger.EForbidden || ledger.ErrorMessage(err) != ledger.MsgCLIVerifierMismatch {
			t.Fatalf("poll with verifier %q: %v", v, err)
		}
	}
	p, err := b.cli.PollLogin(ctx, start.State, verifier)
	if err != nil || p.Status != ledger.PollComplete || p.Token == "" {
		t.Fatalf("poll = %+v, %v", p, err)
	}
}
