package testissuer_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"testing"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/partnertrack/partnertrack/ingest/oidc/testissuer"
)

// TestIssuerServesTheFlow: the issuer's URL serves the sign-in page and
// the token endpoint, on the issuer's clock, and the tokens verify
// against the same keys as Token's.
func TestIssuerServesTheFlow(t *testing.T) {
	iss := testissuer.New(t)
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	iss.SetClock(func() time.Time { return at })
	ctx := context.Background()
	provider, err := gooidc.NewProvider(ctx, iss.URL)
	if err != nil {
		t.Fatal(err)
	}
	conf := oauth2.Config{ClientID: testissuer.ClientID, Endpoint: provider.Endpoint(),
		RedirectURL: "http://127.0.0.1:1/auth/callback", Scopes: []string{gooidc.ScopeOpenID, "email"}}
	verifier := oauth2.GenerateVerifier()
	browser := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	res, err := browser.Get(conf.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier)))
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET authorize: %v %v", res, err)
	}
	res.Body.Close()
	// The hidden fields are the query's: post them as the page would.
	form, _ := url.ParseQuery(res.Request.URL.RawQuery)
	form.Set("email", "person@example.com")
	res, err = browser.PostForm(iss.URL+"/authorize", form)
	if err != nil || res.StatusCode != http.StatusSeeOther {
		t.Fatalf("POST authorize: %v %v", res, err)
	}
	res.Body.Close()
	loc, _ := url.Parse(res.Header.Get("Location"))
	tok, err := conf.Exchange(ctx, loc.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	v := provider.Verifier(&gooidc.Config{ClientID: testissuer.ClientID, Now: func() time.Time { return at }})
	idt, err := v.Verify(ctx, tok.Extra("id_token").(string))
	if err != nil || !idt.IssuedAt.Equal(at) {
		t.Fatalf("flow token: %+v, %v", idt, err)
	}
	if _, err := v.Verify(ctx, iss.Token(t, "sub", "person@example.com")); err != nil {
		t.Fatalf("Token: %v", err)
	}
}

// TestSetBroken: a broken issuer answers 500 on every endpoint, and
// works again when mended.
func TestSetBroken(t *testing.T) {
	iss := testissuer.New(t)
	status := func(path string) int {
		t.Helper()
		res, err := http.Get(iss.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	paths := []string{"/.well-known/openid-configuration", "/keys"}
	iss.SetBroken(true)
	for _, p := range append(paths, "/authorize") {
		if s := status(p); s != http.StatusInternalServerError {
			t.Errorf("broken %s = %d", p, s)
		}
	}
	iss.SetBroken(false)
	for _, p := range paths {
		if s := status(p); s != http.StatusOK {
			t.Errorf("mended %s = %d", p, s)
		}
	}
	if !regexp.MustCompile(`^http://127\.0\.0\.1:\d+$`).MatchString(iss.URL) {
		t.Errorf("URL = %s", iss.URL)
	}
}
