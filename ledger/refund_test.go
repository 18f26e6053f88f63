package ledger

import (
	"strings"
	"testing"
)

func TestRefundValidate(t *testing.T) {
	ok := func() RefundRequest { return RefundRequest{ProgramID: 3, TransactionID: Some("txn_1")} }
	for _, tc := range []struct {
		desc string
		edit func(r *RefundRequest)
		want RefundInput
		msg  string
	}{
		{"OKAllLeft", func(r *RefundRequest) {}, RefundInput{ProgramID: 3, TransactionID: "txn_1", Source: SourceAPI}, ""},
		{"OKPartial", func(r *RefundRequest) {
			r.RefundAmountCents, r.RefundID, r.Reason = Some(int64(250)), Some("re_1"), Some("chargeback")
		}, RefundInput{ProgramID: 3, TransactionID: "txn_1", AmountCents: 250, RefundID: "re_1", Reason: "chargeback", Source: SourceAPI}, ""},
		{"RefundReasonWins", func(r *RefundRequest) { r.Reason, r.RefundReason = Some("refund"), Some("customer asked") },
			RefundInput{ProgramID: 3, TransactionID: "txn_1", Reason: "customer asked", Source: SourceAPI}, ""},
		{"EmptyRefundReasonFallsBack", func(r *RefundRequest) { r.Reason, r.RefundReason = Some("refund"), Some("  ") },
			RefundInput{ProgramID: 3, TransactionID: "txn_1", Reason: "refund", Source: SourceAPI}, ""},
		{"RefundIDIgnoredWithoutAmount", func(r *RefundRequest) { r.RefundAmountCents, r.RefundID = Some(int64(0)), Some("re_1") },
			RefundInput{ProgramID: 3, TransactionID: "txn_1", Source: SourceAPI}, ""},
		{"BadRefundIDIgnoredWithoutAmount", func(r *RefundRequest) { r.RefundID = BadInput[string]() },
			RefundInput{ProgramID: 3, TransactionID: "txn_1", Source: SourceAPI}, ""},
		{"ErrTransactionIDMissing", func(r *RefundRequest) { r.TransactionID = Input[string]{} }, RefundInput{}, MsgRefundTransactionID},
		{"ErrTransactionIDNumber", func(r *RefundRequest) { r.TransactionID = BadInput[string]() }, RefundInput{}, MsgRefundTransactionID},
		{"ErrTransactionIDEmpty", func(r *RefundRequest) { r.TransactionID = Some("") }, RefundInput{}, MsgRefundTransactionID},
		{"ErrAmountNegative", func(r *RefundRequest) { r.RefundAmountCents = Some(int64(-1)) }, RefundInput{}, MsgRefundAmount},
		{"ErrAmountFraction", func(r *RefundRequest) { r.RefundAmountCents = BadInput[int64]() }, RefundInput{}, MsgRefundAmount},
		{"ErrRefundID", func(r *RefundRequest) { r.RefundAmountCents, r.RefundID = Some(int64(100)), Some("") }, RefundInput{}, MsgRefundID},
		{"ErrRefundIDNumber", func(r *RefundRequest) { r.RefundAmountCents, r.RefundID = Some(int64(100)), BadInput[string]() }, RefundInput{}, MsgRefundID},
		{"ErrReason", func(r *RefundRequest) { r.Reason = Some("fraud") }, RefundInput{}, MsgRefundReason},
		{"ErrReasonNumber", func(r *RefundRequest) { r.Reason = BadInput[string]() }, RefundInput{}, MsgRefundReason},
		{"ErrRefundReasonTooLong", func(r *RefundRequest) { r.RefundReason = Some(strings.Repeat("x", 1001)) }, RefundInput{}, MsgRefundReasonText},
		{"ErrTransactionIDFirst", func(r *RefundRequest) { r.TransactionID = Input[string]{}; r.Reason = Some("x") }, RefundInput{}, MsgRefundTransactionID},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			r := ok()
			tc.edit(&r)
			got, err := r.Validate()
			if tc.msg != "" {
				if ErrorCode(err) != EInvalid || ErrorMessage(err) != tc.msg {
					t.Fatalf("err = %v, want %q", err, tc.msg)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Validate = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestRefundShareOf(t *testing.T) {
	pending := CommissionState{Status: CommissionPending, OriginalMinor: 3000, AmountMinor: 3000}
	approved := CommissionState{Status: CommissionApproved, OriginalMinor: 3000, AmountMinor: 3000, Credited: true}
	for _, tc := range []struct {
		desc                  string
		c                     CommissionState
		sale, before, applied int64
		status                string
		amount, deduction     int64
		debit                 bool
	}{
		{"pending full", pending, 10000, 0, 10000, CommissionReversed, 0, 3000, false},
		{"approved full", approved, 10000, 0, 10000, CommissionReversed, 0, 3000, true},
		{"pending partial cancels whole", pending, 10000, 0, 2500, CommissionRefunded, 0, 750, false},
		{"approved partial reduces by fraction", approved, 10000, 0, 2500, CommissionRefunded, 2250, 750, true},
		{"approved rest after partial is everything left", CommissionState{Status: CommissionRefunded, OriginalMinor: 3000, AmountMinor: 2250, Credited: true}, 10000, 2500, 7500, CommissionReversed, 0, 2250, true},
		{"cancelled commission fully covered leaves nothing", CommissionState{Status: CommissionRefunded, OriginalMinor: 3000, AmountMinor: 0}, 10000, 2500, 7500, CommissionReversed, 0, 0, false},
		{"paid partial", CommissionState{Status: CommissionPaid, OriginalMinor: 3000, AmountMinor: 3000, Credited: true}, 10000, 0, 5000, CommissionRefunded, 1500, 1500, true},
		// Thirds of an odd amount: each share rounds on the cumulative
		// refund, so the three shares add up to the commission exactly.
		{"USD third 1", CommissionState{Status: CommissionApproved, OriginalMinor: 1001, AmountMinor: 1001, Credited: true}, 3000, 0, 1000, CommissionRefunded, 667, 334, true},
		{"USD third 2", CommissionState{Status: CommissionRefunded, OriginalMinor: 1001, AmountMinor: 667, Credited: true}, 3000, 1000, 1000, CommissionRefunded, 334, 333, true},
		{"USD third 3", CommissionState{Status: CommissionRefunded, OriginalMinor: 1001, AmountMinor: 334, Credited: true}, 3000, 2000, 1000, CommissionReversed, 0, 334, true},
		{"EUR odd cents half-up", CommissionState{Status: CommissionApproved, OriginalMinor: 999, AmountMinor: 999, Credited: true}, 2000, 0, 1001, CommissionRefunded, 499, 500, true},        // 499.9995
		{"VND dong half-up", CommissionState{Status: CommissionApproved, OriginalMinor: 45000, AmountMinor: 45000, Credited: true}, 300000, 0, 100010, CommissionRefunded, 29998, 15002, true}, // 15001.5
		{"VND pending informational", CommissionState{Status: CommissionPending, OriginalMinor: 7, AmountMinor: 7}, 3, 0, 1, CommissionRefunded, 0, 2, false},                                  // 2.33
	} {
		t.Run(tc.desc, func(t *testing.T) {
			p := RefundShareOf(tc.c, tc.sale, tc.before, tc.applied)
			want := RefundShare{Status: tc.status, AmountMinor: tc.amount, DeductionMinor: tc.deduction, Debit: tc.debit}
			if p != want {
				t.Fatalf("RefundShareOf = %+v, want %+v", p, want)
			}
		})
	}
}

func TestFitWithdrawals(t *testing.T) {
	for _, tc := range []struct {
		desc    string
		balance int64
		open    []int64
		want    []int64
	}{
		{"fits", 1000, []int64{300, 700}, []int64{300, 700}},
		{"newest lowered first", 800, []int64{300, 700}, []int64{100, 700}},
		{"newest cancelled, next lowered", 500, []int64{300, 700}, []int64{0, 500}},
		{"negative balance cancels all", -250, []int64{300, 700}, []int64{0, 0}},
		{"none open", -1, nil, []int64{}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got := FitWithdrawals(tc.balance, tc.open)
			if len(got) != len(tc.want) {
				t.Fatalf("FitWithdrawals = %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("FitWithdrawals = %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestRefundNotifications(t *testing.T) {
	base := RefundNotice{CommissionID: 9, PartnerID: 4, WorkspaceID: 2, ProgramID: 1, TransactionID: "txn_9",
		Status: CommissionRefunded, DeductionMinor: 1050, AmountMinor: 1950, Currency: USD, Reason: "chargeback"}
	ns := RefundNotifications(base)
	if len(ns) != 1 || *ns[0].PartnerID != 4 || ns[0].WorkspaceID != nil || ns[0].Kind != NoticeCommissionRefunded ||
		!strings.Contains(ns[0].Body, "reduced by 10.50 USD to 19.50 USD") || !strings.Contains(ns[0].Body, "chargeback") ||
		strings.Contains(ns[0].Body, "txn_9") || ns[0].Data["transaction_id"] != nil {
		t.Fatalf("partner notification = %+v", ns)
	}
	base.Status, base.PaidOut, base.Currency, base.DeductionMinor = CommissionReversed, true, VND, 25000
	ns = RefundNotifications(base)
	if len(ns) != 2 || ns[0].Kind != NoticeCommissionReversed || ns[1].Kind != NoticeManualReview ||
		*ns[1].WorkspaceID != 2 || ns[1].PartnerID != nil || !strings.Contains(ns[1].Body, "25000 VND") ||
		ns[1].Data["transaction_id"] != "txn_9" || ns[0].Data["transaction_id"] != nil {
		t.Fatalf("notifications of a paid-out commission = %+v", ns)
	}
}
