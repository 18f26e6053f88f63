package ledger

import (
	"regexp"
	"testing"
	"time"
)

func TestClickID(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 30, 0, 123_000_000, time.UTC)
	id := NewClickID(now)
	if !regexp.MustCompile(`^[0-9a-z]{26}$`).MatchString(id) {
		t.Fatalf("click id %q is not 26 lower-case base32 characters", id)
	}
	got, ok := ClickTime(id)
	if !ok || !got.Equal(now.Truncate(time.Millisecond)) {
		t.Fatalf("ClickTime(%q) = %v, %v; want %v", id, got, ok, now)
	}
	if other := NewClickID(now); other == id {
		t.Fatal("two click ids of one millisecond are equal")
	}
	for _, bad := range []string{"", "user_123", "01HZZZZZZZZZZZZZZZZZZZZZZZ!", "8zzzzzzzzzzzzzzzzzzzzzzzzz"} {
		if _, ok := ClickTime(bad); ok {
			t.Errorf("ClickTime(%q) accepted", bad)
		}
	}
}
