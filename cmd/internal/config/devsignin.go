package config

import (
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// devSignIn checks that the development sign-in, which signs in anyone
// without a password, can only be reached from this machine, and points
// the OIDC settings at it.
func devSignIn(c *Config) []error {
	var errs []error
	if !loopbackListen(c.ListenAddr) {
		errs = append(errs, errors.New("DEV_SIGNIN=1 needs LISTEN_ADDR on a loopback address (127.0.0.1:PORT); it must never face a network"))
	}
	// A proxy on this machine could still publish a loopback edge; the
	// public URL says whether one does.
	if u, err := url.Parse(c.PublicBaseURL); err == nil && u.Host != "" && !loopbackHost(u.Hostname()) {
		errs = append(errs, errors.New("DEV_SIGNIN=1 needs PUBLIC_BASE_URL on a loopback host (http://localhost:PORT); it must never face a network"))
	}
	if c.OIDCIssuerURL != "" {
		errs = append(errs, errors.New("DEV_SIGNIN=1 and OIDC_ISSUER_URL exclude each other"))
	}
	if len(errs) == 0 && c.OIDCClientID == "" {
		c.OIDCIssuerURL = c.PublicBaseURL + DevSignInPath
		c.OIDCClientID = DevSignInClientID
	}
	return errs
}

// loopbackListen reports whether addr (host:port) listens on loopback
// only; an empty host (":8080") listens on every interface.
func loopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && loopbackHost(host)
}

func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
