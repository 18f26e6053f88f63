package ledger

import (
	"net/url"
	"strings"
	"testing"
)

func TestReferralCode(t *testing.T) {
	for _, tc := range []struct {
		desc, url, code, msg string
	}{
		{"aff", "https://shop.example/landing?aff=pat1", "pat1", ""},
		{"via", "https://shop.example/?via=pat-2", "pat-2", ""},
		{"aff wins over via", "https://shop.example/?via=b&aff=a", "a", ""},
		{"empty aff falls back to via", "https://shop.example/?aff=&via=b", "b", ""},
		{"encoded value", "https://shop.example/?aff=pat%5F3", "pat_3", ""},
		{"stray percent elsewhere", "https://shop.example/?q=100%&aff=pat4", "pat4", ""},
		{"http", "http://localhost:3000/?aff=x", "x", ""},
		{"blank", "   ", "", MsgAffiliateURLRequired},
		{"relative", "/landing?aff=x", "", MsgAffiliateURLInvalid},
		{"no host", "https:///?aff=x", "", MsgAffiliateURLInvalid},
		{"not http", "javascript:alert(1)//?aff=x", "", MsgAffiliateURLInvalid},
		{"garbage", "ht!tp://%%%", "", MsgAffiliateURLInvalid},
		{"too long", "https://shop.example/?aff=x&pad=" + strings.Repeat("a", 9000), "", MsgAffiliateURLInvalid},
		{"no parameter", "https://shop.example/?ref=x", "", MsgNoAffParameter},
		{"parameter in the fragment only", "https://shop.example/#aff=x", "", MsgNoAffParameter},
		{"parameter name is case-sensitive", "https://shop.example/?AFF=x", "", MsgNoAffParameter},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			code, err := ReferralCode(tc.url)
			if tc.msg != "" {
				if ErrorCode(err) != EInvalid || ErrorMessage(err) != tc.msg {
					t.Fatalf("err = %v, want %q", err, tc.msg)
				}
				return
			}
			if err != nil || code != tc.code {
				t.Fatalf("ReferralCode = %q, %v; want %q", code, err, tc.code)
			}
		})
	}
}

func TestClipText(t *testing.T) {
	if got := ClipText("héllo", 2); got != "h" {
		t.Fatalf("cut inside a character: %q", got)
	}
	if got := ClipText("abc", 5); got != "abc" {
		t.Fatalf("short text changed: %q", got)
	}
	if got := ClipText("a\xffb\x00c", 20); got != "a\uFFFDbc" {
		t.Fatalf("invalid UTF-8 and NUL kept: %q", got)
	}
}

func FuzzReferralCode(f *testing.F) {
	for _, s := range []string{"https://a.example/?aff=x", "http://b/?via=%zz&aff=y", "", "::"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		code, err := ReferralCode(s)
		if err == nil && code == "" {
			t.Fatalf("no error and no code for %q", s)
		}
		if err != nil && ErrorCode(err) != EInvalid {
			t.Fatalf("unexpected error kind for %q: %v", s, err)
		}
	})
}

// referenceQueryValue is what ReferralCode read before queryValue: the
// whole query parsed by net/url, or, when a pair does not decode, every
// pair that does.
func referenceQueryValue(raw, name string) string {
	q, err := url.ParseQuery(raw)
	if err != nil {
		q = url.Values{}
		for _, pair := range strings.Split(raw, "&") {
			k, v, _ := strings.Cut(pair, "=")
			k, err1 := url.QueryUnescape(k)
			v, err2 := url.QueryUnescape(v)
			if err1 == nil && err2 == nil {
				q.Add(k, v)
			}
		}
	}
	return q.Get(name)
}

func TestQueryValueMatchesParseQuery(t *testing.T) {
	for _, raw := range []string{"", "aff=x", "aff", "aff=", "=x&aff=y", "aff=%zz&aff=y", "a%66f=x", "af%66=x&aff=y",
		"aff=a+b", "a+ff=x", "aff=x;y", "q=1;aff=x", "q=100%&aff=pat4", "aff=&aff=x", "&&aff=x&", "via=b&aff=a",
		"AFF=x", "aff=x=y", "%=1&aff=2", "aff%3Dx=1", "aff=%E2%82%AC"} {
		for _, name := range []string{ReferralParam, ViaParam} {
			if got, want := queryValue(raw, name), referenceQueryValue(raw, name); got != want {
				t.Errorf("queryValue(%q, %q) = %q, want %q", raw, name, got, want)
			}
		}
	}
}

func FuzzQueryValueMatchesParseQuery(f *testing.F) {
	for _, s := range []string{"aff=x", "q=100%&aff=y", "a%66f=x;z", "via=+&aff=%41"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		for _, name := range []string{ReferralParam, ViaParam} {
			if got, want := queryValue(raw, name), referenceQueryValue(raw, name); got != want {
				t.Fatalf("queryValue(%q, %q) = %q, want %q", raw, name, got, want)
			}
		}
	})
}

// BenchmarkReferralCode reads the code of a tracker's affiliate URL, as
// every click does.
func BenchmarkReferralCode(b *testing.B) {
	const u = "https://shop.example.com/landing?aff=pat_k2j3h4&utm_source=newsletter&utm_medium=email&utm_campaign=spring"
	b.ReportAllocs()
	for b.Loop() {
		if code, err := ReferralCode(u); err != nil || code != "pat_k2j3h4" {
			b.Fatal(code, err)
		}
	}
}
