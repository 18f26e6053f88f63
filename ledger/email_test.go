package ledger

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestEmailOutboxMessage(t *testing.T) {
	expires := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	invite := PartnerInviteEmail{ProgramName: "Acme", BrandMessage: "Join us", AcceptURL: "https://p.example/invites/abc", ExpiresAt: expires}
	m, err := EmailOutboxMessage("Ann <Ann@Example.com>", invite)
	if err != nil {
		t.Fatal(err)
	}
	if m.TaskType != "email:send" || m.Queue != "emails" || m.ID != 0 {
		t.Fatalf("message = %+v, want task email:send on queue emails without id", m)
	}
	var e Email
	if err := json.Unmarshal(m.Payload, &e); err != nil {
		t.Fatal(err)
	}
	if e.To != "Ann@Example.com" || e.Kind != EmailPartnerInvite {
		t.Fatalf("payload = %+v, want the bare address and kind partner_invite", e)
	}
	d, err := DecodeEmailData(e.Kind, e.Data)
	if err != nil {
		t.Fatal(err)
	}
	if got := *d.(*PartnerInviteEmail); got != invite {
		t.Fatalf("data round trip = %+v, want %+v", got, invite)
	}
}

func TestEmailOutboxMessageRefuses(t *testing.T) {
	ok := ApplicationApprovedEmail{ProgramName: "Acme", PartnerName: "Bob", DashboardURL: "https://p.example/"}
	for _, tc := range []struct {
		desc, to string
		data     EmailData
		want     string
	}{
		{"two recipients", "a@example.com, b@example.com", ok, msgEmailRecipient},
		{"no address", "not an address", ok, msgEmailRecipient},
		{"header injection", "a@example.com\r\nBcc: b@example.com", ok, msgEmailRecipient},
		{"missing program", "a@example.com", ApplicationRejectedEmail{PartnerName: "Bob"}, "program_name is required"},
		{"javascript url", "a@example.com", ApplicationApprovedEmail{ProgramName: "A", PartnerName: "B", DashboardURL: "javascript:alert(1)"}, "dashboard_url must be an absolute http or https URL"},
		{"no expiry", "a@example.com", PartnerInviteEmail{ProgramName: "A", AcceptURL: "https://p.example/i"}, "expires_at is required"},
		{"bad applicant email", "a@example.com", ApplicationReceivedEmail{ProgramName: "A", ApplicantName: "B", ApplicantEmail: "nope", ReviewURL: "https://p.example/r"}, "applicant_email must be one email address"},
		{"long reason", "a@example.com", ApplicationRejectedEmail{ProgramName: "A", PartnerName: "B", Reason: strings.Repeat("x", 5001)}, "reason must be at most 5000 characters"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := EmailOutboxMessage(tc.to, tc.data)
			var le *Error
			if !errors.As(err, &le) || le.Code != EInvalid || !strings.Contains(le.Message, tc.want) {
				t.Fatalf("err = %v, want invalid_request naming %q", err, tc.want)
			}
		})
	}
}

func TestDecodeEmailDataRefuses(t *testing.T) {
	if _, err := DecodeEmailData("password_reset", json.RawMessage(`{}`)); err == nil {
		t.Fatal("unknown kind accepted")
	}
	if _, err := DecodeEmailData(EmailApplicationApproved, json.RawMessage(`{"program_name":"A"}`)); err == nil {
		t.Fatal("data without partner_name and dashboard_url accepted")
	}
	if _, err := DecodeEmailData(EmailApplicationApproved, json.RawMessage(`[`)); err == nil {
		t.Fatal("malformed data accepted")
	}
}
