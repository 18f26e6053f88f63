package oidc_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ingest/oidc"
	"github.com/partnertrack/partnertrack/ingest/oidc/testissuer"
	"github.com/partnertrack/partnertrack/ledger"
)

// clock is a settable clock.
type clock struct{ t time.Time }

func (c *clock) Now() time.Time { return c.t }

func setup(t *testing.T) (*testissuer.Issuer, *oidc.Verifier, *clock) {
	t.Helper()
	t.Parallel()
	iss := testissuer.New(t)
	clk := &clock{t: time.Now()}
	v := oidc.New(oidc.Config{IssuerURL: iss.URL, ClientID: testissuer.ClientID, Now: clk.Now})
	return iss, v, clk
}

func TestVerifyIDToken(t *testing.T) {
	iss, v, clk := setup(t)
	otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	claims := func(change func(map[string]any)) map[string]any {
		c := iss.Claims("sub-1", "Ada@Example.COM", clk.Now())
		if change != nil {
			change(c)
		}
		return c
	}
	sign := func(change func(map[string]any)) string { return iss.Sign(t, claims(change)) }

	for _, tc := range []struct {
		desc     string
		token    string
		wantCode string // "" for success
		wantMsg  string
		detail   string // error.details.code
	}{
		{desc: "OK: email_verified true", token: sign(nil)},
		{desc: `OK: email_verified "true" (a string)`, token: sign(func(c map[string]any) { c["email_verified"] = "true" })},
		{desc: "OK: audience in a list, azp ours", token: sign(func(c map[string]any) {
			c["aud"], c["azp"] = []string{"other", testissuer.ClientID}, testissuer.ClientID
		})},
		{desc: "OK: one audience in a list without azp", token: sign(func(c map[string]any) { c["aud"] = []string{testissuer.ClientID} })},
		{desc: "OK: iat within the skew", token: sign(func(c map[string]any) { c["iat"] = clk.Now().Add(time.Minute).Unix() })},
		{desc: "ErrSeveralAudiencesNoAzp", token: sign(func(c map[string]any) { c["aud"] = []string{"other", testissuer.ClientID} }),
			wantCode: ledger.EUnauthorized, wantMsg: ledger.MsgIDTokenInvalid},
		{desc: "ErrSeveralAudiencesOtherAzp", token: sign(func(c map[string]any) {
			c["aud"], c["azp"] = []string{"other", testissuer.ClientID}, "other"
		}), wantCode: ledger.EUnauthorized, wantMsg: ledger.MsgIDTokenInvalid},
		{desc: "ErrAzpNotOurs", token: sign(func(c map[string]any) { c["azp"] = "other" }),
			wantCode: ledger.EUnauthorized, wantMsg: ledger.MsgIDTokenInvalid},
		{desc: "ErrIssuedInTheFuture", token: sign(func(c map[string]any) { c["iat"] = clk.Now().Add(3 * time.Minute).Unix() }),
			wantCode: ledger.EUnauthorized, wantMsg: ledger.MsgIDTokenInvalid},
		{desc: "ErrWrongAudience", token: sign(func(c map[string]any) { c["aud"] = "someone-else" }),
			wantCode: ledger.EUnauthorized, wantMsg: ledger.MsgIDTokenInvalid},
		{desc: "ErrWrongIssuer", token: sign(func(c map[string]any) { c["iss"] = "https://evil.example" }),
			wantCode: ledger.EUnauthorized, wantMsg: ledger.MsgIDTokenInvalid},
		{desc: "ErrExpired", token: sign(func(c map[string]any) { c["exp"] = clk.Now().Add(-time.Minute).Unix() }),
			wantCode: ledger.EUnauthorized, wantMsg: ledger.MsgIDTokenExpired},
		{desc: "ErrBadSignature: another key under the issuer's key id",
			token:    testissuer.SignWith(t, otherKey, "test-key-1", claims(nil)),
			wantCode: ledger.EUnauthorized, wantMsg: ledger.MsgIDTokenInvalid},
		{desc: "ErrBadSignature: unknown key id",
			token:    testissuer.SignWith(t, otherKey, "unknown-kid", claims(nil)),
			wantCode: ledger.EUnauthorized, wantMsg: ledger.MsgIDTokenInvalid},
		{desc: "ErrMalformed", token: "not.a.jwt", wantCode: ledger.EUnauthorized, wantMsg: ledger.MsgIDTokenInvalid},
		{desc: "ErrNoSubject", token: sign(func(c map[string]any) { delete(c, "sub") }),
			wantCode: ledger.EUnauthorized, wantMsg: ledger.MsgIDTokenInvalid},
		{desc: "ErrEmailNotVerified: false", token: sign(func(c map[string]any) { c["email_verified"] = false }),
			wantCode: ledger.EForbidden, wantMsg: ledger.MsgProviderEmailNotVerified, detail: ledger.DetailProviderEmailNotVerified},
		{desc: `ErrEmailNotVerified: "false" (a string)`, token: sign(func(c map[string]any) { c["email_verified"] = "false" }),
			wantCode: ledger.EForbidden, wantMsg: ledger.MsgProviderEmailNotVerified, detail: ledger.DetailProviderEmailNotVerified},
		{desc: "ErrEmailNotVerified: claim absent", token: sign(func(c map[string]any) { delete(c, "email_verified") }),
			wantCode: ledger.EForbidden, wantMsg: ledger.MsgProviderEmailNotVerified, detail: ledger.DetailProviderEmailNotVerified},
		{desc: "ErrEmailNotVerified: no email", token: sign(func(c map[string]any) { delete(c, "email") }),
			wantCode: ledger.EForbidden, wantMsg: ledger.MsgProviderEmailNotVerified, detail: ledger.DetailProviderEmailNotVerified},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			id, err := v.VerifyIDToken(context.Background(), tc.token)
			if tc.wantCode == "" {
				if err != nil {
					t.Fatal(err)
				}
				if id.Issuer != iss.URL || id.Subject != "sub-1" || id.Email != "ada@example.com" {
					t.Fatalf("identity = %+v", *id)
				}
				// The token's hash and expiry travel with the identity, so
				// that sign-in can use each token once.
				if len(id.TokenHash) == 0 || id.TokenExpires.IsZero() {
					t.Fatalf("identity carries no token hash or expiry: %+v", *id)
				}
				return
			}
			var le *ledger.Error
			if err == nil || ledger.ErrorCode(err) != tc.wantCode || ledger.ErrorMessage(err) != tc.wantMsg {
				t.Fatalf("err = %v, want %s %q", err, tc.wantCode, tc.wantMsg)
			}
			le = err.(*ledger.Error)
			if tc.detail != "" && le.Details["code"] != tc.detail {
				t.Fatalf("details = %v, want code %s", le.Details, tc.detail)
			}
		})
	}
}

