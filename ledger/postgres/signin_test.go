package postgres_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

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
	const issuer = "https://issuer.example"
	wantMismatch := func(t *testing.T, err error, msg string) {
		t.Helper()
		le, _ := err.(*ledger.Error)
		if le == nil || le.Code != ledger.EForbidden || le.Message != msg || le.Details["code"] != ledger.DetailIdentityMismatch {
			t.Fatalf("err = %v, want 403 IDENTITY_MISMATCH %q", err, msg)
		}
	}
	t.Run("ErrSubjectBoundToAnotherEmail", func(t *testing.T) {
		// The provider account behind s2 changes its email: the subject
		// stays bound to the first user, and the new email is refused
		// until an operator unlinks the first.
		old, err := b.accounts.LinkIdentity(ctx, ledger.Identity{Issuer: issuer, Subject: "s2", Email: "before@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = b.accounts.LinkIdentity(ctx, ledger.Identity{Issuer: issuer, Subject: "s2", Email: "after@example.com"})
		wantMismatch(t, err, ledger.MsgIdentityTaken)
		if subjectOf(t, old.ID).String != "s2" {
			t.Fatalf("old user's subject = %v", subjectOf(t, old.ID))
		}
		if _, err := b.accounts.UnlinkIdentity(ctx, old.ID); err != nil {
			t.Fatal(err)
		}
		moved, err := b.accounts.LinkIdentity(ctx, ledger.Identity{Issuer: issuer, Subject: "s2", Email: "after@example.com"})
		if err != nil || moved.ID == old.ID || subjectOf(t, old.ID).Valid || subjectOf(t, moved.ID).String != "s2" {
			t.Fatalf("moved %+v, %v", moved, err)
		}
	})
	t.Run("ErrEmailBoundToAnotherSubject", func(t *testing.T) {
		u, err := b.accounts.LinkIdentity(ctx, ledger.Identity{Issuer: issuer, Subject: "s5", Email: "bound@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []ledger.Identity{
			{Issuer: issuer, Subject: "s5-other", Email: "bound@example.com"},
			{Issuer: "https://other-issuer.example", Subject: "s5", Email: "bound@example.com"},
		} {
			_, err = b.accounts.LinkIdentity(ctx, id)
			wantMismatch(t, err, ledger.MsgIdentityMismatch)
		}
		if subjectOf(t, u.ID).String != "s5" {
			t.Fatalf("subject rebound to %v", subjectOf(t, u.ID))
		}
		if _, err := b.accounts.UnlinkIdentity(ctx, 1<<40); ledger.ErrorCode(err) != ledger.ENotFound {
			t.Fatalf("unlink of an unknown user: %v", err)
		}
	})
	t.Run("ErrTokenUsedTwice", func(t *testing.T) {
		id := ledger.Identity{Issuer: issuer, Subject: "s6", Email: "once@example.com",
			TokenHash: []byte("0123456789abcdef0123456789abcdef"), TokenExpires: time.Now().Add(time.Hour)}
		if _, err := b.accounts.LinkIdentity(ctx, id); err != nil {
			t.Fatal(err)
		}
		_, err := b.accounts.LinkIdentity(ctx, id)
		if ledger.ErrorCode(err) != ledger.EUnauthorized || ledger.ErrorMessage(err) != ledger.MsgIDTokenUsed {
			t.Fatalf("second use: %v", err)
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
