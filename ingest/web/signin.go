package web

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"golang.org/x/oauth2"

	"github.com/partnertrack/partnertrack/ledger"
)

// loginTTL bounds how long a sign-in may take at the provider.
const loginTTL = 10 * time.Minute

// loginPage is GET /login: a link to the provider's sign-in, or, with a
// live session, the person's own pages.
func (p *Pages) loginPage(c *fiber.Ctx) error {
	next := safeNext(c.Query("next"))
	if next == "" && c.Cookies(brandCookie) != "" {
		return c.Redirect(brandArea.home, fiber.StatusSeeOther)
	}
	if next == "" && c.Cookies(partnerCookie) != "" {
		return c.Redirect(partnerArea.home, fiber.StatusSeeOther)
	}
	start := "/auth/login"
	if next != "" {
		start += "?next=" + url.QueryEscape(next)
	}
	return p.render(c, fiber.StatusOK, "login", view{Title: "Sign in", Data: map[string]any{
		"Start": start, "Configured": p.cfg.Provider != nil,
	}})
}

// oauthConfig is our client at the provider.
func (p *Pages) oauthConfig(c *fiber.Ctx) (*oauth2.Config, error) {
	ep, err := p.cfg.Provider.Endpoint(c.UserContext())
	if err != nil {
		return nil, err
	}
	ep.AuthStyle = oauth2.AuthStyleInParams
	if p.cfg.ClientSecret != "" {
		ep.AuthStyle = oauth2.AuthStyleInHeader
	}
	return &oauth2.Config{
		ClientID: p.cfg.ClientID, ClientSecret: p.cfg.ClientSecret, Endpoint: ep,
		RedirectURL: p.cfg.PublicBaseURL + "/auth/callback",
		Scopes:      []string{"openid", "email", "profile"},
	}, nil
}

// startSignIn is GET /auth/login: it remembers a fresh state, nonce and
// PKCE verifier in a short-lived cookie and sends the browser to the
// provider's sign-in page.
func (p *Pages) startSignIn(c *fiber.Ctx) error {
	if p.cfg.Provider == nil {
		return p.renderError(c, fiber.StatusServiceUnavailable, "Sign-in is not configured on this server (OIDC_ISSUER_URL and OIDC_CLIENT_ID are unset).")
	}
	conf, err := p.oauthConfig(c)
	if err != nil {
		return err
	}
	state, nonce, verifier := randomToken(), randomToken(), oauth2.GenerateVerifier()
	next := safeNext(c.Query("next"))
	p.setCookie(c, loginCookie, strings.Join([]string{state, nonce, verifier, base64.RawURLEncoding.EncodeToString([]byte(next))}, "."), "/auth", loginTTL)
	return c.Redirect(conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier),
		oauth2.SetAuthURLParam("nonce", nonce)), fiber.StatusFound)
}

