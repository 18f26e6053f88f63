// Package testissuer runs an OpenID Connect issuer in process for tests:
// the development provider of package devissuer (discovery, JWKS, the
// sign-in page at /authorize and the token endpoint, so a browser test
// signs in as a person would) on a loopback port, and helpers that sign
// id_tokens for it directly.
package testissuer

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"github.com/coreos/go-oidc/v3/oidc/oidctest"

	"github.com/partnertrack/partnertrack/ingest/oidc/devissuer"
)

// ClientID is the audience the issuer's tokens name by default.
const ClientID = "partnertrack-test-client"

const keyID = "test-key-1"

// Issuer is a running test issuer.
type Issuer struct {
	URL string // the issuer URL (OIDC_ISSUER_URL)

	key    *rsa.PrivateKey
	mu     sync.Mutex
	broken bool             // when true, every endpoint answers 500
	now    func() time.Time // the clock of Token's and the token endpoint's iat and exp
}

var (
	keyOnce   sync.Once
	sharedKey *rsa.PrivateKey
)

// signingKey returns an RSA key generated once per test binary: a 2048-bit
// key takes a noticeable moment to generate, and every issuer of a run may
// share it (each issuer has its own URL, so tokens of one are refused by
// the others on their issuer).
func signingKey(tb testing.TB) *rsa.PrivateKey {
	keyOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			tb.Fatalf("testissuer: %v", err)
		}
		sharedKey = k
	})
	return sharedKey
}

// New starts an issuer that stops when the test ends. Its client is
// ClientID, with any redirect_uri.
func New(tb testing.TB) *Issuer {
	tb.Helper()
	iss := &Issuer{key: signingKey(tb)}
	var dev *devissuer.Issuer
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		iss.mu.Lock()
		broken := iss.broken
		iss.mu.Unlock()
		if broken {
			http.Error(w, "issuer down", http.StatusInternalServerError)
			return
		}
		dev.ServeHTTP(w, r)
	}))
	// The issuer URL is known once the listener is, before the server
	// starts, so the provider is complete before the first request.
	iss.URL = "http://" + srv.Listener.Addr().String()
	dev, err := devissuer.New(devissuer.Config{IssuerURL: iss.URL, ClientID: ClientID, Key: iss.key, KeyID: keyID, Now: iss.clock})
	if err != nil {
		tb.Fatalf("testissuer: %v", err)
	}
	srv.Start()
	tb.Cleanup(srv.Close)
	return iss
}

// clock is the issuer's clock: SetClock's, else the wall clock.
func (iss *Issuer) clock() time.Time {
	iss.mu.Lock()
	now := iss.now
	iss.mu.Unlock()
	if now == nil {
		return time.Now()
	}
	return now()
}

// SetClock makes Token and the token endpoint issue their tokens at now()
// instead of the wall clock, for tests that run on a settable clock.
func (iss *Issuer) SetClock(now func() time.Time) {
	iss.mu.Lock()
	iss.now = now
	iss.mu.Unlock()
}

// SetBroken makes every endpoint, discovery and the JWKS included, answer
// 500 (true) or work again.
func (iss *Issuer) SetBroken(broken bool) {
	iss.mu.Lock()
	iss.broken = broken
	iss.mu.Unlock()
}

// Claims returns the claims of a good token for email: this issuer, the
// default audience, valid for an hour from now, email verified, and a
// random jti so that two tokens are never the same (an id_token signs in
// once). Tests change or delete entries before signing.
func (iss *Issuer) Claims(sub, email string, now time.Time) map[string]any {
	jti := make([]byte, 16)
	rand.Read(jti)
	return map[string]any{
		"jti":            hex.EncodeToString(jti),
		"iss":            iss.URL,
		"aud":            ClientID,
		"sub":            sub,
		"iat":            now.Unix(),
		"exp":            now.Add(time.Hour).Unix(),
		"email":          email,
		"email_verified": true,
	}
}

// Sign signs claims with the issuer's key.
func (iss *Issuer) Sign(tb testing.TB, claims map[string]any) string {
	tb.Helper()
	return SignWith(tb, iss.key, keyID, claims)
}

// Token returns a good token for sub and email.
func (iss *Issuer) Token(tb testing.TB, sub, email string) string {
	tb.Helper()
	return iss.Sign(tb, iss.Claims(sub, email, iss.clock()))
}

// SignWith signs claims with another key under a key id, for tokens the
// issuer's JWKS cannot verify.
func SignWith(tb testing.TB, key *rsa.PrivateKey, kid string, claims map[string]any) string {
	tb.Helper()
	raw, err := json.Marshal(claims)
	if err != nil {
		tb.Fatal(err)
	}
	return oidctest.SignIDToken(key, kid, gooidc.RS256, string(raw))
}
