package devissuer

import "time"

// grant is what an authorization code stands for: who signed in, for
// which client and redirect_uri, and the PKCE challenge the token request
// must answer.
type grant struct {
	clientID      string
	redirectURI   string
	codeChallenge string
	nonce         string
	email         string
	name          string
	expires       time.Time
}

// newCode stores g under a new random code, valid for CodeTTL, and drops
// the expired codes so that abandoned sign-ins do not pile up.
func (iss *Issuer) newCode(g grant) string {
	now := iss.cfg.Now()
	g.expires = now.Add(CodeTTL)
	code := randomString(32)
	iss.mu.Lock()
	defer iss.mu.Unlock()
	for c, old := range iss.codes {
		if !now.Before(old.expires) {
			delete(iss.codes, c)
		}
	}
	iss.codes[code] = g
	return code
}

// takeCode removes code and returns its grant if it had not expired: a
// code is spent by its first token request, right or wrong (RFC 6749
// 4.1.2: a code used twice must be refused).
func (iss *Issuer) takeCode(code string) (grant, bool) {
	iss.mu.Lock()
	g, ok := iss.codes[code]
	delete(iss.codes, code)
	iss.mu.Unlock()
	if !ok || !iss.cfg.Now().Before(g.expires) {
		return grant{}, false
	}
	return g, true
}
