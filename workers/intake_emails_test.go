package workers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/notify/mail/mailtest"
	"github.com/partnertrack/partnertrack/workers"
	"github.com/partnertrack/partnertrack/workers/redistest"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

// TestInviteAndApplicationEmails invites a partner and decides two
// applications through the intake service, whose outbox messages are
// relayed right after commit to the emails queue; the real worker sends
// them to an in-process SMTP server, and each arrives with its content.
func TestInviteAndApplicationEmails(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	rdb := redistest.Client(t)
	ns := redistest.Namespace(t, rdb)
	srv := mailtest.Start(t, mailtest.Options{})
	startWorker(t, rdb, ns, workers.Handlers{Mailer: smtpMailer(t, srv), Logger: discard}, tasks.QueueEmails)
	enq := &tasks.Enqueuer{Client: asynq.NewClientFromRedisClient(rdb), Namespace: ns}
	intake := postgres.NewIntakeService(db.DB, postgres.IntakeOptions{
		PublicBaseURL: "https://track.example", Relay: postgres.NewOutbox(db.DB, enq), Logger: discard})
	t.Cleanup(intake.WaitRelays)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	accounts, programs := postgres.NewAccountService(db.DB), postgres.NewProgramService(db.DB)
	ws, err := accounts.CreateWorkspace(ctx, "Acme Inc", "owner@acme.example")
	if err != nil {
		t.Fatal(err)
	}
	p, err := programs.CreateProgram(ctx, ws.ID, ledger.ProgramInput{Name: ledger.Some("Acme Shoes"), Domain: ledger.Some("acme.example"),
		CommissionType: ledger.Some("percent"), CommissionRate: ledger.Some(decimal.NewFromInt(20))})
	if err != nil {
		t.Fatal(err)
	}
	const slug = "acme-shoes" // published: a default slug has no public page
	if _, err := programs.UpdateSettings(ctx, p.ID, ledger.SettingsInput{Slug: ledger.Some(slug)}); err != nil {
		t.Fatal(err)
	}

	res, err := intake.CreateInvites(ctx, p.ID, ledger.InviteRequest{Emails: []string{"ann@partner.example"}, Message: "Come sell our shoes"})
	if err != nil || len(res.Invited) != 1 {
		t.Fatalf("invite = %+v, %v", res, err)
	}
	cat, _, err := intake.Apply(ctx, slug, ledger.ApplicationRequest{Name: "Cat Wu", Email: "cat@partner.example", Message: "I run a shoe blog"})
	if err != nil {
		t.Fatal(err)
	}
	dan, _, err := intake.Apply(ctx, slug, ledger.ApplicationRequest{Name: "Dan", Email: "dan@partner.example"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := intake.ApproveApplication(ctx, p.ID, cat.ID, 0, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := intake.RejectApplication(ctx, p.ID, dan.ID, 0, "We only work with shoe sites"); err != nil {
		t.Fatal(err)
	}

	// ann: invite; owner: two application_received; cat: approved; dan: rejected.
	got := srv.Wait(ctx, t, 5)
	byTo := map[string][]string{}
	for _, m := range got {
		parsed, err := m.Parse()
		if err != nil {
			t.Fatal(err)
		}
		byTo[m.To[0]] = append(byTo[m.To[0]], parsed.Subject+"\n"+parsed.Text)
	}
	for _, tc := range []struct {
		to    string
		count int
		want  []string
	}{
		{"ann@partner.example", 1, []string{"Acme Shoes", "Come sell our shoes", "https://track.example/partner/invites/"}},
		{"owner@acme.example", 2, []string{"Acme Shoes", "https://track.example/app/programs/" + decimal.NewFromInt(p.ID).String() + "/applications"}},
		{"cat@partner.example", 1, []string{"Acme Shoes", "Cat Wu", "https://track.example/partner/"}},
		{"dan@partner.example", 1, []string{"Acme Shoes", "We only work with shoe sites"}},
	} {
		msgs := byTo[tc.to]
		if len(msgs) != tc.count {
			t.Fatalf("%d messages to %s, want %d; all: %v", len(msgs), tc.to, tc.count, byTo)
		}
		for _, w := range tc.want {
			if !strings.Contains(msgs[0], w) {
				t.Errorf("message to %s lacks %q:\n%s", tc.to, w, msgs[0])
			}
		}
	}
	owner := strings.Join(byTo["owner@acme.example"], "\n")
	for _, w := range []string{"Cat Wu", "cat@partner.example", "I run a shoe blog", "dan@partner.example"} {
		if !strings.Contains(owner, w) {
			t.Errorf("the owner's emails lack %q:\n%s", w, owner)
		}
	}
}
