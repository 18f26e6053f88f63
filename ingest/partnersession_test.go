package ingest

import (
	"strings"
	"testing"
)

func partnerSignInReq(idToken any) req {
	return req{"POST", "/api/v1/partner/session", map[string]any{"id_token": idToken}, nil}
}

// signInPartner signs a partner in with the test issuer and returns its
// token.
func signInPartner(t *testing.T, b *signInBundle, sub, email string) string {
	t.Helper()
	d := mustOK(t, do(t, b.app, partnerSignInReq(b.iss.Token(t, sub, email))), 200)
	tok, _ := d["token"].(string)
	if !strings.HasPrefix(tok, "pt_partner_") {
		t.Fatalf("partner token = %v", d["token"])
	}
	return tok
}

func TestPartnerSignIn(t *testing.T) {
	b := setupSignIn(t)
	w := MustWorld(t, b.app)

	t.Run("OKBindsTheEnrolledPartnerOfTheEmail", func(t *testing.T) {
		enrolled := mustOK(t, do(t, b.app, req{"POST", "/api/operator/v1/programs/" + itoa(w.programID) + "/partners",
			map[string]any{"email": "Ana@Creator.example", "name": "Ana"}, operator()}), 201)
		d := mustOK(t, do(t, b.app, partnerSignInReq(b.iss.Token(t, "sub-ana", "ana@creator.example"))), 200)
		p := d["partner"].(map[string]any)
		if id(p["id"]) != id(enrolled["id"]) || p["email"] != "ana@creator.example" || p["name"] != "Ana" {
			t.Fatalf("partner = %v, enrolled %v", p, enrolled)
		}
		// Signing in again is the same partner, with a new token.
		again := mustOK(t, do(t, b.app, partnerSignInReq(b.iss.Token(t, "sub-ana", "ana@creator.example"))), 200)
		if id(again["partner"].(map[string]any)["id"]) != id(enrolled["id"]) || again["token"] == d["token"] {
			t.Fatalf("second sign-in = %v", again)
		}
	})

	t.Run("OKNewEmailBecomesAPartnerOfNoProgram", func(t *testing.T) {
		d := mustOK(t, do(t, b.app, partnerSignInReq(b.iss.Token(t, "sub-bo", "bo.lee@creator.example"))), 200)
		p := d["partner"].(map[string]any)
		if p["name"] != "bo.lee" {
			t.Fatalf("partner = %v", p)
		}
		if n := countRows(t, b.testBundle, `SELECT count(*) FROM enrollments WHERE partner_id = $1`, id(p["id"])); n != 0 {
			t.Fatalf("a new partner is enrolled in %d programs", n)
		}
	})

	t.Run("ErrSessionsDoNotOpenEachOthersRoutes", func(t *testing.T) {
		ptok := signInPartner(t, b, "sub-both", "both@creator.example")
		dash := mustOK(t, do(t, b.app, signInReq(b.iss.Token(t, "sub-both", "both@creator.example"))), 200)
		dtok := dash["token"].(string)
		// The partner token is no dashboard token...
		r := do(t, b.app, req{"GET", "/api/tracking/events/" + itoa(w.programID), nil, bearer(ptok)})
		assertPlatformError(t, r, 401, "UnauthorizedError", "invalid or expired token", "")
		// ...and the dashboard token is no partner token.
		r = do(t, b.app, req{"DELETE", "/api/v1/partner/session", nil, bearer(dtok)})
		assertPlatformError(t, r, 401, "UnauthorizedError", "invalid or expired partner token", "")
		r = do(t, b.app, req{"DELETE", "/api/v1/partner/session", nil, nil})
		assertPlatformError(t, r, 401, "UnauthorizedError", "Partner sign-in required", "")
	})

	t.Run("OKSignOutRevokes", func(t *testing.T) {
		tok := signInPartner(t, b, "sub-out", "out@creator.example")
		mustOK(t, do(t, b.app, req{"DELETE", "/api/v1/partner/session", nil, bearer(tok)}), 200)
		r := do(t, b.app, req{"DELETE", "/api/v1/partner/session", nil, bearer(tok)})
		assertPlatformError(t, r, 401, "UnauthorizedError", "invalid or expired partner token", "")
	})

	t.Run("ErrIdentityMismatch", func(t *testing.T) {
		signInPartner(t, b, "sub-first", "first@creator.example")
		// Another provider account for the same email...
		r := do(t, b.app, partnerSignInReq(b.iss.Token(t, "sub-other", "first@creator.example")))
		assertPlatformError(t, r, 403, "ForbiddenError",
			"This email address is linked to a different account at the sign-in provider. Sign in with that account, or ask an operator to unlink it.", "")
		assertDetailsCode(t, r, "IDENTITY_MISMATCH")
		// ...and the same provider account with another email.
		r = do(t, b.app, partnerSignInReq(b.iss.Token(t, "sub-first", "renamed@creator.example")))
		assertPlatformError(t, r, 403, "ForbiddenError",
			"This sign-in account is already linked to another partner. Sign in with the account you used before, or ask an operator to unlink it.", "")
		assertDetailsCode(t, r, "IDENTITY_MISMATCH")
		if n := countRows(t, b.testBundle, `SELECT count(*) FROM partners WHERE email = 'renamed@creator.example'`); n != 0 {
			t.Fatalf("a refused sign-in left %d partners", n)
		}
	})

	t.Run("ErrTokenUsedTwice", func(t *testing.T) {
		tok := b.iss.Token(t, "sub-twice", "twice@creator.example")
		mustOK(t, do(t, b.app, partnerSignInReq(tok)), 200)
		r := do(t, b.app, partnerSignInReq(tok))
		assertPlatformError(t, r, 401, "UnauthorizedError", "id_token has already been used", "")
	})

	t.Run("ErrBadBody", func(t *testing.T) {
		r := do(t, b.app, partnerSignInReq(42))
		assertPlatformError(t, r, 400, "BadRequestError", "id_token is required and must be a string", "")
	})
}
