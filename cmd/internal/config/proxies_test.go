package config

import (
	"net/netip"
	"reflect"
	"testing"
)

func TestParseTrustedProxies(t *testing.T) {
	p := netip.MustParsePrefix
	for _, tc := range []struct {
		desc string
		in   string
		want []netip.Prefix
		err  bool
	}{
		{"Empty", "", nil, false},
		{"CIDRsAndAddresses", "0.0.0.0/32, 10.0.0.0/8, 192.0.2.7,2001:db8::1", []netip.Prefix{p("0.0.0.0/32"), p("10.0.0.0/8"),
			p("192.0.2.7/32"), p("2001:db8::1/128")}, false},
		{"HostBitsMasked", "10.1.2.3/8", []netip.Prefix{p("10.0.0.0/8")}, false},
		{"BlankEntriesSkipped", " , 10.0.0.0/8 ,", []netip.Prefix{p("10.0.0.0/8")}, false},
		{"ErrBadPrefix", "10.0.0.0/99", nil, true},
		{"ErrBadAddress", "proxy.internal", nil, true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := ParseTrustedProxies(tc.in)
			if (err != nil) != tc.err || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParseTrustedProxies(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.err)
			}
		})
	}
}
