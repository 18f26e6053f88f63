package ledger

import (
	"strings"
	"testing"

	"github.com/shopspring/decimal"
)

func TestCommissionWords(t *testing.T) {
	for _, tc := range []struct {
		desc   string
		typ    CommissionType
		rate   string
		months int
		cur    Currency
		want   string
	}{
		{"recurring percent", RecurringPercent, "20", 12, USD, "20% of every sale for 12 months"},
		{"recurring percent one month", RecurringPercent, "7.5", 1, EUR, "7.5% of every sale for 1 month"},
		{"recurring percent lifetime", RecurringPercent, "10", 0, USD, "10% of every sale for the customer's lifetime"},
		{"one-time percent", Percent, "30", 0, USD, "30% of the first sale of each referred customer"},
		{"fixed USD", Fixed, "5", 0, USD, "$5.00 for the first sale of each referred customer"},
		{"recurring fixed EUR", RecurringFixed, "1234.5", 6, EUR, "€1,234.50 per sale for 6 months"},
		{"recurring fixed VND", RecurringFixed, "50000", 0, VND, "50,000₫ per sale for the customer's lifetime"},
	} {
		p := PublicProgram{CommissionType: tc.typ, CommissionRate: decimal.RequireFromString(tc.rate), DurationMonths: tc.months, Currency: tc.cur}
		if got := p.CommissionWords(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.desc, got, tc.want)
		}
	}
	for in, want := range map[string]string{"0": "$0.00", "999": "$999.00", "1000": "$1,000.00", "1234567.891": "$1,234,567.89"} {
		if got := MoneyWords(decimal.RequireFromString(in), USD); got != want {
			t.Errorf("MoneyWords(%s) = %q, want %q", in, got, want)
		}
	}
	if got := MoneyWords(decimal.RequireFromString("1234567"), VND); got != "1,234,567₫" {
		t.Errorf("VND = %q", got)
	}
}

func TestValidateSlug(t *testing.T) {
	for _, tc := range []struct {
		slug string
		msg  string
	}{
		{"acme", ""},
		{"acme-partners-2026", ""},
		{"program-7", ""}, // the program's own default
		{"program-x", ""},
		{"ab", MsgSlug},
		{strings.Repeat("a", 61), MsgSlug},
		{"Acme", MsgSlug},
		{"acme_partners", MsgSlug},
		{"acme partners", MsgSlug},
		{"program-8", MsgSlugReserved},
		{"program-007", MsgSlugReserved},
	} {
		err := ValidateSlug(tc.slug, 7)
		if got := ErrorMessage(err); (tc.msg == "" && err != nil) || (tc.msg != "" && got != tc.msg) {
			t.Errorf("%q: %v", tc.slug, err)
		}
	}
}

func TestInviteRequestValidate(t *testing.T) {
	many := make([]string, 51)
	for i := range many {
		many[i] = "p" + strings.Repeat("x", i) + "@partner.example"
	}
	for _, tc := range []struct {
		desc string
		in   InviteRequestInput
		msg  string
	}{
		{"OK", InviteRequestInput{Emails: Some([]string{"A@B.example"})}, ""},
		{"OK 50", InviteRequestInput{Emails: Some(many[:50])}, ""},
		{"ErrTooMany", InviteRequestInput{Emails: Some(many)}, MsgInviteEmails},
		{"ErrShape", InviteRequestInput{Emails: BadInput[[]string]()}, MsgInviteEmails},
		{"ErrEmail", InviteRequestInput{Emails: Some([]string{"a@b.example", "nope"})}, MsgInviteEmail(1)},
		{"ErrPartnerIDs", InviteRequestInput{PartnerIDs: Some([]int64{0})}, MsgInvitePartnerIDs},
		{"ErrNobody", InviteRequestInput{Emails: Some([]string{})}, MsgInviteNobody},
		{"OK 50 together", InviteRequestInput{Emails: Some(many[:40]), PartnerIDs: Some([]int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10})}, ""},
		{"ErrTooManyTogether", InviteRequestInput{Emails: Some(many[:40]), PartnerIDs: Some([]int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})}, MsgInviteTooMany},
		{"ErrGroup", InviteRequestInput{PartnerIDs: Some([]int64{3}), GroupID: Some[int64](-1)}, MsgGroupID},
		{"ErrMessage", InviteRequestInput{PartnerIDs: Some([]int64{3}), Message: Some(strings.Repeat("é", 1001))}, MsgInviteMessage},
	} {
		_, err := tc.in.Validate(1)
		if got := ErrorMessage(err); (tc.msg == "" && err != nil) || (tc.msg != "" && got != tc.msg) {
			t.Errorf("%s: %v", tc.desc, err)
		}
	}
}

func TestApplicationValidate(t *testing.T) {
	ok := ApplicationInput{Name: Some(" Cat "), Email: Some("Cat@Partner.example")}
	r, err := ok.Validate()
	if err != nil || r.Name != "Cat" || r.Email != "cat@partner.example" {
		t.Fatalf("%+v, %v", r, err)
	}
	for _, tc := range []struct {
		desc string
		in   ApplicationInput
		msg  string
	}{
		{"ErrName", ApplicationInput{Email: Some("a@b.example")}, MsgApplicationName},
		{"ErrEmail", ApplicationInput{Name: Some("A"), Email: Some("nope")}, MsgEmail},
		{"ErrMessage", ApplicationInput{Name: Some("A"), Email: Some("a@b.example"), Message: Some(strings.Repeat("a", 1001))}, MsgApplicationMessage},
		{"ErrWebsite", ApplicationInput{Name: Some("A"), Email: Some("a@b.example"), Website: Some("javascript:alert(1)")}, MsgApplicationWebsite},
	} {
		if _, err := tc.in.Validate(); ErrorMessage(err) != tc.msg {
			t.Errorf("%s: %v", tc.desc, err)
		}
	}
	if _, err := ValidateReason(Some(strings.Repeat("a", 1001))); ErrorMessage(err) != MsgApplicationReason {
		t.Errorf("reason: %v", err)
	}
}

func TestNewLinkCode(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		c := NewLinkCode()
		if len(c) != 10 || !ValidLinkCode(c) || strings.Trim(c, "abcdefghijklmnopqrstuvwxyz0123456789") != "" || seen[c] {
			t.Fatalf("code %q", c)
		}
		seen[c] = true
	}
	if tok := NewInviteToken(); len(tok) != 43 || NewInviteToken() == tok {
		t.Fatalf("token %q", tok)
	}
}
