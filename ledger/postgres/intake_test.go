package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
)

// intakeBundle is a program with a webhook endpoint that wants
// partner.enrolled, an owner (owner@acme.example) and an admin, and the
// intake service over it with a settable clock.
type intakeBundle struct {
	*testBundle
	clock    *testClock
	intake   *postgres.IntakeService
	program  *ledger.Program
	ownerID  int64
	endpoint int64
}

func setupIntake(t *testing.T) *intakeBundle {
	t.Helper()
	b := setup(t)
	clock := &testClock{t: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)}
	b.db.Now = clock.Now
	ctx := context.Background()
	ws, err := b.accounts.CreateWorkspace(ctx, "Acme Inc", "owner@acme.example")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.accounts.AddMember(ctx, ws.ID, "admin@acme.example", ledger.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	if _, err := b.accounts.AddMember(ctx, ws.ID, "member@acme.example", ledger.RoleMember); err != nil {
		t.Fatal(err)
	}
	p, err := b.programs.CreateProgram(ctx, ws.ID, percentProgram())
	if err != nil {
		t.Fatal(err)
	}
	ib := &intakeBundle{testBundle: b, clock: clock, program: p,
		intake: postgres.NewIntakeService(b.db.DB, postgres.IntakeOptions{PublicBaseURL: "https://track.example/", Logger: discard})}
	if err := b.db.QueryRow(`SELECT user_id FROM memberships WHERE workspace_id = $1 AND role = 'owner'`, ws.ID).Scan(&ib.ownerID); err != nil {
		t.Fatal(err)
	}
	if err := b.db.QueryRow(`INSERT INTO webhook_endpoints (program_id, url, secret, events)
		VALUES ($1, 'https://brand.example/hooks', 'enc:test', '{partner.enrolled}') RETURNING id`, p.ID).Scan(&ib.endpoint); err != nil {
		t.Fatal(err)
	}
	return ib
}

func (b *intakeBundle) count(tb testing.TB, query string, args ...any) int {
	tb.Helper()
	var n int
	if err := b.db.QueryRow(query, args...).Scan(&n); err != nil {
		tb.Fatalf("%s: %v", query, err)
	}
	return n
}

