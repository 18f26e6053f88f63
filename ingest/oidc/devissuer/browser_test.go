package devissuer_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
)

// TestSignInInARealBrowser signs in through the page in headless
// Chromium, back to a client on another origin: the strict CSP applies
// the page's style and lets the form's redirect leave (browsers check
// form-action on it), a shape of address the browser accepts but the
// provider refuses comes back with its message tied to the field, and the
// code the client receives exchanges for an id_token of the email typed.
func TestSignInInARealBrowser(t *testing.T) {
	chromium := os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("the browser test needs Chromium at %s (%v): install it with `apt-get install -y chromium` "+
			"(bash .ci/run does), or set CHROMIUM to a Chromium or Chrome binary", chromium, err)
	}
	b := setup(t, "/dev/oidc")

	// The client, on its own origin, keeps the query it is sent back with.
	var mu sync.Mutex
	var back url.Values
	client := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/auth/callback" {
			http.NotFound(w, r) // the browser asks for a favicon too
			return
		}
		mu.Lock()
		back = r.URL.Query()
		mu.Unlock()
		io.WriteString(w, `<!doctype html><html lang="en"><title>Back</title><main><h1 id="back">Back at the client</h1></main></html>`)
	}))
	t.Cleanup(client.Close)
	conf := b.conf
	conf.RedirectURL = client.URL + "/auth/callback"

	bounded, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(bounded,
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	defer cancelAlloc()
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	defer cancelTab()

	state, verifier := oauth2.GenerateVerifier(), oauth2.GenerateVerifier()
	err := chromedp.Do(ctx,
		chromedp.Navigate(conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier))),
		chromedp.WaitVisible("#email"),
		// Chromium's own check takes two dots in a row; net/mail does not.
		chromedp.SendKeys("#email", "dev..user@example.com"),
		chromedp.Click(`button[type=submit]`),
		chromedp.WaitVisible("#email-error"),
	)
	if err != nil {
		t.Fatal(err)
	}
	maxWidth, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector('main')).maxWidth`))
	if err != nil {
		t.Fatal(err)
	}
	described, err := chromedp.Run(ctx, chromedp.Evaluate[string](
		`document.getElementById(document.getElementById('email').getAttribute('aria-describedby')).textContent`))
	if err != nil {
		t.Fatal(err)
	}
	if maxWidth != "448px" {
		t.Errorf("main's max-width = %q: the nonce'd style did not apply", maxWidth)
	}
	if described != "Enter an email address, like name@example.com." {
		t.Errorf("the email field is described by %q", described)
	}

	if _, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('email').value = ''`)); err != nil {
		t.Fatal(err)
	}
	// A blocked redirect leaves the page as it is: bound the wait so the
	// test says so.
	backCtx, cancelBack := context.WithTimeout(ctx, 30*time.Second)
	defer cancelBack()
	err = chromedp.Do(backCtx,
		chromedp.SendKeys("#email", "Dev.User@Example.com"),
		chromedp.SendKeys("#name", "Dev User"),
		chromedp.Click(`button[type=submit]`),
		chromedp.WaitVisible("#back"),
	)
	if err != nil {
		t.Fatalf("not back at the client: %v", err)
	}
	mu.Lock()
	code, gotState := back.Get("code"), back.Get("state")
	mu.Unlock()
	if gotState != state || code == "" {
		t.Fatalf("sent back with %v", back)
	}
	tok, err := conf.Exchange(context.Background(), code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	idt, err := b.provider.Verifier(&gooidc.Config{ClientID: clientID, Now: b.clock.Now}).Verify(context.Background(), tok.Extra("id_token").(string))
	var claims struct{ Email, Name string }
	if err != nil || idt.Claims(&claims) != nil || claims.Email != "dev.user@example.com" || claims.Name != "Dev User" {
		t.Fatalf("id_token: %+v %+v, %v", idt, claims, err)
	}
}
