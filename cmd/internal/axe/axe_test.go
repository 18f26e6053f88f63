package axe

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// TestVendoredChecksum: the vendored file is the one VENDORED.md names.
func TestVendoredChecksum(t *testing.T) {
	sum := sha256.Sum256([]byte(script))
	doc, err := os.ReadFile("VENDORED.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := hex.EncodeToString(sum[:]); !strings.Contains(string(doc), "`axe.min.js`, sha256 `"+want+"`") {
		t.Fatalf("axe.min.js has sha256 %s, which VENDORED.md does not record", want)
	}
}
