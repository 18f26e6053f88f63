package devissuer

import (
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	jose "github.com/go-jose/go-jose/v4"
)

// jwks is the issuer's key set: its one RSA public key (RFC 7517).
func jwks(pub *rsa.PublicKey, kid string) jose.JSONWebKeySet {
	return jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: pub, KeyID: kid, Algorithm: string(jose.RS256), Use: "sig"}}}
}

// Subject is the stable sub of an email address: the same address always
// signs in as the same subject.
func Subject(email string) string {
	sum := sha256.Sum256([]byte(email))
	return "dev-" + hex.EncodeToString(sum[:16])
}

// idToken signs the claims of g's sign-in as an RS256 JWS (RFC 7515,
// compact serialization).
func (iss *Issuer) idToken(g grant) (string, error) {
	now := iss.cfg.Now()
	claims := map[string]any{
		"iss":            iss.cfg.IssuerURL,
		"sub":            Subject(g.email),
		"aud":            g.clientID,
		"iat":            now.Unix(),
		"exp":            now.Add(TokenTTL).Unix(),
		"email":          g.email,
		"email_verified": true,
		"jti":            randomString(16), // no two tokens alike, even within a second
	}
	if g.nonce != "" {
		claims["nonce"] = g.nonce
	}
	if g.name != "" {
		claims["name"] = g.name
	}
	return iss.sign(claims)
}

// sign writes claims as a compact RS256 JWS with the issuer's key id
// (go-jose, as go-oidc verifies it).
func (iss *Issuer) sign(claims map[string]any) (string, error) {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256,
		Key: jose.JSONWebKey{Key: iss.cfg.Key, KeyID: iss.cfg.KeyID}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		return "", err
	}
	return jws.CompactSerialize()
}