// emails returns the email outbox rows to to, oldest first.
func (b *intakeBundle) emails(tb testing.TB, to string) []ledger.Email {
	tb.Helper()
	rows, err := b.db.Query(`SELECT payload FROM outbox WHERE task_type = $1 AND payload->>'to' = $2 ORDER BY id`, ledger.OutboxTaskEmail, to)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	var out []ledger.Email
	for rows.Next() {
		var raw []byte
		var e ledger.Email
		if err := rows.Scan(&raw); err != nil {
			tb.Fatal(err)
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			tb.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// inviteToken reads the token of the newest invite email to to.
func (b *intakeBundle) inviteToken(tb testing.TB, to string) string {
	tb.Helper()
	es := b.emails(tb, to)
	if len(es) == 0 {
		tb.Fatalf("no email to %s", to)
	}
	var d ledger.PartnerInviteEmail
	if err := json.Unmarshal(es[len(es)-1].Data, &d); err != nil {
		tb.Fatal(err)
	}
	tok, ok := strings.CutPrefix(d.AcceptURL, "https://track.example/partner/invites/")
	if !ok {
		tb.Fatalf("accept_url = %s", d.AcceptURL)
	}
	return tok
}

func (b *intakeBundle) enrolledWebhooks(tb testing.TB) int {
	return b.count(tb, `SELECT count(*) FROM outbox WHERE task_type = $1 AND payload->>'event_type' = 'partner.enrolled'`, ledger.OutboxTaskWebhook)
}

func TestInvites(t *testing.T) {
	b := setupIntake(t)
	ctx := context.Background()
	pid := b.program.ID
	existing, err := b.partners.EnrollPartner(ctx, pid, "pat@partner.example", "Pat")
	if err != nil {
		t.Fatal(err)
	}
	// A partner of another program of the same workspace, and one of
	// another workspace.
	sister, err := b.programs.CreateProgram(ctx, b.program.WorkspaceID, percentProgram())
	if err != nil {
		t.Fatal(err)
	}
	sis, err := b.partners.EnrollPartner(ctx, sister.ID, "sis@partner.example", "Sis")
	if err != nil {
		t.Fatal(err)
	}
	stranger := MustProgram(t, b.testBundle)
	far, err := b.partners.EnrollPartner(ctx, stranger.ID, "far@partner.example", "Far")
	if err != nil {
		t.Fatal(err)
	}

	var ann *ledger.Invite
	t.Run("OK create with skips", func(t *testing.T) {
		r, err := ledger.InviteRequestInput{
			Emails:     ledger.Some([]string{"Ann@Partner.example", "ann@partner.example", "pat@partner.example", "bob@partner.example"}),
			PartnerIDs: ledger.Some([]int64{sis.ID, far.ID, existing.ID, 999999}),
			Message:    ledger.Some("  Join us  "),
		}.Validate(b.ownerID)
		if err != nil {
			t.Fatal(err)
		}
		res, err := b.intake.CreateInvites(ctx, pid, r)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, i := range res.Invited {
			got = append(got, i.Email)
			if i.Status != ledger.InvitePending || i.Message != "Join us" || i.GroupID != nil ||
				!i.ExpiresAt.Equal(b.clock.Now().Add(30*24*time.Hour)) {
				t.Errorf("invite = %+v", i)
			}
		}
		if strings.Join(got, ",") != "ann@partner.example,bob@partner.example,sis@partner.example" {
			t.Fatalf("invited = %v", got)
		}
		ann = &res.Invited[0]
		want := []string{"ann@partner.example duplicate", "pat@partner.example already_partner",
			" unknown_partner", "pat@partner.example duplicate", " unknown_partner"}
		var skipped []string
		for _, s := range res.Skipped {
			skipped = append(skipped, s.Email+" "+s.Reason)
		}
		if strings.Join(skipped, "|") != strings.Join(want, "|") {
			t.Fatalf("skipped = %q", skipped)
		}
		if es := b.emails(t, "ann@partner.example"); len(es) != 1 || es[0].Kind != ledger.EmailPartnerInvite {
			t.Fatalf("emails = %+v", es)
		}
		var d ledger.PartnerInviteEmail
		_ = json.Unmarshal(b.emails(t, "bob@partner.example")[0].Data, &d)
		if d.ProgramName != "Acme" || d.BrandMessage != "Join us" || !d.ExpiresAt.Equal(ann.ExpiresAt) {
			t.Fatalf("email data = %+v", d)
		}
		if n := b.count(t, `SELECT count(*) FROM audit_log WHERE program_id = $1 AND action = 'invite.created' AND actor_email = 'owner@acme.example'`, pid); n != 3 {
			t.Fatalf("audit rows = %d", n)
		}
	})
	t.Run("OK already invited", func(t *testing.T) {
		res, err := b.intake.CreateInvites(ctx, pid, ledger.InviteRequest{Emails: []string{"ann@partner.example"}})
		if err != nil || len(res.Invited) != 0 || len(res.Skipped) != 1 || res.Skipped[0].Reason != ledger.SkipAlreadyInvited {
			t.Fatalf("res = %+v, %v", res, err)
		}
	})
	t.Run("ErrGroup", func(t *testing.T) {
		var otherGroup int64
		if err := b.db.QueryRow(`SELECT id FROM partner_groups WHERE program_id = $1`, stranger.ID).Scan(&otherGroup); err != nil {
			t.Fatal(err)
		}
		before := b.count(t, `SELECT count(*) FROM partner_invites`)
		_, err := b.intake.CreateInvites(ctx, pid, ledger.InviteRequest{Emails: []string{"new@partner.example"}, GroupID: &otherGroup})
		assertCode(t, err, ledger.EInvalid, ledger.MsgGroupID)
		if after := b.count(t, `SELECT count(*) FROM partner_invites`); after != before {
			t.Fatal("an invite was stored on refusal")
		}
	})
	t.Run("ErrResendTooSoon", func(t *testing.T) {
		_, err := b.intake.ResendInvite(ctx, pid, ann.ID, b.ownerID)
		assertCode(t, err, ledger.EConflict, ledger.MsgInviteResendTooSoon)
	})
	t.Run("OK resend", func(t *testing.T) {
		old := b.inviteToken(t, "ann@partner.example")
		b.clock.Add(2 * time.Minute)
		inv, err := b.intake.ResendInvite(ctx, pid, ann.ID, b.ownerID)
		if err != nil {
			t.Fatal(err)
		}
		if !inv.ExpiresAt.Equal(b.clock.Now().Add(ledger.InviteTTL)) || !inv.LastSentAt.Equal(b.clock.Now()) {
			t.Fatalf("invite = %+v", inv)
		}
		if es := b.emails(t, "ann@partner.example"); len(es) != 2 {
			t.Fatalf("emails = %d", len(es))
		}
		if b.inviteToken(t, "ann@partner.example") == old {
			t.Fatal("the resend kept the token")
		}
		_, err = b.intake.AcceptInvite(ctx, old, "ann@partner.example", "Ann")
		assertCode(t, err, ledger.ENotFound, ledger.MsgInviteNotFound)
	})
	t.Run("ErrNotFound other program", func(t *testing.T) {
		_, err := b.intake.ResendInvite(ctx, stranger.ID, ann.ID, b.ownerID)
		assertCode(t, err, ledger.ENotFound, ledger.MsgInviteNotFound)
		_, err = b.intake.CancelInvite(ctx, stranger.ID, ann.ID, b.ownerID)
		assertCode(t, err, ledger.ENotFound, ledger.MsgInviteNotFound)
	})
	t.Run("OK accept", func(t *testing.T) {
		tok := b.inviteToken(t, "ann@partner.example")
		_, err := b.intake.AcceptInvite(ctx, tok, "someone@else.example", "X")
		assertCode(t, err, ledger.ENotFound, ledger.MsgInviteNotFound)
		hooks := b.enrolledWebhooks(t)
		en, err := b.intake.AcceptInvite(ctx, tok, "ANN@partner.example", " Ann Lee ")
		if err != nil {
			t.Fatal(err)
		}
		if en.Email != "ann@partner.example" || en.Name != "Ann Lee" || !ledger.ValidLinkCode(en.LinkCode) || len(en.LinkCode) != 10 {
			t.Fatalf("enrollment = %+v", en)
		}
		var status string
		var group int64
		if err := b.db.QueryRow(`SELECT e.status, e.group_id FROM enrollments e WHERE program_id = $1 AND partner_id = $2`, pid, en.PartnerID).Scan(&status, &group); err != nil {
			t.Fatal(err)
		}
		var defaultGroup int64
		_ = b.db.QueryRow(`SELECT id FROM partner_groups WHERE program_id = $1 AND is_default`, pid).Scan(&defaultGroup)
		if status != "active" || group != defaultGroup || en.GroupID != defaultGroup {
			t.Fatalf("enrollment %s in group %d", status, group)
		}
		if n := b.count(t, `SELECT count(*) FROM links WHERE program_id = $1 AND partner_id = $2 AND code = $3 AND active`, pid, en.PartnerID, en.LinkCode); n != 1 {
			t.Fatal("no link")
		}
		if b.enrolledWebhooks(t) != hooks+1 {
			t.Fatal("no partner.enrolled webhook")
		}
		if n := b.count(t, `SELECT count(*) FROM audit_log WHERE program_id = $1 AND action = 'invite.accepted' AND actor_user_id IS NULL`, pid); n != 1 {
			t.Fatal("no audit row")
		}
		_, err = b.intake.AcceptInvite(ctx, tok, "ann@partner.example", "Ann")
		assertCode(t, err, ledger.EConflict, ledger.MsgInviteAcceptState)
		_, err = b.intake.CancelInvite(ctx, pid, ann.ID, b.ownerID)
		assertCode(t, err, ledger.EConflict, ledger.MsgInviteCancelState)
		_, err = b.intake.ResendInvite(ctx, pid, ann.ID, b.ownerID)
		assertCode(t, err, ledger.EConflict, ledger.MsgInviteResendState)
	})
	t.Run("OK cancel and expiry", func(t *testing.T) {
		page, err := b.intake.ListInvites(ctx, ledger.InviteQuery{ProgramID: pid, Status: ledger.InvitePending, Page: 1, PageSize: 10})
		if err != nil || page.Total != 2 {
			t.Fatalf("pending = %+v, %v", page, err)
		}
		bob := page.Invites[1] // newest first: sis, bob
		if bob.Email != "bob@partner.example" {
			t.Fatalf("page = %+v", page.Invites)
		}
		inv, err := b.intake.CancelInvite(ctx, pid, bob.ID, b.ownerID)
		if err != nil || inv.Status != ledger.InviteCancelled || inv.CancelledAt == nil {
			t.Fatalf("cancelled = %+v, %v", inv, err)
		}
		tok := b.inviteToken(t, "sis@partner.example")
		b.clock.Add(31 * 24 * time.Hour)
		_, err = b.intake.AcceptInvite(ctx, tok, "sis@partner.example", "")
		assertCode(t, err, ledger.EConflict, ledger.MsgInviteExpired)
		for status, want := range map[string]int64{ledger.InviteExpired: 1, ledger.InvitePending: 0, ledger.InviteAccepted: 1, ledger.InviteCancelled: 1, "": 3} {
			page, err := b.intake.ListInvites(ctx, ledger.InviteQuery{ProgramID: pid, Status: status, Page: 1, PageSize: 10})
			if err != nil || page.Total != want || int64(len(page.Invites)) != want {
				t.Errorf("status %q: %+v, %v", status, page, err)
			}
		}
		// An expired invite is issued again by a new request.
		res, err := b.intake.CreateInvites(ctx, pid, ledger.InviteRequest{Emails: []string{"sis@partner.example"}})
		if err != nil || len(res.Invited) != 1 || res.Invited[0].StatusAt(b.clock.Now()) != ledger.InvitePending {
			t.Fatalf("reissue = %+v, %v", res, err)
		}
		en, err := b.intake.AcceptInvite(ctx, b.inviteToken(t, "sis@partner.example"), "sis@partner.example", "")
		if err != nil || en.PartnerID != sis.ID || en.Name != "Sis" {
			t.Fatalf("accept = %+v, %v", en, err)
		}
	})
}

func TestApplications(t *testing.T) {
	b := setupIntake(t)
	ctx := context.Background()
	pid := b.program.ID
	slug := "acme-program"
	if _, err := b.programs.UpdateSettings(ctx, pid, ledger.SettingsInput{Slug: ledger.Some(slug)}); err != nil {
		t.Fatal(err)
	}
	// Until the brand names it, the program has no public page.
	if _, err := b.intake.PublicProgram(ctx, ledger.DefaultSlug(pid)); ledger.ErrorCode(err) != ledger.ENotFound {
		t.Fatalf("default slug public: %v", err)
	}
	apply := func(email string) (*ledger.Application, bool, error) {
		return b.intake.Apply(ctx, slug, ledger.ApplicationRequest{Name: "Cat Wu", Email: email, Message: "I blog", Website: "https://cat.example"})
	}

	t.Run("OK public page", func(t *testing.T) {
		p, err := b.intake.PublicProgram(ctx, slug)
		if err != nil {
			t.Fatal(err)
		}
		if p.Name != "Acme" || p.Domain != "acme.example" || p.PartnerApproval != ledger.ApprovalManual ||
			p.CommissionWords() != "30% of the first sale of each referred customer" || p.CookieDuration != 90 || p.HoldDays != 30 {
			t.Fatalf("public = %+v %s", p, p.CommissionWords())
		}
		for _, bad := range []string{"nope", "x", "PROGRAM-1", strings.Repeat("a", 61)} {
			if _, err := b.intake.PublicProgram(ctx, bad); ledger.ErrorCode(err) != ledger.ENotFound {
				t.Errorf("%q: %v", bad, err)
			}
		}
	})
	var cat *ledger.Application
	t.Run("OK apply manual", func(t *testing.T) {
		a, created, err := apply("cat@partner.example")
		if err != nil || !created || a.Status != ledger.ApplicationPending || a.Website != "https://cat.example" {
			t.Fatalf("apply = %+v %v %v", a, created, err)
		}
		cat = a
		again, created, err := apply("cat@partner.example")
		if err != nil || created || again.ID != a.ID {
			t.Fatalf("second = %+v %v %v", again, created, err)
		}
		// One application_received to each owner and admin, none to the member.
		for _, to := range []string{"owner@acme.example", "admin@acme.example"} {
			es := b.emails(t, to)
			if len(es) != 1 || es[0].Kind != ledger.EmailApplicationReceived {
				t.Fatalf("emails to %s = %+v", to, es)
			}
			var d ledger.ApplicationReceivedEmail
			_ = json.Unmarshal(es[0].Data, &d)
			if d.ApplicantEmail != "cat@partner.example" || d.Message != "I blog" ||
				d.ReviewURL != "https://track.example/app/programs/"+itoa(pid)+"/applications" {
				t.Fatalf("data = %+v", d)
			}
		}
		if es := b.emails(t, "member@acme.example"); len(es) != 0 {
			t.Fatal("a member got the email")
		}
	})
	t.Run("OK reject", func(t *testing.T) {
		a, err := b.intake.RejectApplication(ctx, pid, cat.ID, b.ownerID, "Not now")
		if err != nil || a.Status != ledger.ApplicationRejected || a.Reason != "Not now" || a.DecidedAt == nil {
			t.Fatalf("reject = %+v, %v", a, err)
		}
		es := b.emails(t, "cat@partner.example")
		if len(es) != 1 || es[0].Kind != ledger.EmailApplicationRejected || !strings.Contains(string(es[0].Data), "Not now") {
			t.Fatalf("emails = %+v", es)
		}
		_, err = b.intake.RejectApplication(ctx, pid, cat.ID, b.ownerID, "")
		assertCode(t, err, ledger.EConflict, ledger.MsgApplicationDecided)
		_, err = b.intake.ApproveApplication(ctx, pid, cat.ID, b.ownerID, nil)
		assertCode(t, err, ledger.EConflict, ledger.MsgApplicationDecided)
	})
	t.Run("OK approve into a group", func(t *testing.T) {
		a, created, err := apply("cat@partner.example") // rejected before: may apply again
		if err != nil || !created || a.ID == cat.ID {
			t.Fatalf("reapply = %+v %v %v", a, created, err)
		}
		group := mustGroup(t, b, pid, "VIP")
		stranger := MustProgram(t, b.testBundle)
		otherGroup := mustGroup(t, b, stranger.ID, "Theirs")
		_, err = b.intake.ApproveApplication(ctx, pid, a.ID, b.ownerID, &otherGroup)
		assertCode(t, err, ledger.EInvalid, ledger.MsgGroupID)
		_, err = b.intake.ApproveApplication(ctx, stranger.ID, a.ID, b.ownerID, nil)
		assertCode(t, err, ledger.ENotFound, ledger.MsgApplicationNotFound)
		hooks := b.enrolledWebhooks(t)
		a, err = b.intake.ApproveApplication(ctx, pid, a.ID, b.ownerID, &group)
		if err != nil || a.Status != ledger.ApplicationApproved || a.GroupID == nil || *a.GroupID != group || a.PartnerID == nil {
			t.Fatalf("approve = %+v, %v", a, err)
		}
		if n := b.count(t, `SELECT count(*) FROM enrollments WHERE program_id = $1 AND partner_id = $2 AND status = 'active' AND group_id = $3`, pid, *a.PartnerID, group); n != 1 {
			t.Fatal("not enrolled in the group")
		}
		if n := b.count(t, `SELECT count(*) FROM links WHERE program_id = $1 AND partner_id = $2`, pid, *a.PartnerID); n != 1 {
			t.Fatal("no link")
		}
		if b.enrolledWebhooks(t) != hooks+1 {
			t.Fatal("no webhook")
		}
		if n := b.count(t, `SELECT count(*) FROM audit_log WHERE action = 'application.approved' AND actor_user_id = $1 AND subject_id = $2`, b.ownerID, a.ID); n != 1 {
			t.Fatal("no audit row")
		}
		es := b.emails(t, "cat@partner.example")
		if es[len(es)-1].Kind != ledger.EmailApplicationApproved || !strings.Contains(string(es[len(es)-1].Data), "https://track.example/partner/") {
			t.Fatalf("emails = %+v", es)
		}
		// Applying again as a partner records nothing and answers as an
		// application would.
		before := b.count(t, `SELECT count(*) FROM partner_applications WHERE program_id = $1`, pid)
		again, created, err := apply("cat@partner.example")
		if err != nil || created || again.ID != 0 || again.Status != ledger.ApplicationPending {
			t.Fatalf("partner applies: %+v %v %v", again, created, err)
		}
		if n := b.count(t, `SELECT count(*) FROM partner_applications WHERE program_id = $1`, pid); n != before {
			t.Fatalf("%d applications, want %d", n, before)
		}
	})
	t.Run("OK auto approval", func(t *testing.T) {
		auto := ledger.Some(ledger.ApprovalAuto)
		if _, err := b.programs.UpdateSettings(ctx, pid, ledger.SettingsInput{PartnerApproval: auto, Slug: ledger.Some("acme-partners")}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := apply("dan@partner.example"); ledger.ErrorCode(err) != ledger.ENotFound {
			t.Fatalf("old slug: %v", err)
		}
		a, created, err := b.intake.Apply(ctx, "acme-partners", ledger.ApplicationRequest{Name: "Dan", Email: "dan@partner.example"})
		if err != nil || !created || a.Status != ledger.ApplicationApproved || a.PartnerID == nil {
			t.Fatalf("auto = %+v %v %v", a, created, err)
		}
		if n := b.count(t, `SELECT count(*) FROM audit_log WHERE action = 'application.approved' AND actor_user_id IS NULL AND subject_id = $1`, a.ID); n != 1 {
			t.Fatal("no audit row of the automatic approval")
		}
		if len(b.emails(t, "owner@acme.example")) != 2 {
			// the manual applications' two; none for an automatic one
			t.Fatalf("owner emails = %d", len(b.emails(t, "owner@acme.example")))
		}
	})
	t.Run("ErrPaused", func(t *testing.T) {
		if _, err := b.db.Exec(`UPDATE programs SET status = 'paused' WHERE id = $1`, pid); err != nil {
			t.Fatal(err)
		}
		if _, err := b.intake.PublicProgram(ctx, "acme-partners"); ledger.ErrorCode(err) != ledger.ENotFound {
			t.Fatalf("paused page: %v", err)
		}
		_, _, err := b.intake.Apply(ctx, "acme-partners", ledger.ApplicationRequest{Name: "Eve", Email: "eve@partner.example"})
		assertCode(t, err, ledger.ENotFound, ledger.MsgPublicNotFound)
	})
}

func TestProgramSlugSettings(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	p1, p2 := MustProgram(t, b), MustProgram(t, b)
	if p1.Slug != ledger.DefaultSlug(p1.ID) || p1.PartnerApproval != ledger.ApprovalManual {
		t.Fatalf("new program: slug %q approval %q", p1.Slug, p1.PartnerApproval)
	}
	if _, err := b.programs.UpdateSettings(ctx, p1.ID, ledger.SettingsInput{Slug: ledger.Some("acme")}); err != nil {
		t.Fatal(err)
	}
	_, err := b.programs.UpdateSettings(ctx, p2.ID, ledger.SettingsInput{Slug: ledger.Some("acme"), PartnerApproval: ledger.Some("auto")})
	assertCode(t, err, ledger.EConflict, ledger.MsgSlugTaken)
	_, err = b.programs.UpdateSettings(ctx, p2.ID, ledger.SettingsInput{Slug: ledger.Some(ledger.DefaultSlug(p2.ID + 1))})
	assertCode(t, err, ledger.EInvalid, ledger.MsgSlugReserved)
	_, err = b.programs.UpdateSettings(ctx, p2.ID, ledger.SettingsInput{Program: ledger.ProgramInput{CommissionRate: ledger.Some(decimal.NewFromInt(5))},
		PartnerApproval: ledger.Some("sometimes")})
	assertCode(t, err, ledger.EInvalid, ledger.MsgPartnerApproval)
	got, err := b.programs.Program(ctx, p2.ID)
	if err != nil || got.Slug != ledger.DefaultSlug(p2.ID) || got.PartnerApproval != ledger.ApprovalManual || !got.CommissionRate.Equal(decimal.NewFromInt(30)) {
		t.Fatalf("refused update changed the program: %+v, %v", got, err)
	}
	// The program's own default slug may be set back.
	if p, err := b.programs.UpdateSettings(ctx, p1.ID, ledger.SettingsInput{Slug: ledger.Some(ledger.DefaultSlug(p1.ID))}); err != nil || p.Slug != ledger.DefaultSlug(p1.ID) {
		t.Fatalf("default slug back: %+v, %v", p, err)
	}
}

// mustGroup makes a group of the program at 10 percent through the groups
// service.
func mustGroup(tb testing.TB, b *intakeBundle, programID int64, name string) int64 {
	tb.Helper()
	g, err := postgres.NewGroupService(b.db.DB).CreateGroup(context.Background(), programID, b.ownerID, ledger.GroupInput{
		Name: ledger.Some(name), CommissionType: ledger.Some("percent"), CommissionRate: ledger.Some(decimal.NewFromInt(10)),
	})
	if err != nil {
		tb.Fatal(err)
	}
	return g.ID
}

func itoa(n int64) string { return decimal.NewFromInt(n).String() }

// TestIntakeConcurrentDuplicates: the same email applying, or invited,
// from many requests at once makes one pending row; every other request
// answers with it (applications) or skips it (invites), none fails.
func TestIntakeConcurrentDuplicates(t *testing.T) {
	b := setupIntake(t)
	ctx := context.Background()
	const n = 8
	type result struct {
		id      int64
		created bool
		err     error
	}
	apps := make(chan result, n)
	invites := make(chan result, n)
	if _, err := b.programs.UpdateSettings(ctx, b.program.ID, ledger.SettingsInput{Slug: ledger.Some("acme-race")}); err != nil {
		t.Fatal(err)
	}
	for range n {
		go func() {
			a, created, err := b.intake.Apply(ctx, "acme-race", ledger.ApplicationRequest{Name: "Cat", Email: "cat@partner.example"})
			r := result{created: created, err: err}
			if a != nil {
				r.id = a.ID
			}
			apps <- r
		}()
		go func() {
			res, err := b.intake.CreateInvites(ctx, b.program.ID, ledger.InviteRequest{Emails: []string{"ann@partner.example"}})
			r := result{err: err}
			if err == nil {
				r.created = len(res.Invited) == 1
				if !r.created && (len(res.Skipped) != 1 || res.Skipped[0].Reason != ledger.SkipAlreadyInvited) {
					r.err = errors.New("neither invited nor skipped as already invited")
				}
			}
			invites <- r
		}()
	}
	var appIDs = map[int64]bool{}
	createdApps, createdInvites := 0, 0
	for range n {
		a, i := <-apps, <-invites
		if a.err != nil || i.err != nil {
			t.Fatalf("apply: %v; invite: %v", a.err, i.err)
		}
		appIDs[a.id] = true
		if a.created {
			createdApps++
		}
		if i.created {
			createdInvites++
		}
	}
	if createdApps != 1 || len(appIDs) != 1 || createdInvites != 1 {
		t.Fatalf("applications created %d (ids %v), invites created %d; want one each", createdApps, appIDs, createdInvites)
	}
	if n := b.count(t, `SELECT count(*) FROM partner_applications`); n != 1 {
		t.Fatalf("%d applications stored", n)
	}
	if n := b.count(t, `SELECT count(*) FROM partner_invites`); n != 1 {
		t.Fatalf("%d invites stored", n)
	}
}
