package notify

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/partnertrack/partnertrack/ledger"
)

func TestPublicAddr(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc   string
		addr   string
		public bool
	}{
		{"OKPublicIPv4", "93.184.215.14", true},
		{"OKPublicIPv6", "2606:2800:21f:cb07:6820:80da:af6b:8b2c", true},
		{"OKNAT64OfPublic", "64:ff9b::5db8:d70e", true},
		{"ErrLoopback", "127.0.0.1", false},
		{"ErrLoopbackRange", "127.5.6.7", false},
		{"ErrLoopbackIPv6", "::1", false},
		{"ErrMappedLoopback", "::ffff:127.0.0.1", false},
		{"ErrPrivate10", "10.1.2.3", false},
		{"ErrPrivate172", "172.16.0.1", false},
		{"ErrPrivate192", "192.168.1.1", false},
		{"ErrUniqueLocal", "fd00::1", false},
		{"ErrLinkLocalMetadata", "169.254.169.254", false},
		{"ErrLinkLocalIPv6", "fe80::1", false},
		{"ErrLinkLocalIPv6Zone", "fe80::1%eth0", false},
		{"ErrUnspecified", "0.0.0.0", false},
		{"ErrThisNetwork", "0.1.2.3", false},
		{"ErrUnspecifiedIPv6", "::", false},
		{"ErrCarrierGradeNAT", "100.64.0.1", false},
		{"ErrBroadcast", "255.255.255.255", false},
		{"ErrMulticast", "224.0.0.1", false},
		{"ErrNAT64OfPrivate", "64:ff9b::a00:1", false},
		{"Err6to4", "2002:7f00:1::1", false},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := PublicAddr(netip.MustParseAddr(tc.addr)); got != tc.public {
				t.Fatalf("PublicAddr(%s) = %v, want %v", tc.addr, got, tc.public)
			}
		})
	}
}

func TestGuardCheckTarget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		desc    string
		url     string
		allow   bool
		message string // "" when accepted
	}{
		{"OKPublicLiteral", "https://93.184.215.14/hooks", false, ""},
		{"OKPublicIPv6Literal", "https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]:8443/h", false, ""},
		{"ErrLoopback", "http://127.0.0.1:9000/h", false, ledger.MsgWebhookPrivate},
		{"ErrLocalhostName", "http://localhost:9000/h", false, ledger.MsgWebhookPrivate},
		{"ErrIPv6Loopback", "http://[::1]/h", false, ledger.MsgWebhookPrivate},
		{"ErrMappedLoopback", "http://[::ffff:127.0.0.1]/h", false, ledger.MsgWebhookPrivate},
		{"ErrPrivate", "https://10.0.0.5/h", false, ledger.MsgWebhookPrivate},
		{"ErrMetadata", "http://169.254.169.254/latest/meta-data/", false, ledger.MsgWebhookPrivate},
		{"ErrLinkLocalIPv6", "http://[fe80::1]/h", false, ledger.MsgWebhookPrivate},
		{"ErrUnspecified", "http://0.0.0.0:8080/h", false, ledger.MsgWebhookPrivate},
		{"ErrUnresolvable", "https://no-such-host.invalid/h", false, ledger.MsgWebhookUnresolved},
		{"OKLoopbackAllowed", "http://127.0.0.1:9000/h", true, ""},
		{"OKLocalhostAllowed", "http://localhost:9000/h", true, ""},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			g := &Guard{AllowPrivate: tc.allow}
			err := g.CheckTarget(ctx, tc.url)
			if tc.message == "" {
				if err != nil {
					t.Fatalf("CheckTarget(%s) = %v, want accepted", tc.url, err)
				}
				return
			}
			if ledger.ErrorCode(err) != ledger.EInvalid || ledger.ErrorMessage(err) != tc.message {
				t.Fatalf("CheckTarget(%s) = %v, want %q", tc.url, err, tc.message)
			}
		})
	}
}

func TestGuardControl(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc    string
		address string
		allow   bool
		refused bool
	}{
		{"OKPublic", "93.184.215.14:443", false, false},
		{"ErrLoopback", "127.0.0.1:80", false, true},
		{"ErrPrivateIPv6", "[fd12::1]:443", false, true},
		{"ErrMetadata", "169.254.169.254:80", false, true},
		{"ErrUnparsable", "example.com:80", false, true},
		{"OKLoopbackAllowed", "127.0.0.1:80", true, false},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			g := &Guard{AllowPrivate: tc.allow}
			err := g.Control("tcp4", tc.address, nil)
			if errors.Is(err, ErrRefusedTarget) != tc.refused || (err != nil) != tc.refused {
				t.Fatalf("Control(%s) = %v, refused want %v", tc.address, err, tc.refused)
			}
		})
	}
}
