package ingest

import (
	"crypto/rand"
	"crypto/rsa"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ingest/oidc"
	"github.com/partnertrack/partnertrack/ingest/oidc/testissuer"
	"github.com/partnertrack/partnertrack/ledger"
)

// signInBundle is an edge whose sign-in trusts an in-process test issuer.
type signInBundle struct {
	*testBundle
	iss *testissuer.Issuer
	app *fiber.App // the edge with sign-in configured
}

func setupSignIn(t *testing.T) *signInBundle {
	t.Helper()
	b := setup(t)
	iss := testissuer.New(t)
	iss.SetClock(b.clock.Now)
	srv := newTestServer(b.db, b.clock, func(svc *Services, _ *Options) {
		svc.Identity = oidc.New(oidc.Config{IssuerURL: iss.URL, ClientID: testissuer.ClientID, Now: b.clock.Now})
	})
	return &signInBundle{testBundle: b, iss: iss, app: srv.App()}
}

func signInReq(idToken any) req {
	return req{"POST", "/api/v1/auth/session", map[string]any{"id_token": idToken}, nil}
}

func assertDetailsCode(t *testing.T, r response, code string) {
	t.Helper()
	e, _ := r.Body["error"].(map[string]any)
	details, _ := e["details"].(map[string]any)
	if details["code"] != code {
		t.Fatalf("error.details.code = %v, want %s: %s", details["code"], code, r.Raw)
	}
}

