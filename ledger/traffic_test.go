package ledger

import (
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
