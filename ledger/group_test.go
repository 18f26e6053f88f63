package ledger

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// TestPlanSaleGroupTerms: a sale of a partner in a group with a policy
// earns by the policy (amount, hold, recurring duration) and names it; a
// partner of the default group earns by the program's terms.
func TestPlanSaleGroupTerms(t *testing.T) {
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	partner := int64(7)
	prog := program(Percent, "10", USD, 0)
	prog.ID, prog.HoldDays = 1, 30
	cust := &Customer{ID: 40, ProgramID: 1, PartnerID: &partner, Status: FunnelClick}
	sale := Sale{ProgramID: 1, TransactionID: "txn_1", AmountCents: 10000, CustomerKey: "k", OccurredAt: now, Source: SourceAPI}
	policy := func(typ CommissionType, rate string, months, hold int) *CommissionPolicy {
		return &CommissionPolicy{ID: 9, Terms: CommissionTerms{Type: typ, Rate: decimal.RequireFromString(rate), DurationMonths: months, HoldDays: hold}}
	}
	for _, tc := range []struct {
		desc     string
		policy   *CommissionPolicy
		first    *time.Time
		amount   int64
		hold     int
		policyID *int64
		notDue   string
	}{
		{"the default group earns by the program", nil, nil, 1000, 30, nil, ""},
		{"a group's percent and hold", policy(Percent, "20", 0, 3), nil, 2000, 3, ptr(int64(9)), ""},
		{"a group's fixed amount in the program's currency", policy(Fixed, "7.5", 0, 0), nil, 750, 0, ptr(int64(9)), ""},
		{"a group's recurring duration is over", policy(RecurringPercent, "20", 1, 3), ptr(now.AddDate(0, -2, 0)), 0, 0, nil, NotDueDurationOver},
		{"a group's recurring duration still runs", policy(RecurringPercent, "20", 3, 3), ptr(now.AddDate(0, -2, 0)), 2000, 3, ptr(int64(9)), ""},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			c := *cust
			c.FirstPaidAt = tc.first
			p := PlanSale(sale, SaleSnapshot{Program: prog, Customer: &c, Enrolled: true, Policy: tc.policy}, decimal.Zero, now)
			if p.Refusal != nil || p.NotDue != tc.notDue {
				t.Fatalf("refusal %v, not due %q", p.Refusal, p.NotDue)
			}
			if tc.amount == 0 {
				if p.Commission != nil {
					t.Fatalf("commission %+v", p.Commission)
				}
				return
			}
			cm := p.Commission
			if cm == nil || cm.AmountMinor != tc.amount || !cm.ApproveAfter.Equal(now.AddDate(0, 0, tc.hold)) {
				t.Fatalf("commission %+v", cm)
			}
			if (cm.PolicyID == nil) != (tc.policyID == nil) || (cm.PolicyID != nil && *cm.PolicyID != *tc.policyID) {
				t.Fatalf("policy %v, want %v", cm.PolicyID, tc.policyID)
			}
		})
	}
	if prog.CommissionRate.String() != "10" || prog.HoldDays != 30 {
		t.Fatal("planning changed the program")
	}
}

func ptr[T any](v T) *T { return &v }

func TestGroupInput(t *testing.T) {
	base := CommissionTerms{Type: Percent, Rate: decimal.NewFromInt(30), HoldDays: 30}
	t.Run("OK create copies the program's terms", func(t *testing.T) {
		name, terms, err := GroupInput{Name: Some(" VIP "), HoldDays: Some(int64(5))}.ValidateCreate(base)
		if err != nil || name != "VIP" || !terms.Rate.Equal(base.Rate) || terms.Type != Percent || terms.HoldDays != 5 {
			t.Fatalf("%q %+v %v", name, terms, err)
		}
	})
	t.Run("OK type change re-checks the cap", func(t *testing.T) {
		terms, err := GroupInput{CommissionType: Some("fixed"), CommissionRate: Some(decimal.NewFromInt(500))}.ApplyTerms(base)
		if err != nil || terms.Type != Fixed || !terms.Rate.Equal(decimal.NewFromInt(500)) {
			t.Fatalf("%+v %v", terms, err)
		}
	})
	for _, tc := range []struct {
		desc string
		in   GroupInput
		msg  string
	}{
		{"no name", GroupInput{}, MsgGroupName},
		{"long name", GroupInput{Name: Some(strings.Repeat("é", 101))}, MsgGroupName},
		{"bad name", GroupInput{Name: BadInput[string]()}, MsgGroupName},
		{"type", GroupInput{Name: Some("a"), CommissionType: Some("x")}, MsgInvalidCommissionType("x")},
		{"rate", GroupInput{Name: Some("a"), CommissionRate: Some(decimal.Zero)}, MsgCommissionRate},
		{"cap", GroupInput{Name: Some("a"), CommissionRate: Some(decimal.NewFromInt(101))}, MsgCommissionRateCap},
		{"duration", GroupInput{Name: Some("a"), DurationMonths: Some(int64(-1))}, MsgDurationMonths},
		{"hold", GroupInput{Name: Some("a"), HoldDays: Some(int64(400))}, MsgHoldDays},
	} {
		t.Run("Err "+tc.desc, func(t *testing.T) {
			_, _, err := tc.in.ValidateCreate(base)
			var e *Error
			if !errors.As(err, &e) || e.Code != EInvalid || e.Message != tc.msg {
				t.Fatalf("err = %v, want %q", err, tc.msg)
			}
		})
	}
}

func TestPartnerChangeInput(t *testing.T) {
	for _, tc := range []struct {
		desc string
		in   PartnerChangeInput
		msg  string
	}{
		{"nothing", PartnerChangeInput{}, MsgPartnerNoChange},
		{"status removed", PartnerChangeInput{Status: Some("removed")}, MsgPartnerChangeStatus},
		{"group zero", PartnerChangeInput{GroupID: Some(int64(0))}, MsgPartnerGroupID},
		{"group not a number", PartnerChangeInput{GroupID: BadInput[int64]()}, MsgPartnerGroupID},
	} {
		_, err := tc.in.Validate()
		var e *Error
		if !errors.As(err, &e) || e.Message != tc.msg {
			t.Fatalf("%s: %v", tc.desc, err)
		}
	}
	ch, err := PartnerChangeInput{Status: Some("suspended"), GroupID: Some(int64(4))}.Validate()
	if err != nil || ch.Status != EnrollmentSuspended || ch.GroupID != 4 {
		t.Fatalf("%+v %v", ch, err)
	}
}
