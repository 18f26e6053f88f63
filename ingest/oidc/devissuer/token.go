package devissuer

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"mime"
	"net/http"
	"net/url"
)

// tokenError is an error answer of the token endpoint (RFC 6749 5.2).
type tokenError struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

// token exchanges a code for tokens (RFC 6749 4.1.3, RFC 7636 4.5). The
// client authenticates by its client_id alone, in the body or as the user
// of HTTP basic: any secret is accepted, this being a development
// provider, and PKCE binds the code to whoever started the sign-in.
func (iss *Issuer) token(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, code, desc string) {
		writeJSON(w, status, tokenError{code, desc})
	}
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/x-www-form-urlencoded" {
		fail(http.StatusBadRequest, "invalid_request", "the body must be application/x-www-form-urlencoded")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		fail(http.StatusBadRequest, "invalid_request", "the body could not be read")
		return
	}
	f := r.PostForm
	for _, p := range []string{"grant_type", "code", "redirect_uri", "code_verifier", "client_id"} {
		if len(f[p]) > 1 {
			fail(http.StatusBadRequest, "invalid_request", p+" is repeated")
			return
		}
	}

	clientID := f.Get("client_id")
	user, _, basic := r.BasicAuth()
	if basic {
		// RFC 6749 2.3.1: the basic user is form-encoded.
		u, err := url.QueryUnescape(user)
		if err != nil || (clientID != "" && clientID != u) {
			fail(http.StatusBadRequest, "invalid_request", "client_id of the body and of the Authorization header differ")
			return
		}
		clientID = u
	}
	if clientID != iss.cfg.ClientID {
		if basic {
			w.Header().Set("WWW-Authenticate", `Basic realm="devissuer"`)
		}
		fail(http.StatusUnauthorized, "invalid_client", "unknown client")
		return
	}

	switch f.Get("grant_type") {
	case "authorization_code":
	case "":
		fail(http.StatusBadRequest, "invalid_request", "grant_type is required")
		return
	default:
		fail(http.StatusBadRequest, "unsupported_grant_type", "only authorization_code is supported")
		return
	}
	for _, p := range []string{"code", "redirect_uri", "code_verifier"} {
		if f.Get(p) == "" {
			fail(http.StatusBadRequest, "invalid_request", p+" is required")
			return
		}
	}
	if !isVerifier(f.Get("code_verifier")) {
		fail(http.StatusBadRequest, "invalid_request", "code_verifier must be 43 to 128 unreserved characters (RFC 7636 4.1)")
		return
	}

	g, ok := iss.takeCode(f.Get("code"))
	switch {
	case !ok:
		fail(http.StatusBadRequest, "invalid_grant", "the code is unknown, expired or already used")
	case g.clientID != clientID:
		fail(http.StatusBadRequest, "invalid_grant", "the code was issued to another client")
	case g.redirectURI != f.Get("redirect_uri"):
		fail(http.StatusBadRequest, "invalid_grant", "redirect_uri differs from the authorization request's")
	case !challengeMatches(g.codeChallenge, f.Get("code_verifier")):
		fail(http.StatusBadRequest, "invalid_grant", "code_verifier does not match the code_challenge")
	default:
		idToken, err := iss.idToken(g)
		if err != nil {
			fail(http.StatusInternalServerError, "server_error", "")
			return
		}
		w.Header().Set("Pragma", "no-cache")
		writeJSON(w, http.StatusOK, map[string]any{
			"access_token": randomString(32),
			"token_type":   "Bearer",
			"expires_in":   int(TokenTTL.Seconds()),
			"id_token":     idToken,
		})
	}
}

// challengeMatches is RFC 7636 4.6 for S256: BASE64URL(SHA256(verifier))
// equals the challenge.
func challengeMatches(challenge, verifier string) bool {
	sum := sha256.Sum256([]byte(verifier))
	return subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(challenge)) == 1
}

func isVerifier(s string) bool {
	if len(s) < 43 || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_' || r == '~') {
			return false
		}
	}
	return true
}
