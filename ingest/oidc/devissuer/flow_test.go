package devissuer_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/partnertrack/partnertrack/ingest/oidc"
	"github.com/partnertrack/partnertrack/ingest/oidc/devissuer"
)

// TestFlow drives the whole authorization-code flow with PKCE through
// golang.org/x/oauth2 and go-oidc, as the dashboard does, at the root of a
// server and mounted under a prefix of another.
func TestFlow(t *testing.T) {
	for _, tt := range []struct {
		desc, prefix string
		style        oauth2.AuthStyle
	}{
		{"OKAtRootClientInBody", "", oauth2.AuthStyleInParams},
		{"OKMountedClientInBasic", "/dev/oidc", oauth2.AuthStyleInHeader},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			b := setup(t, tt.prefix)
			ctx := context.Background()
			conf := b.conf
			conf.Endpoint.AuthStyle = tt.style
			conf.ClientSecret = "any secret will do"
			if conf.Endpoint.AuthURL != b.issuerURL+"/authorize" || conf.Endpoint.TokenURL != b.issuerURL+"/token" {
				t.Fatalf("endpoints = %+v, issuer %s", conf.Endpoint, b.issuerURL)
			}

			f := b.mustSignIn(t, conf, " Dev.User@Example.COM ", "Dev User")
			if got := f.loc.Scheme + "://" + f.loc.Host + f.loc.Path; got != redirectURI {
				t.Fatalf("sent back to %s, want %s", f.loc, redirectURI)
			}
			tok, err := conf.Exchange(ctx, f.code, oauth2.VerifierOption(f.verifier))
			if err != nil {
				t.Fatal(err)
			}
			if tok.TokenType != "Bearer" || tok.AccessToken == "" || tok.Expiry.Sub(b.clock.Now()) < 59*time.Minute {
				t.Fatalf("token = %+v", tok)
			}
			raw, _ := tok.Extra("id_token").(string)
			idt, err := b.verifier().Verify(ctx, raw)
			if err != nil {
				t.Fatal(err)
			}
			var claims struct {
				Email         string `json:"email"`
				EmailVerified bool   `json:"email_verified"`
				Name          string `json:"name"`
			}
			if err := idt.Claims(&claims); err != nil {
				t.Fatal(err)
			}
			if idt.Nonce != f.nonce || idt.Issuer != b.issuerURL || idt.Subject != devissuer.Subject("dev.user@example.com") ||
				claims.Email != "dev.user@example.com" || !claims.EmailVerified || claims.Name != "Dev User" ||
				idt.Expiry.Sub(idt.IssuedAt) != time.Hour {
				t.Fatalf("id_token = %+v, claims %+v", idt, claims)
			}

			// The service's own verifier accepts it too (it also wants a
			// verified email and an iat not in the future).
			id, err := oidc.New(oidc.Config{IssuerURL: b.issuerURL, ClientID: clientID, Now: b.clock.Now}).VerifyIDToken(ctx, raw)
			if err != nil || id.Email != "dev.user@example.com" || id.Subject != idt.Subject {
				t.Fatalf("oidc.Verifier: %+v, %v", id, err)
			}

			// The same person signs in again as the same subject, with
			// another token.
			f2 := b.mustSignIn(t, conf, "dev.user@example.com", "")
			tok2, err := conf.Exchange(ctx, f2.code, oauth2.VerifierOption(f2.verifier))
			if err != nil {
				t.Fatal(err)
			}
			idt2, err := b.verifier().Verify(ctx, tok2.Extra("id_token").(string))
			if err != nil || idt2.Subject != idt.Subject || tok2.Extra("id_token") == raw {
				t.Fatalf("second sign-in: %+v, %v", idt2, err)
			}
		})
	}
}

// TestFlowRefused: each way a token request goes wrong is refused with
// RFC 6749's error code, and a refused code is spent.
func TestFlowRefused(t *testing.T) {
	b := setup(t, "")
	ctx := context.Background()

	exchangeErr := func(t *testing.T, conf oauth2.Config, code, verifier string) *oauth2.RetrieveError {
		t.Helper()
		tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
		var re *oauth2.RetrieveError
		if !errors.As(err, &re) {
			t.Fatalf("exchange = %+v, %v; want a refusal", tok, err)
		}
		return re
	}
	want := func(t *testing.T, re *oauth2.RetrieveError, status int, code string) {
		t.Helper()
		if re.Response.StatusCode != status || re.ErrorCode != code {
			t.Fatalf("refusal = %d %q (%s), want %d %q", re.Response.StatusCode, re.ErrorCode, re.ErrorDescription, status, code)
		}
	}

	t.Run("ErrWrongVerifier", func(t *testing.T) {
		f := b.mustSignIn(t, b.conf, "a@example.com", "")
		want(t, exchangeErr(t, b.conf, f.code, oauth2.GenerateVerifier()), 400, "invalid_grant")
		// The failed attempt spent the code: the right verifier is too late.
		want(t, exchangeErr(t, b.conf, f.code, f.verifier), 400, "invalid_grant")
	})
	t.Run("ErrCodeReused", func(t *testing.T) {
		f := b.mustSignIn(t, b.conf, "a@example.com", "")
		if _, err := b.conf.Exchange(ctx, f.code, oauth2.VerifierOption(f.verifier)); err != nil {
			t.Fatal(err)
		}
		want(t, exchangeErr(t, b.conf, f.code, f.verifier), 400, "invalid_grant")
	})
	t.Run("ErrRedirectURIMismatch", func(t *testing.T) {
		f := b.mustSignIn(t, b.conf, "a@example.com", "")
		other := b.conf
		other.RedirectURL = redirectURI + "/elsewhere"
		want(t, exchangeErr(t, other, f.code, f.verifier), 400, "invalid_grant")
	})
	t.Run("ErrBadClient", func(t *testing.T) {
		f := b.mustSignIn(t, b.conf, "a@example.com", "")
		for _, style := range []oauth2.AuthStyle{oauth2.AuthStyleInParams, oauth2.AuthStyleInHeader} {
			other := b.conf
			other.ClientID = "someone-else"
			other.Endpoint.AuthStyle = style
			want(t, exchangeErr(t, other, f.code, f.verifier), 401, "invalid_client")
		}
		// A bad client does not spend the code of the real one.
		if _, err := b.conf.Exchange(ctx, f.code, oauth2.VerifierOption(f.verifier)); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ErrCodeExpired", func(t *testing.T) {
		f := b.mustSignIn(t, b.conf, "a@example.com", "")
		b.clock.Add(devissuer.CodeTTL)
		want(t, exchangeErr(t, b.conf, f.code, f.verifier), 400, "invalid_grant")
	})
	t.Run("ErrNoVerifier", func(t *testing.T) {
		f := b.mustSignIn(t, b.conf, "a@example.com", "")
		tok, err := b.conf.Exchange(ctx, f.code) // no code_verifier at all
		var re *oauth2.RetrieveError
		if !errors.As(err, &re) || re.ErrorCode != "invalid_request" || re.Response.StatusCode != http.StatusBadRequest {
			t.Fatalf("exchange without verifier = %+v, %v", tok, err)
		}
	})
}
