package ledger

import (
	"strings"
	"testing"
	"time"
)

func TestNewProgramKey(t *testing.T) {
	plain, hash, masked := NewProgramKey(LiveKey)
	if !strings.HasPrefix(plain, "aff_") || strings.HasPrefix(plain, "aff_test_") {
		t.Fatalf("live key %q lacks the aff_ prefix", plain)
	}
	if len(plain)-len("aff_") < 32 { // 32 base32 characters = 160 bits
		t.Fatalf("key %q carries fewer than 160 random bits", plain)
	}
	if string(hash) != string(HashSecret(plain)) {
		t.Fatal("hash is not the SHA-256 of the key")
	}
	if masked != "aff_****"+plain[len(plain)-4:] {
		t.Fatalf("masked = %q", masked)
	}
	test, _, testMasked := NewProgramKey(TestKey)
	if !strings.HasPrefix(test, "aff_test_") || !strings.HasPrefix(testMasked, "aff_test_****") {
		t.Fatalf("test key %q masked %q", test, testMasked)
	}
	other, _, _ := NewProgramKey(LiveKey)
	if other == plain {
		t.Fatal("two keys are equal")
	}
}

func TestProgramKeyRotation(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	marked, deadline := now.Add(-time.Hour), now.Add(time.Hour)
	k := &ProgramKey{MarkedAt: &marked, Deadline: &deadline}
	if !k.Marked() || k.Retired(now) {
		t.Fatal("key before its deadline must be marked, not retired")
	}
	if !k.Retired(deadline) {
		t.Fatal("key at its deadline must be retired")
	}
	if (&ProgramKey{}).Marked() {
		t.Fatal("unmarked key reported marked")
	}
}