func TestVerifyProviderUnavailable(t *testing.T) {
	iss, v, clk := setup(t)
	ctx := context.Background()

	t.Run("ErrDiscoveryFails", func(t *testing.T) {
		iss.SetBroken(true)
		_, err := v.VerifyIDToken(ctx, iss.Token(t, "s", "a@example.com"))
		if err == nil || ledger.ErrorCode(err) != ledger.EInternal {
			t.Fatalf("err = %v, want an unexpected failure (500), not a verdict on the token", err)
		}
	})
	t.Run("OKAfterRecovery", func(t *testing.T) {
		iss.SetBroken(false)
		clk.t = clk.t.Add(10 * time.Second) // past the discovery retry pause
		if _, err := v.VerifyIDToken(ctx, iss.Token(t, "s", "a@example.com")); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ErrKeysUnavailable", func(t *testing.T) {
		// A token under a key id the verifier has not cached makes it
		// fetch the keys again, which fails.
		other, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		iss.SetBroken(true)
		defer iss.SetBroken(false)
		_, err = v.VerifyIDToken(ctx, testissuer.SignWith(t, other, "rotated-key", iss.Claims("s", "a@example.com", clk.Now())))
		if err == nil || ledger.ErrorCode(err) != ledger.EInternal {
			t.Fatalf("err = %v, want an unexpected failure (500)", err)
		}
	})
}
