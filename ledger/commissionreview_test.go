package ledger

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestPlanRejection(t *testing.T) {
	commission := func(status string, credited bool, amount int64) *Commission {
		return &Commission{ID: 9, ProgramID: 1, PartnerID: 4, Currency: EUR, OriginalMinor: 3000,
			AmountMinor: amount, Status: status, Credited: credited}
	}
	paidOut := func(c *Commission) *Commission {
		at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
		c.PaidAt = &at
		return c
	}
	for _, tc := range []struct {
		desc string
		c    *Commission
		want RejectionPlan
		msg  string // "" : admitted
	}{
		{"pending becomes rejected, nothing deducted", commission(CommissionPending, false, 3000),
			RejectionPlan{Status: CommissionRejected}, ""},
		{"approved is reversed with its amount deducted", commission(CommissionApproved, true, 3000),
			RejectionPlan{Status: CommissionReversed, FitWithdrawals: true,
				Deduction: &BalanceDeduction{PartnerID: 4, Currency: EUR, CommissionID: 9, AmountMinor: 3000}}, ""},
		{"approved of 0 is reversed without a deduction", commission(CommissionApproved, true, 0),
			RejectionPlan{Status: CommissionReversed}, ""},
		{"paid is refused", commission(CommissionPaid, true, 3000), RejectionPlan{}, MsgRejectPaid},
		{"rejected is refused", commission(CommissionRejected, false, 0), RejectionPlan{}, MsgRejectRejected},
		{"reversed is refused", commission(CommissionReversed, true, 0), RejectionPlan{}, MsgRejectReversed},
		{"refunded, credited and unpaid is reversed with what is left", commission(CommissionRefunded, true, 1000),
			RejectionPlan{Status: CommissionReversed, FitWithdrawals: true,
				Deduction: &BalanceDeduction{PartnerID: 4, Currency: EUR, CommissionID: 9, AmountMinor: 1000}}, ""},
		{"refunded after payment is refused as paid", paidOut(commission(CommissionRefunded, true, 1000)), RejectionPlan{}, MsgRejectPaid},
		{"refunded and cancelled is refused", commission(CommissionRefunded, false, 0), RejectionPlan{}, MsgRejectRefunded},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := PlanRejection(tc.c)
			if tc.msg != "" {
				if ErrorCode(err) != EConflict || ErrorMessage(err) != tc.msg {
					t.Fatalf("err %v, want conflict %q", err, tc.msg)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestCheckApprovable(t *testing.T) {
	if err := CheckApprovable(&Commission{Status: CommissionPending}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{CommissionApproved, CommissionPaid, CommissionReversed, CommissionRefunded, CommissionRejected} {
		err := CheckApprovable(&Commission{Status: s})
		if ErrorCode(err) != EConflict || ErrorMessage(err) != MsgApproveNotPending+s {
			t.Errorf("%s: %v", s, err)
		}
	}
}

func TestCommissionPayableRejected(t *testing.T) {
	err := CommissionPayable(&Commission{Status: CommissionRejected})
	if ErrorCode(err) != EConflict || ErrorMessage(err) != MsgCommissionRejected {
		t.Fatalf("%v", err)
	}
}

func TestPlanRefundOfRejected(t *testing.T) {
	c := &Commission{ID: 9, Status: CommissionRejected, OriginalMinor: 3000, Currency: USD}
	p := PlanRefund(RefundInput{ProgramID: 1, TransactionID: "t"}, RefundSnapshot{SaleID: 7, ProgramID: 1, SaleAmount: 10000, Commission: c})
	// Skipped for the commission, recorded on the sale (all of it), with no
	// commission change, deduction, notification or webhook.
	if w := p.Write; p.Result.Status != RefundSkipped || p.Result.SkipReason != SkipAlreadyReverse || w == nil ||
		w.Refund.AmountCents != 10000 || w.Refund.DeductionMinor != 0 || w.Commission != nil || w.Deduction != nil ||
		w.Notifications != nil || w.Webhook != nil {
		t.Fatalf("%+v", p)
	}
}

func TestParseRejectReason(t *testing.T) {
	for _, tc := range []struct {
		desc string
		in   Input[string]
		want string
		ok   bool
	}{
		{"OK", Some("fraud"), "fraud", true},
		{"OK trimmed", Some("  self-referral \n"), "self-referral", true},
		{"OK 500 characters", Some(strings.Repeat("é", 500)), strings.Repeat("é", 500), true},
		{"missing", Input[string]{}, "", false},
		{"not a string", BadInput[string](), "", false},
		{"empty", Some(""), "", false},
		{"blank", Some("   "), "", false},
		{"501 characters", Some(strings.Repeat("a", 501)), "", false},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := ParseRejectReason(tc.in)
			if tc.ok != (err == nil) || got != tc.want {
				t.Fatalf("%q, %v", got, err)
			}
			if err != nil && ErrorMessage(err) != MsgRejectReason {
				t.Fatalf("message %q", ErrorMessage(err))
			}
		})
	}
}

func TestCommissionQueryValidate(t *testing.T) {
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	q, err := CommissionQueryInput{Page: Some[int64](2), PageSize: Some[int64](5), Status: Some("rejected"),
		PartnerID: Some[int64](4), DateFrom: Some("2026-01-01")}.Validate(1)
	if err != nil || q.Page != 2 || q.PageSize != 5 || q.Status != "rejected" || *q.PartnerID != 4 || !q.From.Equal(from) || q.To != nil {
		t.Fatalf("%+v %v", q, err)
	}
	q, err = CommissionQueryInput{}.Validate(1)
	if err != nil || q.Page != DefaultEventPage || q.PageSize != DefaultEventPageSize || q.Status != "" {
		t.Fatalf("defaults %+v %v", q, err)
	}
	for _, tc := range []struct {
		desc string
		in   CommissionQueryInput
		msg  string
	}{
		{"page zero", CommissionQueryInput{Page: Some[int64](0)}, MsgEventPage},
		{"pageSize 101", CommissionQueryInput{PageSize: Some[int64](101)}, MsgEventPageSize},
		{"status unknown", CommissionQueryInput{Status: Some("open")}, MsgCommissionStatusFilter},
		{"partner_id zero", CommissionQueryInput{PartnerID: Some[int64](0)}, MsgCommissionPartnerFilter},
		{"partner_id not a number", CommissionQueryInput{PartnerID: BadInput[int64]()}, MsgCommissionPartnerFilter},
		{"dateFrom bad", CommissionQueryInput{DateFrom: Some("yesterday")}, MsgEventDateFrom},
		{"dateTo bad", CommissionQueryInput{DateTo: Some("2026-13-01")}, MsgEventDateTo},
		{"dates reversed", CommissionQueryInput{DateFrom: Some("2026-02-01"), DateTo: Some("2026-01-01")}, MsgEventDateOrder},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := tc.in.Validate(1)
			if ErrorCode(err) != EInvalid || ErrorMessage(err) != tc.msg {
				t.Fatalf("%v, want %q", err, tc.msg)
			}
		})
	}
}

func TestAuditQueryValidate(t *testing.T) {
	q, err := AuditQueryInput{Action: Some("commission.rejected"), SubjectType: Some("commission")}.Validate(3)
	if err != nil || q.ProgramID != 3 || q.Action != "commission.rejected" || q.SubjectType != "commission" || q.PageSize != DefaultEventPageSize {
		t.Fatalf("%+v %v", q, err)
	}
	for _, tc := range []struct {
		in  AuditQueryInput
		msg string
	}{
		{AuditQueryInput{Page: BadInput[int64]()}, MsgEventPage},
		{AuditQueryInput{Action: Some(strings.Repeat("a", 101))}, MsgAuditAction},
		{AuditQueryInput{SubjectType: Some(strings.Repeat("a", 51))}, MsgAuditSubjectType},
	} {
		if _, err := tc.in.Validate(3); ErrorMessage(err) != tc.msg {
			t.Errorf("%+v: %v, want %q", tc.in, err, tc.msg)
		}
	}
}

func TestCommissionReviewEventData(t *testing.T) {
	c := &Commission{ID: 9, ProgramID: 1, PartnerID: 4, SaleID: 7, TransactionID: "txn_9", Currency: USD,
		AmountMinor: 0, Status: CommissionReversed, ApproveAfter: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)}
	raw, err := json.Marshal(NewCommissionRejectedData(c, "fraud", 1205, 1205))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"commission_id":9,"program_id":1,"partner_id":4,"sale_id":7,"transaction_id":"txn_9","status":"reversed",` +
		`"amount":0,"currency":"USD","reason":"fraud","rejected_amount":12.05,"deduction_amount":12.05}`
	if string(raw) != want {
		t.Fatalf("%s\nwant %s", raw, want)
	}
	c.Status, c.AmountMinor = CommissionApproved, 1205
	raw, _ = json.Marshal(NewCommissionApprovedData(c, time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)))
	want = `{"commission_id":9,"program_id":1,"partner_id":4,"sale_id":7,"transaction_id":"txn_9","status":"approved",` +
		`"amount":12.05,"currency":"USD","approve_after":"2026-01-02T00:00:00.000Z","approved_at":"2026-01-01T10:00:00.000Z"}`
	if string(raw) != want {
		t.Fatalf("%s\nwant %s", raw, want)
	}
}

func TestRejectionNotification(t *testing.T) {
	c := &Commission{ID: 9, ProgramID: 1, PartnerID: 4, TransactionID: "txn_9", Currency: USD, Status: CommissionRejected}
	n := RejectionNotification(c, "fraud", 1205, 0)
	if n.PartnerID == nil || *n.PartnerID != 4 || n.WorkspaceID != nil || n.Kind != NoticeCommissionRejected ||
		n.Body != "Your commission #9 (12.05 USD) was rejected by the program (reason: fraud)." ||
		n.Data["amount"] != "12.05" || n.Data["status"] != "rejected" || n.Data["transaction_id"] != nil {
		t.Fatalf("%+v", n)
	}
	c.Status = CommissionReversed
	n = RejectionNotification(c, "fraud", 1205, 1205)
	if n.Body != "Your commission #9 was rejected by the program and reversed: 12.05 USD was deducted from your balance (reason: fraud)." ||
		n.Data["deduction"] != "12.05" {
		t.Fatalf("%+v", n)
	}
}