// finishSignIn is GET /auth/callback: the provider's answer. It checks the
// state against the cookie (a sign-in this browser started), trades the
// code with the PKCE verifier for an id_token, verifies it and its nonce,
// and opens the person's brand and partner sessions.
func (p *Pages) finishSignIn(c *fiber.Ctx) error {
	if p.cfg.Provider == nil {
		return p.renderError(c, fiber.StatusServiceUnavailable, "Sign-in is not configured on this server (OIDC_ISSUER_URL and OIDC_CLIENT_ID are unset).")
	}
	parts := strings.Split(c.Cookies(loginCookie), ".")
	p.clearCookie(c, loginCookie, "/auth")
	if len(parts) != 4 || c.Query("state") == "" || c.Query("state") != parts[0] {
		return p.signInProblem(c, fiber.StatusBadRequest, "This sign-in was not started here or took too long. Sign in again.")
	}
	if e := c.Query("error"); e != "" {
		return p.signInProblem(c, fiber.StatusUnauthorized, "The sign-in provider refused the sign-in ("+e+"). Sign in again.")
	}
	conf, err := p.oauthConfig(c)
	if err != nil {
		return err
	}
	tok, err := conf.Exchange(c.UserContext(), c.Query("code"), oauth2.VerifierOption(parts[2]))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			return p.signInProblem(c, fiber.StatusUnauthorized, "The sign-in provider did not accept this sign-in. Sign in again.")
		}
		return err
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return p.signInProblem(c, fiber.StatusUnauthorized, "The sign-in provider sent no id_token. Sign in again.")
	}
	id, err := p.cfg.Provider.VerifyIDToken(c.UserContext(), raw)
	if err != nil {
		return p.refusedSignIn(c, err)
	}
	if id.Nonce != parts[1] {
		return p.signInProblem(c, fiber.StatusUnauthorized, ledger.MsgIDTokenInvalid)
	}
	_, sess, err := p.cfg.SignIn.SignIn(c.UserContext(), *id, ledger.DashboardSession)
	if err != nil {
		return p.refusedSignIn(c, err)
	}
	// The same verified identity opens the partner session; the token is
	// already used up by the brand sign-in, so it is not checked again.
	partnerID := *id
	partnerID.TokenHash = nil
	p.setCookie(c, brandCookie, sess.Token, "/", sessionTTL)
	psess, err := p.cfg.PartnerSignIn.SignInPartner(c.UserContext(), partnerID)
	var refused *ledger.Error
	switch {
	case errors.As(err, &refused) && (refused.Code == ledger.EForbidden || refused.Code == ledger.EUnauthorized):
		// The partner side refuses this identity (its email's partner is
		// bound to another one): the brand side still opens, and says why
		// the partner pages will not.
		p.clearCookie(c, partnerCookie, "/")
		p.setCookie(c, flashCookie, base64.RawURLEncoding.EncodeToString([]byte(cutText(
			"Signed in to the brand dashboard only; the partner dashboard refused this sign-in: "+refused.Message, maxFlash))), "/", 60e9)
		return c.Redirect(brandArea.home, fiber.StatusSeeOther)
	case err != nil:
		p.cfg.SignIn.RevokeSession(c.UserContext(), sess.Token)
		p.clearCookie(c, brandCookie, "/")
		return err
	}
	p.setCookie(c, partnerCookie, psess.Token, "/", sessionTTL)
	next, _ := base64.RawURLEncoding.DecodeString(parts[3])
	if target := safeNext(string(next)); target != "" {
		return c.Redirect(target, fiber.StatusSeeOther)
	}
	return c.Redirect(p.landing(c, sess.Token, psess.Token), fiber.StatusSeeOther)
}

// landing is where a fresh sign-in lands: the brand's programs when the
// person has any, else the partner's pages when they belong to or are
// invited to a program, else the brand's pages (to create a program).
func (p *Pages) landing(c *fiber.Ctx, brandToken, partnerToken string) string {
	if progs, err := p.myPrograms(c, brandToken); err == nil && len(progs) > 0 {
		return brandArea.home
	}
	if n, err := p.partnerMemberships(c, partnerToken); err == nil && n > 0 {
		return partnerArea.home
	}
	return brandArea.home
}

// refusedSignIn shows a sign-in refusal (a suspended account, an identity
// bound to someone else, a used or invalid token) on the sign-in page.
func (p *Pages) refusedSignIn(c *fiber.Ctx, err error) error {
	var le *ledger.Error
	if errors.As(err, &le) && (le.Code == ledger.EUnauthorized || le.Code == ledger.EForbidden) {
		return p.signInProblem(c, fiber.StatusForbidden, le.Message)
	}
	return err
}

func (p *Pages) signInProblem(c *fiber.Ctx, status int, msg string) error {
	return p.render(c, status, "login", view{Title: "Sign in", Data: map[string]any{
		"Start": "/auth/login", "Configured": true, "Problem": msg,
	}})
}

// signOut is POST /logout: it revokes both sessions at once and clears the
// cookies. The form token of either session is accepted.
func (p *Pages) signOut(c *fiber.Ctx) error {
	brandTok, partnerTok := c.Cookies(brandCookie), c.Cookies(partnerCookie)
	if !checkCSRF(c, brandTok) && !checkCSRF(c, partnerTok) {
		return p.renderError(c, fiber.StatusForbidden, "This form has expired or did not come from this site. Go back, reload the page and try again.")
	}
	if brandTok != "" {
		if err := p.cfg.SignIn.RevokeSession(c.UserContext(), brandTok); err != nil {
			return err
		}
	}
	if partnerTok != "" {
		if err := p.cfg.PartnerSignIn.RevokePartnerSession(c.UserContext(), partnerTok); err != nil {
			return err
		}
	}
	p.clearCookie(c, brandCookie, "/")
	p.clearCookie(c, partnerCookie, "/")
	return c.Redirect("/login", fiber.StatusSeeOther)
}

func randomToken() string {
	b := make([]byte, 24)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
