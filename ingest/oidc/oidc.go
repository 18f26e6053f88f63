// Package oidc verifies the id_tokens of the sign-in provider with
// github.com/coreos/go-oidc: discovery of the issuer, its JWKS (fetched and
// refreshed by go-oidc when the provider rotates keys), issuer, audience
// (and azp when there are several), expiry, an iat not in the future and a
// verified email. It implements [ledger.IdentityVerifier], the
// one verification that dashboard sign-in and the CLI login callback share.
package oidc

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/partnertrack/partnertrack/ledger"
)

// Config names the provider and our client at it.
type Config struct {
	IssuerURL string // OIDC_ISSUER_URL: discovery lives at IssuerURL/.well-known/openid-configuration
	ClientID  string // OIDC_CLIENT_ID: the audience every accepted token must name

	// HTTPClient fetches discovery and keys; default: a client with a 10 s
	// timeout (http.DefaultClient has none).
	HTTPClient *http.Client
	// Now is the clock of expiry checks; default time.Now.
	Now func() time.Time
	// RetryDiscoveryAfter is how long a failed discovery is remembered
	// before the next attempt; default 5 s.
	RetryDiscoveryAfter time.Duration
}

// Verifier verifies id_tokens. Discovery happens on first use, not at
// start: an edge starts while the provider is unreachable and sign-in
// answers 500 until it is back.
type Verifier struct {
	cfg Config

	mu        sync.Mutex
	verifier  *gooidc.IDTokenVerifier
	provider  *gooidc.Provider
	failedAt  time.Time
	failedErr error
}

var _ ledger.IdentityVerifier = (*Verifier)(nil)

// New returns a verifier of cfg's provider.
func New(cfg Config) *Verifier {
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RetryDiscoveryAfter == 0 {
		cfg.RetryDiscoveryAfter = 5 * time.Second
	}
	return &Verifier{cfg: cfg}
}

// idVerifier returns the go-oidc verifier, discovering the provider on
// first use.
func (v *Verifier) idVerifier(ctx context.Context) (*gooidc.IDTokenVerifier, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.verifier != nil {
		return v.verifier, nil
	}
	if v.failedErr != nil && v.cfg.Now().Sub(v.failedAt) < v.cfg.RetryDiscoveryAfter {
		return nil, v.failedErr
	}
	// The provider keeps the client for its key fetches, which outlive
	// this request: only the client travels in the context.
	dctx, cancel := context.WithTimeout(gooidc.ClientContext(context.WithoutCancel(ctx), v.cfg.HTTPClient), v.cfg.HTTPClient.Timeout)
	defer cancel()
	p, err := gooidc.NewProvider(dctx, v.cfg.IssuerURL)
	if err != nil {
		v.failedAt, v.failedErr = v.cfg.Now(), fmt.Errorf("oidc: discovery of %s: %w", v.cfg.IssuerURL, err)
		return nil, v.failedErr
	}
	v.provider = p
	v.verifier = p.VerifierContext(gooidc.ClientContext(context.Background(), v.cfg.HTTPClient),
		&gooidc.Config{ClientID: v.cfg.ClientID, Now: v.cfg.Now})
	v.failedErr = nil
	return v.verifier, nil
}

// Endpoint returns the provider's authorization and token endpoints, for
// the browser sign-in's authorization-code flow.
func (v *Verifier) Endpoint(ctx context.Context) (oauth2.Endpoint, error) {
	if _, err := v.idVerifier(ctx); err != nil {
		return oauth2.Endpoint{}, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.provider.Endpoint(), nil
}

// claims are the id_token claims we read beyond those go-oidc checks.
type claims struct {
	Email         string       `json:"email"`
	EmailVerified flexibleBool `json:"email_verified"`
	AZP           *string      `json:"azp"`
	Nonce         string       `json:"nonce"`
}

// maxIssuedAtSkew is how far in the future an id_token's iat may be
// (clocks differ a little); a token issued later than that is refused.
const maxIssuedAtSkew = 2 * time.Minute

// checkParty applies OpenID Connect Core 3.1.3.7 rules 4 and 5: a token
// for several audiences must name us as its authorized party (azp), and
// an azp, when present, must be our client id.
func (v *Verifier) checkParty(aud []string, azp *string) bool {
	if azp != nil {
		return *azp == v.cfg.ClientID
	}
	return len(aud) <= 1
}

// flexibleBool reads email_verified as some providers send it: a JSON
// boolean, or the string "true"/"false". Anything else is false (an email
// we cannot tell is verified is not).
type flexibleBool bool

func (b *flexibleBool) UnmarshalJSON(data []byte) error {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	switch x := v.(type) {
	case bool:
		*b = flexibleBool(x)
	case string:
		*b = flexibleBool(strings.EqualFold(strings.TrimSpace(x), "true"))
	default:
		*b = false
	}
	return nil
}

// VerifyIDToken implements [ledger.IdentityVerifier].
func (v *Verifier) VerifyIDToken(ctx context.Context, raw string) (*ledger.Identity, error) {
	iv, err := v.idVerifier(ctx)
	if err != nil {
		return nil, err
	}
	tok, err := iv.Verify(ctx, raw)
	if err != nil {
		var expired *gooidc.TokenExpiredError
		switch {
		case errors.As(err, &expired):
			return nil, ledger.NewError(ledger.EUnauthorized, ledger.MsgIDTokenExpired)
		case isKeyFetchFailure(err):
			return nil, fmt.Errorf("oidc: keys of %s unavailable: %w", v.cfg.IssuerURL, err)
		}
		return nil, ledger.NewError(ledger.EUnauthorized, ledger.MsgIDTokenInvalid)
	}
	var c claims
	if err := tok.Claims(&c); err != nil {
		return nil, ledger.NewError(ledger.EUnauthorized, ledger.MsgIDTokenInvalid)
	}
	if !v.checkParty(tok.Audience, c.AZP) || tok.IssuedAt.After(v.cfg.Now().Add(maxIssuedAtSkew)) {
		return nil, ledger.NewError(ledger.EUnauthorized, ledger.MsgIDTokenInvalid)
	}
	email, ok := ledger.NormalizeEmail(c.Email)
	if !ok || !bool(c.EmailVerified) {
		return nil, ledger.ErrProviderEmailNotVerified()
	}
	if tok.Subject == "" {
		return nil, ledger.NewError(ledger.EUnauthorized, ledger.MsgIDTokenInvalid)
	}
	hash := sha256.Sum256([]byte(raw))
	return &ledger.Identity{Issuer: tok.Issuer, Subject: tok.Subject, Email: email,
		TokenHash: hash[:], TokenExpires: tok.Expiry, Nonce: c.Nonce}, nil
}

// isKeyFetchFailure tells a provider whose keys could not be fetched (the
// token may be fine: a 500, retry) from a token no key verifies (a 401).
// go-oidc reports the first as "fetching keys …" without a typed error, so
// the text is all there is to go by.
func isKeyFetchFailure(err error) bool {
	return strings.Contains(err.Error(), "fetching keys")
}
