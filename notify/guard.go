package notify

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"syscall"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
)

// ErrRefusedTarget marks a connection refused because its address is not
// public (loopback, private, link-local and the like). It is final: the
// delivery is not retried.
var ErrRefusedTarget = errors.New("notify: refused a loopback, private or link-local address")

// Guard keeps webhook deliveries away from the service's own network. It
// checks a URL when an endpoint is registered (CheckTarget) and every
// address a delivery connects to (Control, the dialer hook), so that a host
// whose DNS changes after registration, or resolves differently on each
// lookup, still cannot reach a private address. Deliveries follow no
// redirects.
type Guard struct {
	// AllowPrivate lets every address through (WEBHOOK_ALLOW_PRIVATE_TARGETS,
	// for development and tests).
	AllowPrivate bool
	// Resolver resolves host names at registration; nil is the system's.
	Resolver *net.Resolver
}

var _ ledger.TargetChecker = (*Guard)(nil)

// resolveTimeout bounds the DNS lookup of a registration.
const resolveTimeout = 5 * time.Second

// CheckTarget refuses a URL whose host is, or resolves to, an address that
// is not public.
func (g *Guard) CheckTarget(ctx context.Context, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() == "" {
		return ledger.NewError(ledger.EInvalid, ledger.MsgWebhookURL)
	}
	if g.AllowPrivate {
		return nil
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		if !PublicAddr(ip) {
			return ledger.NewError(ledger.EInvalid, ledger.MsgWebhookPrivate)
		}
		return nil
	}
	r := g.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return ledger.NewError(ledger.EInvalid, ledger.MsgWebhookUnresolved)
	}
	for _, a := range addrs {
		if !PublicAddr(a) {
			return ledger.NewError(ledger.EInvalid, ledger.MsgWebhookPrivate)
		}
	}
	return nil
}

// Control is a net.Dialer Control hook: it runs after DNS resolution, on
// the very address about to be connected, and refuses addresses that are
// not public.
func (g *Guard) Control(network, address string, _ syscall.RawConn) error {
	if g.AllowPrivate {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot parse %q", ErrRefusedTarget, address)
	}
	if !PublicAddr(ap.Addr()) {
		return fmt.Errorf("%w: %s", ErrRefusedTarget, ap.Addr())
	}
	return nil
}

// nonPublic are the ranges beyond the standard library's predicates that
// no brand's webhook receiver lives in.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),      // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),  // carrier-grade NAT, often internal
	netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),    // reserved, and the broadcast address
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64
	netip.MustParsePrefix("100::/64"),       // discard-only
	netip.MustParsePrefix("2001::/23"),      // IETF protocol assignments (Teredo embeds any IPv4 address)
	netip.MustParsePrefix("2001:db8::/32"),  // documentation
	netip.MustParsePrefix("2002::/16"),      // 6to4 embeds any IPv4 address
	netip.MustParsePrefix("fec0::/10"),      // deprecated site-local
}

var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// PublicAddr reports whether ip is a public unicast address a webhook may
// be delivered to. An IPv4-mapped IPv6 address is judged as its IPv4
// address, a NAT64 address by the IPv4 address it embeds.
func PublicAddr(ip netip.Addr) bool {
	ip = ip.WithZone("").Unmap()
	if !ip.IsValid() {
		return false
	}
	if nat64.Contains(ip) {
		b := ip.As16()
		return PublicAddr(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
	}
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}
