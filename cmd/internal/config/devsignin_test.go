package config

import (
	"testing"
)

// TestLoadDevSignIn: DEV_SIGNIN=1 points the OIDC settings at the edge's
// own development provider, and only when nothing but this machine can
// reach it.
func TestLoadDevSignIn(t *testing.T) {
	const (
		msgListen = "DEV_SIGNIN=1 needs LISTEN_ADDR on a loopback address (127.0.0.1:PORT); it must never face a network"
		msgPublic = "DEV_SIGNIN=1 needs PUBLIC_BASE_URL on a loopback host (http://localhost:PORT); it must never face a network"
		msgIssuer = "DEV_SIGNIN=1 and OIDC_ISSUER_URL exclude each other"
	)
	for _, tt := range []struct {
		desc   string
		env    map[string]string
		issuer string // OIDCIssuerURL when accepted
		err    string // the whole error when refused
	}{
		{desc: "OKIPv4", env: map[string]string{"DEV_SIGNIN": "1", "LISTEN_ADDR": "127.0.0.1:8080"},
			issuer: "http://localhost:8080/dev/oidc"},
		{desc: "OKIPv6AndTrue", env: map[string]string{"DEV_SIGNIN": "true", "LISTEN_ADDR": "[::1]:9000", "PUBLIC_BASE_URL": "http://[::1]:9000/"},
			issuer: "http://[::1]:9000/dev/oidc"},
		{desc: "OKLocalhost", env: map[string]string{"DEV_SIGNIN": "1", "LISTEN_ADDR": "localhost:0", "PUBLIC_BASE_URL": "http://127.0.0.1:8080"},
			issuer: "http://127.0.0.1:8080/dev/oidc"},
		{desc: "OKOff", env: map[string]string{"DEV_SIGNIN": "0"}},
		{desc: "ErrDefaultListenAddr", env: map[string]string{"DEV_SIGNIN": "1"}, err: msgListen},
		{desc: "ErrAllInterfaces", env: map[string]string{"DEV_SIGNIN": "1", "LISTEN_ADDR": "0.0.0.0:8080"}, err: msgListen},
		{desc: "ErrPublicAddress", env: map[string]string{"DEV_SIGNIN": "1", "LISTEN_ADDR": "192.168.1.5:8080"}, err: msgListen},
		{desc: "ErrHostName", env: map[string]string{"DEV_SIGNIN": "1", "LISTEN_ADDR": "example.com:8080"}, err: msgListen},
		{desc: "ErrNoPort", env: map[string]string{"DEV_SIGNIN": "1", "LISTEN_ADDR": "127.0.0.1"}, err: msgListen},
		{desc: "ErrPublicURLNotLoopback", env: map[string]string{"DEV_SIGNIN": "1", "LISTEN_ADDR": "127.0.0.1:8080", "PUBLIC_BASE_URL": "https://track.example.com"},
			err: msgPublic},
		{desc: "ErrWithIssuer", env: map[string]string{"DEV_SIGNIN": "1", "LISTEN_ADDR": "127.0.0.1:8080",
			"OIDC_ISSUER_URL": "https://issuer.example", "OIDC_CLIENT_ID": "x"}, err: msgIssuer},
		{desc: "ErrBadValue", env: map[string]string{"DEV_SIGNIN": "yes"}, err: "DEV_SIGNIN must be 1 or 0 (true or false)"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			c, err := Load(env(tt.env))
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			wantClient := ""
			if tt.issuer != "" {
				wantClient = DevSignInClientID
			}
			if c.DevSignIn != (tt.issuer != "") || c.OIDCIssuerURL != tt.issuer || c.OIDCClientID != wantClient {
				t.Fatalf("DevSignIn %v, issuer %q, client %q; want issuer %q", c.DevSignIn, c.OIDCIssuerURL, c.OIDCClientID, tt.issuer)
			}
		})
	}
}
