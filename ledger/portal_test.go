package ledger

import (
	"testing"

	"github.com/shopspring/decimal"
)

func TestParseMinimumPayout(t *testing.T) {
	for _, c := range []struct {
		desc string
		in   Input[decimal.Decimal]
		cur  Currency
		want string // "" for refused
	}{
		{"OKCents", Some(decimal.RequireFromString("75.50")), USD, "75.5"},
		{"OKZero", Some(decimal.Zero), EUR, "0"},
		{"OKMax", Some(decimal.New(1, 12)), USD, "1000000000000"},
		{"OKWholeDong", Some(decimal.RequireFromString("50000")), VND, "50000"},
		{"ErrThirdDecimal", Some(decimal.RequireFromString("1.005")), USD, ""},
		{"ErrDongDecimal", Some(decimal.RequireFromString("50.5")), VND, ""},
		{"ErrNegative", Some(decimal.RequireFromString("-0.01")), USD, ""},
		{"ErrOverMax", Some(decimal.RequireFromString("1000000000000.01")), USD, ""},
		{"ErrNotANumber", BadInput[decimal.Decimal](), USD, ""},
	} {
		t.Run(c.desc, func(t *testing.T) {
			got, err := ParseMinimumPayout(c.in, c.cur)
			if c.want == "" {
				if ErrorCode(err) != EInvalid || ErrorMessage(err) != MsgMinimumPayout(c.cur) {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err != nil || got.String() != c.want {
				t.Fatalf("got %s, %v", got, err)
			}
		})
	}
	if m := MsgMinimumPayout(VND); m != "minimum_payout must be a number from 0 to 1000000000000 without decimals (the smallest unit of VND)" {
		t.Fatalf("VND message %q", m)
	}
}

func TestPartnerLinkRule(t *testing.T) {
	for _, c := range []struct {
		desc   string
		on     bool
		status string
		msg    string
	}{
		{"OKActive", true, EnrollmentActive, ""},
		{"ErrSettingOff", false, EnrollmentActive, MsgPartnerLinksOff},
		{"ErrSuspended", true, EnrollmentSuspended, MsgPartnerLinksInactive},
		{"ErrRemoved", true, EnrollmentRemoved, MsgPartnerLinksInactive},
	} {
		t.Run(c.desc, func(t *testing.T) {
			err := PartnerLinkRule(c.on, c.status)
			if c.msg == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if ErrorCode(err) != EForbidden || ErrorMessage(err) != c.msg {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestPartnerCommissionQuery(t *testing.T) {
	q, err := PartnerCommissionQueryInput{}.Validate(7)
	if err != nil || q.PartnerID != 7 || q.Page != 1 || q.PageSize != DefaultEventPageSize || q.ProgramID != nil || q.Status != "" {
		t.Fatalf("defaults %+v %v", q, err)
	}
	q, err = PartnerCommissionQueryInput{Page: Some(int64(3)), PageSize: Some(int64(20)), ProgramID: Some(int64(12)), Status: Some("approved")}.Validate(7)
	if err != nil || *q.ProgramID != 12 || q.Status != "approved" || q.Offset() != 40 {
		t.Fatalf("filters %+v %v", q, err)
	}
	for _, c := range []struct {
		desc string
		in   PartnerCommissionQueryInput
		msg  string
	}{
		{"ErrPage", PartnerCommissionQueryInput{Page: Some(int64(0))}, MsgEventPage},
		{"ErrPageSize", PartnerCommissionQueryInput{PageSize: Some(int64(101))}, MsgEventPageSize},
		{"ErrProgram", PartnerCommissionQueryInput{ProgramID: BadInput[int64]()}, MsgPortalProgramFilter},
		{"ErrStatus", PartnerCommissionQueryInput{Status: Some("won")}, MsgCommissionStatusFilter},
	} {
		t.Run(c.desc, func(t *testing.T) {
			if _, err := c.in.Validate(7); ErrorCode(err) != EInvalid || ErrorMessage(err) != c.msg {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestPortalParams(t *testing.T) {
	if n, err := ValidateNotificationLimit(Input[int64]{}); err != nil || n != DefaultPortalNotifications {
		t.Fatalf("default limit %d %v", n, err)
	}
	if n, err := ValidateNotificationLimit(Some(int64(100))); err != nil || n != 100 {
		t.Fatalf("limit 100: %d %v", n, err)
	}
	for _, in := range []Input[int64]{Some(int64(0)), Some(int64(101)), BadInput[int64]()} {
		if _, err := ValidateNotificationLimit(in); ErrorMessage(err) != MsgPortalNotificationsMax {
			t.Fatalf("limit %+v: %v", in, err)
		}
	}
	if s, err := ValidatePortalSlug(Some(" acme-pro ")); err != nil || s != "acme-pro" {
		t.Fatalf("slug %q %v", s, err)
	}
	for _, in := range []Input[string]{{}, Some("  "), BadInput[string]()} {
		if _, err := ValidatePortalSlug(in); ErrorMessage(err) != MsgPortalSlug {
			t.Fatalf("slug %+v: %v", in, err)
		}
	}
}
