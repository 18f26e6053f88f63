package mail

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
)

// hostile is data a brand or applicant typed: markup, quotes and a line
// break that must not reach the HTML part as markup or the subject as a
// second line.
const hostile = "<script>alert(\"x\")</script> & Co\nBcc: victim@example.com"

func TestRenderEachKind(t *testing.T) {
	expires := time.Date(2026, 12, 3, 10, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		data       ledger.EmailData
		subject    string
		text, html []string // substrings each part must hold
	}{{
		data:    ledger.PartnerInviteEmail{ProgramName: hostile, BrandMessage: hostile, AcceptURL: `https://p.example/invites/a?x=1&y="2"`, ExpiresAt: expires},
		subject: "You are invited to the <script>alert(\"x\")</script> & Co Bcc: victim@example.com partner program",
		text:    []string{"3 December 2026 at 10:30 UTC"},
		html:    []string{"3 December 2026 at 10:30 UTC", "Accept the invitation"},
	}, {
		data:    ledger.ApplicationReceivedEmail{ProgramName: hostile, ApplicantName: hostile, ApplicantEmail: "ann@example.com", Message: hostile, ReviewURL: `https://p.example/invites/a?x=1&y="2"`},
		subject: "New application to <script>alert(\"x\")</script> & Co Bcc: victim@example.com from <script>alert(\"x\")</script> & Co Bcc: victim@example.com",
		text:    []string{"<ann@example.com>"},
		html:    []string{"&lt;ann@example.com&gt;", "Review the application"},
	}, {
		data:    ledger.ApplicationApprovedEmail{ProgramName: hostile, PartnerName: hostile, DashboardURL: `https://p.example/invites/a?x=1&y="2"`},
		subject: "Welcome to the <script>alert(\"x\")</script> & Co Bcc: victim@example.com partner program",
		text:    []string{"was approved"},
		html:    []string{"was approved", "Open your dashboard"},
	}, {
		data:    ledger.ApplicationRejectedEmail{ProgramName: hostile, PartnerName: hostile, Reason: hostile},
		subject: "Your application to <script>alert(\"x\")</script> & Co Bcc: victim@example.com",
		text:    []string{"was declined", "The reason given"},
		html:    []string{"was declined", "The reason given"},
	}, {
		data: ledger.CommissionDigestEmail{PartnerName: hostile, Day: "2026-12-02", DashboardURL: `https://p.example/invites/a?x=1&y="2"`,
			Programs: []ledger.DigestProgram{
				{ProgramName: "Acme", Count: 2, Totals: []ledger.DigestAmount{{Currency: "EUR", Amount: "0.99", Words: "€0.99"}, {Currency: "USD", Amount: "1234.50", Words: "$1,234.50"}}},
				{ProgramName: "Zeta", Count: 1, Totals: []ledger.DigestAmount{{Currency: "VND", Amount: "50000", Words: "50,000₫"}}},
			}},
		subject: "Your commissions of 2026-12-02",
		text:    []string{"Acme: 2 commissions, €0.99 + $1,234.50", "Zeta: 1 commission, 50,000₫"},
		html:    []string{"<td>Acme</td><td align=\"right\">2</td><td align=\"right\">€0.99<br>$1,234.50</td>", "Open your dashboard"},
	}} {
		kind := tc.data.EmailKind()
		t.Run(kind, func(t *testing.T) {
			raw, err := json.Marshal(tc.data)
			if err != nil {
				t.Fatal(err)
			}
			m, err := Render(ledger.Email{To: "Ann <ann@example.com>", Kind: kind, Data: raw})
			if err != nil {
				t.Fatal(err)
			}
			if m.To != "ann@example.com" {
				t.Errorf("to = %q, want the bare address", m.To)
			}
			if m.Subject != tc.subject {
				t.Errorf("subject = %q, want %q", m.Subject, tc.subject)
			}
			// The text part holds the data as typed; the HTML part holds
			// it escaped and never as markup.
			for _, want := range append(tc.text, hostile) {
				if !strings.Contains(m.Text, want) {
					t.Errorf("text part lacks %q:\n%s", want, m.Text)
				}
			}
			for _, want := range append(tc.html, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; Co") {
				if !strings.Contains(m.HTML, want) {
					t.Errorf("HTML part lacks %q:\n%s", want, m.HTML)
				}
			}
			if strings.Contains(m.HTML, "<script>") {
				t.Errorf("HTML part holds the data as markup:\n%s", m.HTML)
			}
			if strings.Contains(m.Text, "&lt;") || strings.Contains(m.Text, "&amp;") {
				t.Errorf("text part is HTML-escaped:\n%s", m.Text)
			}
			if kind != ledger.EmailApplicationRejected {
				// The link keeps its query: escaped in the HTML attribute,
				// as given in the text part.
				if !strings.Contains(m.HTML, `href="https://p.example/invites/a?x=1&amp;y=%222%22"`) {
					t.Errorf("HTML part lacks the escaped link:\n%s", m.HTML)
				}
				if !strings.Contains(m.Text, `https://p.example/invites/a?x=1&y="2"`) {
					t.Errorf("text part lacks the link as given:\n%s", m.Text)
				}
			}
		})
	}
}

func TestRenderEveryKindHasTemplates(t *testing.T) {
	for _, kind := range ledger.EmailKinds {
		for _, name := range []string{kind + ".subject", kind + ".txt"} {
			if textTemplates.Lookup(name) == nil {
				t.Errorf("no text template %s", name)
			}
		}
		if htmlTemplates.Lookup(kind+".html") == nil {
			t.Errorf("no HTML template %s.html", kind)
		}
	}
}

func TestRenderRefuses(t *testing.T) {
	for _, e := range []ledger.Email{
		{To: "ann@example.com", Kind: "password_reset", Data: json.RawMessage(`{}`)},
		{To: "ann@example.com", Kind: ledger.EmailApplicationApproved, Data: json.RawMessage(`{"program_name":"A"}`)},
		{To: "two@example.com, three@example.com", Kind: ledger.EmailApplicationRejected, Data: json.RawMessage(`{"program_name":"A","partner_name":"B"}`)},
	} {
		if m, err := Render(e); err == nil {
			t.Errorf("Render(%+v) = %+v, want an error", e, m)
		}
	}
}
