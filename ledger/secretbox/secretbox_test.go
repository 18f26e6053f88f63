package secretbox_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/partnertrack/partnertrack/ledger/secretbox"
)

func mustKeyring(t *testing.T, ids ...string) (*secretbox.Keyring, string) {
	t.Helper()
	var parts []string
	for _, id := range ids {
		k, err := secretbox.NewKey(id)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, k)
	}
	spec := strings.Join(parts, ",")
	k, err := secretbox.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	return k, spec
}

// TestSealOpen: a sealed value holds no byte of the secret, differs on
// every seal, opens to the secret, and only for its own purpose.
func TestSealOpen(t *testing.T) {
	k, _ := mustKeyring(t, "k1")
	const secret = "whsec_c2VjcmV0IGJ5dGVz"
	a, err := k.Seal("webhook", secret)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := k.Seal("webhook", secret)
	if !strings.HasPrefix(a, "enc:v1:k1:") || a == b || strings.Contains(a, "c2VjcmV0") {
		t.Fatalf("sealed values %q, %q", a, b)
	}
	if got, err := k.Open("webhook", a); err != nil || got != secret {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if _, err := k.Open("stripe", a); !errors.Is(err, secretbox.ErrOpen) {
		t.Fatalf("opened for another purpose: %v", err)
	}
	tampered := a[:len(a)-4] + "AAA="
	if _, err := k.Open("webhook", tampered); !errors.Is(err, secretbox.ErrOpen) {
		t.Fatalf("opened a tampered value: %v", err)
	}
	if got, err := k.Open("webhook", "whsec_plain"); err != nil || got != "whsec_plain" {
		t.Fatalf("plaintext from before sealing: %q, %v", got, err)
	}
	if !k.Current(a) || k.Current("whsec_plain") {
		t.Fatal("Current")
	}
}

// TestRotateKeys: with a new key first, values sealed with the old key
// still open and new values use the new key; without the old key they
// do not open. The development key always opens.
func TestRotateKeys(t *testing.T) {
	old, oldSpec := mustKeyring(t, "old")
	sealed, _ := old.Seal("p", "whsec_x")
	fresh, _ := secretbox.NewKey("new")
	both, err := secretbox.Parse(fresh + "," + oldSpec)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := both.Open("p", sealed); err != nil || got != "whsec_x" {
		t.Fatalf("old value with both keys: %q, %v", got, err)
	}
	if both.Current(sealed) {
		t.Fatal("a value sealed with the old key is current")
	}
	resealed, _ := both.Seal("p", "whsec_x")
	if !strings.HasPrefix(resealed, "enc:v1:new:") || !both.Current(resealed) {
		t.Fatalf("resealed %q", resealed)
	}
	onlyNew, _ := secretbox.Parse(fresh)
	if _, err := onlyNew.Open("p", sealed); !errors.Is(err, secretbox.ErrOpen) {
		t.Fatalf("old value opened without its key: %v", err)
	}
	dev, _ := secretbox.Dev().Seal("p", "whsec_dev")
	if got, err := onlyNew.Open("p", dev); err != nil || got != "whsec_dev" || !secretbox.Dev().IsDev() || onlyNew.IsDev() {
		t.Fatalf("dev value: %q, %v", got, err)
	}
}

// TestParseRefuses: malformed SECRETS_KEY values are refused without
// repeating the key material.
func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ desc, spec string }{
		{"no id", "c2VjcmV0"},
		{"empty", ""},
		{"short key", "k1:c2hvcnQ="},
		{"not base64", "k1:!!!!"},
		{"bad id", "k 1:" + strings.Repeat("A", 43) + "="},
		{"duplicate id", "k1:" + strings.Repeat("A", 43) + "=,k1:" + strings.Repeat("B", 43) + "="},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := secretbox.Parse(tc.spec)
			if err == nil {
				t.Fatal("accepted")
			}
			if strings.Contains(err.Error(), "AAAA") || strings.Contains(err.Error(), "c2hvcnQ") {
				t.Fatalf("error repeats key material: %v", err)
			}
		})
	}
}
