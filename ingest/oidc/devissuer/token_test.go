package devissuer_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestTokenRequestShape: requests the oauth2 package never sends are
// refused with RFC 6749's JSON error and spend no code.
func TestTokenRequestShape(t *testing.T) {
	b := setup(t, "")
	f := b.mustSignIn(t, b.conf, "a@example.com", "")
	good := url.Values{
		"grant_type": {"authorization_code"}, "code": {f.code}, "redirect_uri": {redirectURI},
		"code_verifier": {f.verifier}, "client_id": {clientID},
	}
	for _, tt := range []struct {
		desc        string
		contentType string
		change      func(url.Values)
		status      int
		code        string
	}{
		{"ErrJSONBody", "application/json", nil, 400, "invalid_request"},
		{"ErrNoGrantType", "", func(v url.Values) { v.Del("grant_type") }, 400, "invalid_request"},
		{"ErrRefreshGrant", "", func(v url.Values) { v.Set("grant_type", "refresh_token") }, 400, "unsupported_grant_type"},
		{"ErrNoCode", "", func(v url.Values) { v.Del("code") }, 400, "invalid_request"},
		{"ErrNoRedirectURI", "", func(v url.Values) { v.Del("redirect_uri") }, 400, "invalid_request"},
		{"ErrShortVerifier", "", func(v url.Values) { v.Set("code_verifier", "abc") }, 400, "invalid_request"},
		{"ErrRepeatedCode", "", func(v url.Values) { v.Add("code", "x") }, 400, "invalid_request"},
		{"ErrNoClient", "", func(v url.Values) { v.Del("client_id") }, 401, "invalid_client"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			v := url.Values{}
			for k, vs := range good {
				v[k] = append([]string(nil), vs...)
			}
			if tt.change != nil {
				tt.change(v)
			}
			ct := tt.contentType
			if ct == "" {
				ct = "application/x-www-form-urlencoded"
			}
			res, err := http.Post(b.issuerURL+"/token", ct, strings.NewReader(v.Encode()))
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var body struct{ Error string }
			if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != tt.status || body.Error != tt.code ||
				res.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("= %d %+v (%v), want %d %s", res.StatusCode, body, err, tt.status, tt.code)
			}
		})
	}
	// None of them spent the code.
	res, err := http.PostForm(b.issuerURL+"/token", good)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("good request after the bad ones = %d", res.StatusCode)
	}
}

// TestDiscoveryAndKeys: the documents say what the issuer supports, and
// the JWKS has the one signing key.
func TestDiscoveryAndKeys(t *testing.T) {
	b := setup(t, "/dev/oidc")
	var d map[string]any
	getJSON(t, b.issuerURL+"/.well-known/openid-configuration", &d)
	for k, want := range map[string]string{
		"issuer": b.issuerURL, "authorization_endpoint": b.issuerURL + "/authorize",
		"token_endpoint": b.issuerURL + "/token", "jwks_uri": b.issuerURL + "/keys",
	} {
		if d[k] != want {
			t.Errorf("%s = %v, want %s", k, d[k], want)
		}
	}
	for k, want := range map[string]string{
		"code_challenge_methods_supported":      "S256",
		"id_token_signing_alg_values_supported": "RS256", "subject_types_supported": "public",
	} {
		if l, _ := d[k].([]any); len(l) != 1 || l[0] != want {
			t.Errorf("%s = %v, want [%s]", k, d[k], want)
		}
	}
	if l, _ := d["response_types_supported"].([]any); len(l) != 2 || l[0] != "code" || l[1] != "id_token" {
		t.Errorf("response_types_supported = %v, want [code id_token]", d["response_types_supported"])
	}
	var keys struct{ Keys []map[string]string }
	getJSON(t, b.issuerURL+"/keys", &keys)
	if len(keys.Keys) != 1 || keys.Keys[0]["kty"] != "RSA" || keys.Keys[0]["alg"] != "RS256" || keys.Keys[0]["use"] != "sig" ||
		keys.Keys[0]["e"] != "AQAB" || keys.Keys[0]["kid"] == "" || len(keys.Keys[0]["n"]) != 342 {
		t.Fatalf("keys = %+v", keys)
	}
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s = %d %s", u, res.StatusCode, res.Header.Get("Content-Type"))
	}
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}