func TestSignIn(t *testing.T) {
	b := setupSignIn(t)
	w := MustWorld(t, b.app)
	now := b.clock.Now()

	t.Run("OKFirstSignInCreatesUser", func(t *testing.T) {
		d := mustOK(t, do(t, b.app, signInReq(b.iss.Token(t, "sub-new", "New.Person@Example.com"))), 200)
		tok, _ := d["token"].(string)
		if !strings.HasPrefix(tok, "pt_sess_") {
			t.Fatalf("token = %v", d["token"])
		}
		exp, err := time.Parse(time.RFC3339, d["expires_at"].(string))
		if err != nil || exp.Sub(now) < 29*24*time.Hour {
			t.Fatalf("expires_at = %v", d["expires_at"])
		}
		user := d["user"].(map[string]any)
		var email, subject string
		if err := b.db.QueryRow(`SELECT email, oidc_subject FROM users WHERE id = $1`, id(user["id"])).Scan(&email, &subject); err != nil {
			t.Fatal(err)
		}
		if email != "new.person@example.com" || subject != "sub-new" || user["email"] != email {
			t.Fatalf("user = %s %s, data.user = %v", email, subject, user)
		}
		// The token is a dashboard session: it authenticates, and a user
		// of no workspace may not list another's program.
		r := do(t, b.app, req{"GET", "/api/tracking/events/" + itoa(w.programID), nil, bearer(tok)})
		assertPlatformError(t, r, 403, "ForbiddenError", "you are not a member of this program's workspace", "")

		// Signing in again is the same user.
		again := mustOK(t, do(t, b.app, signInReq(b.iss.Token(t, "sub-new", "new.person@example.com"))), 200)
		if id(again["user"].(map[string]any)["id"]) != id(user["id"]) || again["token"] == tok {
			t.Fatalf("second sign-in = %v", again)
		}
	})

	t.Run("OKInvitedEmailLinksExistingUser", func(t *testing.T) {
		m := mustOK(t, do(t, b.app, req{"POST", "/api/operator/v1/workspaces/" + itoa(w.workspaceID) + "/members",
			map[string]any{"email": "invited@acme.example", "role": "member"}, operator()}), 201)
		d := mustOK(t, do(t, b.app, signInReq(b.iss.Token(t, "sub-invited", "Invited@ACME.example"))), 200)
		if got := id(d["user"].(map[string]any)["id"]); got != id(m["user_id"]) {
			t.Fatalf("signed in as user %d, invited user is %d", got, id(m["user_id"]))
		}
		r := do(t, b.app, req{"GET", "/api/tracking/events/" + itoa(w.programID), nil, bearer(d["token"].(string))})
		if r.Status != 200 {
			t.Fatalf("invited member's eventListing: %d %s", r.Status, r.Raw)
		}
	})

	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	claims := func(change func(map[string]any)) map[string]any {
		c := b.iss.Claims("sub-x", "x@example.com", now)
		change(c)
		return c
	}
	for _, tc := range []struct {
		desc    string
		token   string
		status  int
		message string
		detail  string
	}{
		{"ErrWrongAudience", b.iss.Sign(t, claims(func(c map[string]any) { c["aud"] = "another-client" })),
			401, "Invalid id_token", ""},
		{"ErrExpired", b.iss.Sign(t, claims(func(c map[string]any) { c["exp"] = now.Add(-time.Second).Unix() })),
			401, "id_token has expired", ""},
		{"ErrBadSignature", testissuer.SignWith(t, other, "test-key-1", claims(func(map[string]any) {})),
			401, "Invalid id_token", ""},
		{"ErrWrongIssuer", b.iss.Sign(t, claims(func(c map[string]any) { c["iss"] = "https://other.example" })),
			401, "Invalid id_token", ""},
		{"ErrEmailNotVerified", b.iss.Sign(t, claims(func(c map[string]any) { c["email_verified"] = false })),
			403, "Your sign-in provider has not verified your email address.", "PROVIDER_EMAIL_NOT_VERIFIED"},
		{"ErrEmailNotVerifiedString", b.iss.Sign(t, claims(func(c map[string]any) { c["email_verified"] = "false" })),
			403, "Your sign-in provider has not verified your email address.", "PROVIDER_EMAIL_NOT_VERIFIED"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			r := do(t, b.app, signInReq(tc.token))
			assertPlatformError(t, r, tc.status, statusNames[tc.status], tc.message, "")
			if tc.detail != "" {
				assertDetailsCode(t, r, tc.detail)
			}
		})
	}
	t.Run("OKEmailVerifiedAsString", func(t *testing.T) {
		tok := b.iss.Sign(t, claims(func(c map[string]any) { c["email_verified"] = "true" }))
		mustOK(t, do(t, b.app, signInReq(tok)), 200)
	})

	t.Run("ErrSuspended", func(t *testing.T) {
		d := mustOK(t, do(t, b.app, signInReq(b.iss.Token(t, "sub-susp", "susp@example.com"))), 200)
		uid := id(d["user"].(map[string]any)["id"])
		mustOK(t, do(t, b.app, req{"POST", "/api/operator/v1/users/" + itoa(uid) + "/suspend", nil, operator()}), 200)
		r := do(t, b.app, signInReq(b.iss.Token(t, "sub-susp", "susp@example.com")))
		assertPlatformError(t, r, 403, "ForbiddenError", "Your account has been suspended.", "")
		assertDetailsCode(t, r, "ACCOUNT_BLOCKED")
		// Suspension revoked the earlier token too.
		if r := do(t, b.app, req{"GET", "/api/tracking/events/1", nil, bearer(d["token"].(string))}); r.Status != 401 {
			t.Fatalf("suspended user's token: %d", r.Status)
		}
	})

	t.Run("ErrIdentityMismatch", func(t *testing.T) {
		// The first sign-in binds the email to the provider's subject; an
		// id_token with the same verified email and another subject is
		// refused, and does not rebind it.
		first := mustOK(t, do(t, b.app, signInReq(b.iss.Token(t, "sub-bound", "bound@example.com"))), 200)
		uid := id(first["user"].(map[string]any)["id"])
		r := do(t, b.app, signInReq(b.iss.Token(t, "sub-intruder", "bound@example.com")))
		assertPlatformError(t, r, 403, "ForbiddenError", ledger.MsgIdentityMismatch, "")
		assertDetailsCode(t, r, "IDENTITY_MISMATCH")
		mustOK(t, do(t, b.app, signInReq(b.iss.Token(t, "sub-bound", "bound@example.com"))), 200)

		// An operator unlinks the identity: the next sign-in binds anew.
		u := mustOK(t, do(t, b.app, req{"POST", "/api/operator/v1/users/" + itoa(uid) + "/unlink-identity", nil, operator()}), 200)
		if id(u["id"]) != uid || u["email"] != "bound@example.com" {
			t.Fatalf("unlink = %v", u)
		}
		relinked := mustOK(t, do(t, b.app, signInReq(b.iss.Token(t, "sub-new-account", "bound@example.com"))), 200)
		if id(relinked["user"].(map[string]any)["id"]) != uid {
			t.Fatalf("relinked as %v, want user %d", relinked["user"], uid)
		}
		r = do(t, b.app, signInReq(b.iss.Token(t, "sub-bound", "bound@example.com")))
		assertPlatformError(t, r, 403, "ForbiddenError", ledger.MsgIdentityMismatch, "")

		// Without a user, and an unknown one.
		r = do(t, b.app, req{"POST", "/api/operator/v1/users/999999/unlink-identity", nil, operator()})
		if r.Status != 404 {
			t.Fatalf("unlink of an unknown user: %d %s", r.Status, r.Raw)
		}
		if r := do(t, b.app, req{"POST", "/api/operator/v1/users/" + itoa(uid) + "/unlink-identity", nil, nil}); r.Status != 401 {
			t.Fatalf("unlink without the operator token: %d", r.Status)
		}
	})

	t.Run("ErrIdentityTakenByAnotherEmail", func(t *testing.T) {
		mustOK(t, do(t, b.app, signInReq(b.iss.Token(t, "sub-moves", "before@example.com"))), 200)
		r := do(t, b.app, signInReq(b.iss.Token(t, "sub-moves", "after@example.com")))
		assertPlatformError(t, r, 403, "ForbiddenError", ledger.MsgIdentityTaken, "")
		assertDetailsCode(t, r, "IDENTITY_MISMATCH")
	})

	t.Run("ErrTokenUsedTwice", func(t *testing.T) {
		tok := b.iss.Token(t, "sub-once", "once@example.com")
		mustOK(t, do(t, b.app, signInReq(tok)), 200)
		r := do(t, b.app, signInReq(tok))
		assertPlatformError(t, r, 401, "UnauthorizedError", ledger.MsgIDTokenUsed, "")
	})

	t.Run("ErrIssuedInTheFuture", func(t *testing.T) {
		tok := b.iss.Sign(t, claims(func(c map[string]any) { c["iat"] = now.Add(5 * time.Minute).Unix() }))
		r := do(t, b.app, signInReq(tok))
		assertPlatformError(t, r, 401, "UnauthorizedError", "Invalid id_token", "")
	})

	t.Run("ErrSeveralAudiencesWithoutAzp", func(t *testing.T) {
		tok := b.iss.Sign(t, claims(func(c map[string]any) { c["aud"] = []string{"other", testissuer.ClientID} }))
		r := do(t, b.app, signInReq(tok))
		assertPlatformError(t, r, 401, "UnauthorizedError", "Invalid id_token", "")
	})

	t.Run("ErrBadBody", func(t *testing.T) {
		for _, body := range []any{map[string]any{}, map[string]any{"id_token": 42}, map[string]any{"id_token": "  "}, map[string]any{"id_token": nil}} {
			r := do(t, b.app, req{"POST", "/api/v1/auth/session", body, nil})
			assertPlatformError(t, r, 400, "BadRequestError", "id_token is required and must be a string", "")
		}
		r := do(t, b.app, req{"POST", "/api/v1/auth/session", "id_token=abc", nil})
		assertPlatformError(t, r, 400, "BadRequestError", msgNotJSON, "")
	})

	t.Run("SignOutRevokesToken", func(t *testing.T) {
		d := mustOK(t, do(t, b.app, signInReq(b.iss.Token(t, "sub-out", "out@example.com"))), 200)
		tok := d["token"].(string)
		mustOK(t, do(t, b.app, req{"DELETE", "/api/v1/auth/session", nil, bearer(tok)}), 200)
		r := do(t, b.app, req{"GET", "/api/tracking/events/" + itoa(w.programID), nil, bearer(tok)})
		assertPlatformError(t, r, 401, "UnauthorizedError", "invalid or expired token", "")
		if r := do(t, b.app, req{"DELETE", "/api/v1/auth/session", nil, bearer(tok)}); r.Status != 401 {
			t.Fatalf("signing out twice: %d", r.Status)
		}
	})

	t.Run("ErrProviderUnreachable", func(t *testing.T) {
		// A fresh edge has not discovered the provider yet.
		srv := newTestServer(b.db, b.clock, func(svc *Services, _ *Options) {
			svc.Identity = oidc.New(oidc.Config{IssuerURL: b.iss.URL, ClientID: testissuer.ClientID, Now: b.clock.Now})
		})
		b.iss.SetBroken(true)
		defer b.iss.SetBroken(false)
		r := do(t, srv.App(), signInReq(b.iss.Token(t, "sub-x", "x@example.com")))
		assertPlatformError(t, r, 500, "InternalServerError", "Sign-in failed", "")
	})
}

func TestSignInNotConfigured(t *testing.T) {
	b := setup(t)
	r := do(t, b.app, signInReq("anything"))
	assertPlatformError(t, r, 503, "ServiceUnavailableError", msgSignInNotConfigured, "")
}
