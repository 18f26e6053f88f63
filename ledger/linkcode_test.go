package ledger

import (
	"regexp"
	"strings"
	"testing"
)

// linkCodeRule is the rule MsgLinkCode states, as a regexp: the reference
// ValidLinkCode is held to.
var linkCodeRule = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func TestValidLinkCode(t *testing.T) {
	for _, tc := range []struct {
		code string
		want bool
	}{
		{"pat1", true},
		{"A-z_09", true},
		{strings.Repeat("x", 64), true},
		{"", false},
		{strings.Repeat("x", 65), false},
		{"pat 1", false},
		{"pat1\n", false},
		{"pät", false},
		{"pat.1", false},
		{"pat/1", false},
	} {
		if got := ValidLinkCode(tc.code); got != tc.want {
			t.Errorf("ValidLinkCode(%q) = %v, want %v", tc.code, got, tc.want)
		}
	}
}

// FuzzValidLinkCodeMatchesRule: the loop accepts exactly what the rule's
// regexp accepts.
func FuzzValidLinkCodeMatchesRule(f *testing.F) {
	for _, s := range []string{"pat1", "", "a-b_c", strings.Repeat("z", 64), strings.Repeat("z", 65), "a\n", "\xff", "é", "a b", "[", "`"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ValidLinkCode(s), linkCodeRule.MatchString(s); got != want {
			t.Fatalf("ValidLinkCode(%q) = %v, the rule says %v", s, got, want)
		}
	})
}

func BenchmarkValidLinkCode(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if !ValidLinkCode("pat1_newsletter-2026") {
			b.Fatal("valid code refused")
		}
	}
}

// BenchmarkLinkCodeRule is the regexp ValidLinkCode replaced, for
// comparison.
func BenchmarkLinkCodeRule(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if !linkCodeRule.MatchString("pat1_newsletter-2026") {
			b.Fatal("valid code refused")
		}
	}
}
