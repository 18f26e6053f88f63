package devissuer

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/partnertrack/partnertrack/ledger"
)

// MaxName is the longest name, in characters, the sign-in form takes.
const MaxName = 200

// authParams are the parameters of an authorization request (RFC 6749
// 4.1.1, OpenID Connect Core 3.1.2.1 and 3.2.2.1, RFC 7636 4.3), in the
// order the page carries them in hidden fields.
var authParams = []string{"response_type", "response_mode", "client_id", "redirect_uri", "scope", "state", "nonce", "code_challenge", "code_challenge_method"}

// authRequest is one authorization request, from the query of GET
// /authorize or the hidden fields of the form.
type authRequest map[string]string

func readAuthRequest(v url.Values) (authRequest, string) {
	a := authRequest{}
	for _, p := range authParams {
		if len(v[p]) > 1 {
			return nil, fmt.Sprintf("The parameter %s is repeated.", p)
		}
		a[p] = v.Get(p)
	}
	return a, ""
}

// check returns why a is refused, or "". client_id and redirect_uri come
// first: until both are good the user cannot be sent back (RFC 6749
// 4.1.2.1), so every refusal is a page of ours.
func (iss *Issuer) check(a authRequest) string {
	if a["client_id"] != iss.cfg.ClientID {
		return fmt.Sprintf("client_id %q is not a client of this provider.", a["client_id"])
	}
	if _, ok := redirectOrigin(a["redirect_uri"]); !ok {
		return "redirect_uri must be an absolute http or https URL without a fragment."
	}
	if !slices.Contains(strings.Fields(a["scope"]), "openid") {
		return "scope must include openid."
	}
	switch a["response_type"] {
	case "code":
	case "id_token":
		// The implicit flow of the CLI's login page (OpenID Connect Core
		// 3.2): the id_token comes back in the fragment, bound to a nonce.
		if a["nonce"] == "" {
			return "nonce is required with response_type id_token."
		}
		if m := a["response_mode"]; m != "" && m != "fragment" {
			return "response_mode must be fragment with response_type id_token."
		}
		return ""
	default:
		return "response_type must be code (the dashboard's flow, with PKCE) or id_token (the CLI login page's)."
	}
	if a["code_challenge"] == "" {
		return "code_challenge is required: this provider serves PKCE clients only (RFC 7636)."
	}
	if a["code_challenge_method"] != "S256" {
		return "code_challenge_method must be S256."
	}
	if !isS256Challenge(a["code_challenge"]) {
		return "code_challenge must be the base64url SHA-256 of the code verifier (43 characters)."
	}
	return ""
}

// redirectOrigin returns the scheme://host of an acceptable redirect_uri:
// absolute http(s), a host of plain characters (it goes into the page's
// Content-Security-Policy), no fragment (RFC 6749 3.1.2).
func redirectOrigin(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" || strings.Contains(raw, "#") {
		return "", false
	}
	for _, r := range u.Host {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(".-:[]", r)) {
			return "", false
		}
	}
	return u.Scheme + "://" + u.Host, true
}

func isS256Challenge(s string) bool {
	if len(s) != 43 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// authorize shows the sign-in page (GET) or signs in with its form (POST):
// a good email makes a code and sends the browser back to redirect_uri.
func (iss *Issuer) authorize(w http.ResponseWriter, r *http.Request) {
	var v url.Values
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		if err := r.ParseForm(); err != nil {
			iss.refuse(w, "The form could not be read.")
			return
		}
		v = r.PostForm
	} else {
		v = r.URL.Query()
	}
	a, reason := readAuthRequest(v)
	if reason == "" {
		reason = iss.check(a)
	}
	if reason != "" {
		iss.refuse(w, reason)
		return
	}
	if r.Method != http.MethodPost {
		iss.signInPage(w, http.StatusOK, a, pageData{})
		return
	}

	d := pageData{Email: v.Get("email"), Name: strings.TrimSpace(v.Get("name"))}
	email, ok := ledger.NormalizeEmail(d.Email)
	if !ok {
		d.EmailError = "Enter an email address, like name@example.com."
	}
	if !utf8.ValidString(d.Name) || utf8.RuneCountInString(d.Name) > MaxName {
		d.NameError = fmt.Sprintf("Enter a name of at most %d characters, or none.", MaxName)
	}
	if d.EmailError != "" || d.NameError != "" {
		iss.signInPage(w, http.StatusBadRequest, a, d)
		return
	}
	if a["response_type"] == "id_token" {
		iss.sendIDToken(w, r, a, email, d.Name)
		return
	}
	code := iss.newCode(grant{
		clientID:      a["client_id"],
		redirectURI:   a["redirect_uri"],
		codeChallenge: a["code_challenge"],
		nonce:         a["nonce"],
		email:         email,
		name:          d.Name,
	})
	back := url.Values{"code": {code}}
	if a["state"] != "" {
		back.Set("state", a["state"])
	}
	// Append, so the redirect_uri's own query stays as the client wrote it.
	u, _ := url.Parse(a["redirect_uri"])
	if u.RawQuery != "" {
		u.RawQuery += "&"
	}
	u.RawQuery += back.Encode()
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
}

// sendIDToken answers the implicit flow: the signed id_token and the
// state in the redirect_uri's fragment, where only the page that asked
// reads them.
func (iss *Issuer) sendIDToken(w http.ResponseWriter, r *http.Request, a authRequest, email, name string) {
	tok, err := iss.idToken(grant{clientID: a["client_id"], nonce: a["nonce"], email: email, name: name})
	if err != nil {
		http.Error(w, "the id_token could not be signed", http.StatusInternalServerError)
		return
	}
	back := url.Values{"id_token": {tok}}
	if a["state"] != "" {
		back.Set("state", a["state"])
	}
	http.Redirect(w, r, a["redirect_uri"]+"#"+back.Encode(), http.StatusSeeOther)
}

// signInPage renders the form for a, with d's values and messages.
func (iss *Issuer) signInPage(w http.ResponseWriter, status int, a authRequest, d pageData) {
	origin, _ := redirectOrigin(a["redirect_uri"])
	u, _ := url.Parse(a["redirect_uri"])
	d.Title = "Development sign-in"
	d.ClientID = a["client_id"]
	d.ReturnTo = origin + u.EscapedPath()
	d.Action = iss.prefix + "/authorize"
	d.MaxName = MaxName
	for _, p := range authParams {
		if a[p] != "" {
			d.Hidden = append(d.Hidden, hiddenField{p, a[p]})
		}
	}
	render(w, status, "authorize", d, origin)
}

// refuse renders the 400 page for a request this provider does not serve.
func (iss *Issuer) refuse(w http.ResponseWriter, reason string) {
	render(w, http.StatusBadRequest, "refused", pageData{Title: "Sign-in request refused", Reason: reason}, "")
}
