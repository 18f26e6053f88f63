package ledger

import (
	"math"
	"testing"

	"github.com/shopspring/decimal"
)

func validInput() ProgramInput {
	return ProgramInput{
		Name:           Some("Acme"),
		Domain:         Some("acme.example"),
		CommissionType: Some("percent"),
		CommissionRate: Some(decimal.NewFromInt(30)),
	}
}

func TestProgramInputValidateCreate(t *testing.T) {
	t.Run("OK with defaults", func(t *testing.T) {
		p, err := validInput().ValidateCreate()
		if err != nil {
			t.Fatal(err)
		}
		if p.CookieDuration != 90 || p.HoldDays != 30 || p.Currency != USD || p.LeadAuth != LeadServerRequired || p.DurationMonths != 0 {
			t.Fatalf("defaults not applied: %+v", p)
		}
	})

	t.Run("OK long durations", func(t *testing.T) {
		for _, months := range []int64{1201, math.MaxInt32} {
			in := validInput()
			in.DurationMonths = Some(months)
			p, err := in.ValidateCreate()
			if err != nil || int64(p.DurationMonths) != months {
				t.Fatalf("duration_months %d: %+v, %v", months, p, err)
			}
		}
	})

	for _, tc := range []struct {
		desc   string
		change func(*ProgramInput)
		want   string
	}{
		{"missing name", func(in *ProgramInput) { in.Name = Input[string]{} }, MsgProgramMissingFields},
		{"missing rate", func(in *ProgramInput) { in.CommissionRate = Input[decimal.Decimal]{} }, MsgProgramMissingFields},
		{"unknown type", func(in *ProgramInput) { in.CommissionType = Some("bounty") },
			"Invalid commission_type: bounty. Valid: percent, fixed, recurring_percent, recurring_fixed"},
		{"type before rate", func(in *ProgramInput) {
			in.CommissionType = Some("bounty")
			in.CommissionRate = BadInput[decimal.Decimal]()
		}, "Invalid commission_type: bounty. Valid: percent, fixed, recurring_percent, recurring_fixed"},
		{"zero rate", func(in *ProgramInput) { in.CommissionRate = Some(decimal.Zero) }, MsgCommissionRate},
		{"rate not a number", func(in *ProgramInput) { in.CommissionRate = BadInput[decimal.Decimal]() }, MsgCommissionRate},
		{"percent over 100", func(in *ProgramInput) { in.CommissionRate = Some(decimal.RequireFromString("100.01")) }, MsgCommissionRateCap},
		{"recurring percent over 100", func(in *ProgramInput) {
			in.CommissionType = Some("recurring_percent")
			in.CommissionRate = Some(decimal.NewFromInt(101))
		}, MsgCommissionRateCap},
		{"negative duration", func(in *ProgramInput) { in.DurationMonths = Some[int64](-1) }, MsgDurationMonths},
		{"fractional duration", func(in *ProgramInput) { in.DurationMonths = BadInput[int64]() }, MsgDurationMonths},
		{"duration beyond the column", func(in *ProgramInput) { in.DurationMonths = Some[int64](math.MaxInt32 + 1) }, MsgDurationMonths},
		{"cookie zero", func(in *ProgramInput) { in.CookieDuration = Some[int64](0) }, MsgCookieDuration},
		{"cookie 366", func(in *ProgramInput) { in.CookieDuration = Some[int64](366) }, MsgCookieDuration},
		{"lead auth", func(in *ProgramInput) { in.LeadAuth = Some("maybe") }, MsgLeadAuth},
		{"currency", func(in *ProgramInput) { in.Currency = Some("GBP") }, MsgProgramCurrency},
		{"domain", func(in *ProgramInput) { in.Domain = Some("not a domain") }, MsgProgramDomain},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			in := validInput()
			tc.change(&in)
			_, err := in.ValidateCreate()
			if ErrorCode(err) != EInvalid || ErrorMessage(err) != tc.want {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}

	t.Run("fixed over 100 is fine", func(t *testing.T) {
		in := validInput()
		in.CommissionType = Some("fixed")
		in.CommissionRate = Some(decimal.NewFromInt(250))
		if _, err := in.ValidateCreate(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestApplyUpdateChecksCapAgainstResult(t *testing.T) {
	p, err := ProgramInput{
		Name: Some("A"), Domain: Some("a.example"),
		CommissionType: Some("fixed"), CommissionRate: Some(decimal.NewFromInt(150)),
	}.ValidateCreate()
	if err != nil {
		t.Fatal(err)
	}
	err = ProgramInput{CommissionType: Some("percent")}.ApplyUpdate(&p)
	if ErrorMessage(err) != MsgCommissionRateCap {
		t.Fatalf("got %v, want the cap message", err)
	}
	if p.CommissionType != Fixed {
		t.Fatalf("a refused update changed the program: %+v", p)
	}
}

func TestNormalizeDomain(t *testing.T) {
	for in, want := range map[string]string{
		"Example.COM":                      "example.com",
		"https://shop.example.com/pricing": "shop.example.com",
		"example.com:8443":                 "example.com",
		"localhost":                        "localhost",
	} {
		if got, ok := NormalizeDomain(in); !ok || got != want {
			t.Errorf("NormalizeDomain(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "exa mple.com", "-bad.com", "a..b", "ex_ample.com"} {
		if _, ok := NormalizeDomain(bad); ok {
			t.Errorf("NormalizeDomain(%q) accepted", bad)
		}
	}
}
