package mail

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
)

func TestRenderPayoutPaid(t *testing.T) {
	raw, err := json.Marshal(ledger.PayoutPaidEmail{ProgramName: hostile, PartnerName: "Pat", Amount: "120.50 USD",
		ExternalReference: "PP-<1>", PaidAt: time.Date(2026, 12, 3, 10, 30, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	m, err := Render(ledger.Email{To: "pat@partner.example", Kind: ledger.EmailPayoutPaid, Data: raw})
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(m.Subject, "\n") || !strings.Contains(m.Subject, "120.50 USD was paid") {
		t.Fatalf("subject %q", m.Subject)
	}
	for _, want := range []string{"120.50 USD", "3 December 2026 at 10:30 UTC", "PP-<1>", hostile} {
		if !strings.Contains(m.Text, want) {
			t.Errorf("text part lacks %q:\n%s", want, m.Text)
		}
	}
	if strings.Contains(m.HTML, "<script>") || strings.Contains(m.HTML, "PP-<1>") || !strings.Contains(m.HTML, "PP-&lt;1&gt;") {
		t.Errorf("HTML part not escaped:\n%s", m.HTML)
	}
}
