package devissuer

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math/big"
)

// jwk is one RSA public key of the JWKS (RFC 7517, RFC 7518 6.3.1).
type jwk struct {
	Kty string `json:"kty"`
	N   string `json:"n"`
	E   string `json:"e"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

func jwks(pub *rsa.PublicKey, kid string) map[string][]jwk {
	return map[string][]jwk{"keys": {{
		Kty: "RSA",
		N:   base64.RawURLEncoding.EncodeToString(pub.N.Bytes()),
		E:   base64.RawURLEncoding.EncodeToString(big.NewInt(int64(pub.E)).Bytes()),
		Kid: kid,
		Alg: "RS256",
		Use: "sig",
	}}}
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

func (iss *Issuer) sign(claims map[string]any) (string, error) {
	header, err := json.Marshal(map[string]string{"alg": "RS256", "kid": iss.cfg.KeyID, "typ": "JWT"})
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	input := base64.RawURLEncoding.EncodeToString(header) + "." + base64.RawURLEncoding.EncodeToString(payload)
	digest := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPKCS1v15(rand.Reader, iss.cfg.Key, crypto.SHA256, digest[:])
	if err != nil {
		return "", err
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}
