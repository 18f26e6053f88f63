package postgres_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/partnertrack/partnertrack/ledger"
)

func TestLinkIdentity(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	subjectOf := func(t *testing.T, userID int64) sql.NullString {
		t.Helper()
		var s sql.NullString
		if err := b.db.QueryRowContext(ctx, `SELECT oidc_subject FROM users WHERE id = $1`, userID).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}

	t.Run("OKCreatesUserWithSubject", func(t *testing.T) {
		u, err := b.accounts.LinkIdentity(ctx, ledger.Identity{Subject: "s1", Email: "Ada@Example.com"})
		if err != nil {
			t.Fatal(err)
		}
		if u.Email != "ada@example.com" || subjectOf(t, u.ID).String != "s1" {
			t.Fatalf("user = %+v", u)
		}
		again, err := b.accounts.LinkIdentity(ctx, ledger.Identity{Subject: "s1", Email: "ada@example.com"})
		if err != nil || again.ID != u.ID {
			t.Fatalf("again = %+v, %v", again, err)
		}
	})
	t.Run("OKLinksInvitedUser", func(t *testing.T) {
		ws, err := b.accounts.CreateWorkspace(ctx, "Acme", "owner@acme.example")
		if err != nil {
			t.Fatal(err)
		}
		u, err := b.accounts.LinkIdentity(ctx, ledger.Identity{Subject: "s-owner", Email: "owner@acme.example"})
		if err != nil || u.ID != ws.OwnerUserID || subjectOf(t, u.ID).String != "s-owner" {
			t.Fatalf("user = %+v, %v; owner %d", u, err, ws.OwnerUserID)
		}
	})
	t.Run("OKSubjectFollowsTheEmail", func(t *testing.T) {
		// The provider account behind s2 changes its email: users are
		// keyed by email, so the new email is a new user and the subject
		// moves to it.
		old, err := b.accounts.LinkIdentity(ctx, ledger.Identity{Subject: "s2", Email: "before@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		moved, err := b.accounts.LinkIdentity(ctx, ledger.Identity{Subject: "s2", Email: "after@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		if moved.ID == old.ID || subjectOf(t, old.ID).Valid || subjectOf(t, moved.ID).String != "s2" {
			t.Fatalf("old %+v (%v), moved %+v (%v)", old, subjectOf(t, old.ID), moved, subjectOf(t, moved.ID))
		}
	})
	t.Run("ErrSuspended", func(t *testing.T) {
		u, err := b.accounts.LinkIdentity(ctx, ledger.Identity{Subject: "s3", Email: "susp@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.accounts.SuspendUser(ctx, u.ID); err != nil {
			t.Fatal(err)
		}
		for _, call := range []func() error{
			func() error {
				_, err := b.accounts.LinkIdentity(ctx, ledger.Identity{Subject: "s3", Email: "susp@example.com"})
				return err
			},
			func() error {
				_, _, err := b.accounts.SignIn(ctx, ledger.Identity{Subject: "s3", Email: "susp@example.com"}, ledger.CLISession)
				return err
			},
		} {
			err := call()
			var le *ledger.Error
			if ledger.ErrorCode(err) != ledger.EForbidden || ledger.ErrorMessage(err) != ledger.MsgAccountBlocked {
				t.Fatalf("err = %v", err)
			}
			if le, _ = err.(*ledger.Error); le.Details["code"] != ledger.DetailAccountBlocked {
				t.Fatalf("details = %v", le.Details)
			}
		}
	})
	t.Run("OKSignInAndRevoke", func(t *testing.T) {
		u, sess, err := b.accounts.SignIn(ctx, ledger.Identity{Subject: "s4", Email: "cli@example.com"}, ledger.CLISession)
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.accounts.AuthenticateSession(ctx, sess.Token)
		if err != nil || got.UserID != u.ID || got.Kind != ledger.CLISession {
			t.Fatalf("session = %+v, %v", got, err)
		}
		if err := b.accounts.RevokeSession(ctx, sess.Token); err != nil {
			t.Fatal(err)
		}
		if _, err := b.accounts.AuthenticateSession(ctx, sess.Token); ledger.ErrorCode(err) != ledger.EUnauthorized {
			t.Fatalf("revoked session authenticates: %v", err)
		}
		if err := b.accounts.RevokeSession(ctx, "pt_sess_unknown"); err != nil {
			t.Fatalf("revoking an unknown token: %v", err)
		}
	})
}
