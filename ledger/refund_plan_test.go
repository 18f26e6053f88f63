package ledger

import (
	"reflect"
	"testing"
	"time"
)

// TestPlanRefund covers every row of the spec's refund state table
// ("Commission, on a refund call"), every skip rule and the cap, on
// snapshots as the store reads them.
func TestPlanRefund(t *testing.T) {
	paidAt := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	commission := func(status string, credited bool, amount int64) *Commission {
		return &Commission{ID: 9, ProgramID: 1, PartnerID: 4, SaleID: 7, TransactionID: "txn_9", Currency: USD,
			OriginalMinor: 3000, AmountMinor: amount, Status: status, Credited: credited, Reason: "earlier"}
	}
	paid := commission(CommissionPaid, true, 3000)
	paid.PaidAt = &paidAt
	snap := func(c *Commission, refundedBefore int64) RefundSnapshot {
		return RefundSnapshot{SaleID: 7, ProgramID: 1, WorkspaceID: 2, SaleAmount: 10000, RefundedBefore: refundedBefore,
			Commission: c, ReversedEndpoints: []int64{11}, RefundedEndpoints: []int64{12, 13}}
	}
	retry := func(s RefundSnapshot) RefundSnapshot { s.Retry = true; return s }
	all := RefundInput{ProgramID: 1, TransactionID: "txn_9", Reason: "chargeback"}
	partial := RefundInput{ProgramID: 1, TransactionID: "txn_9", AmountCents: 2500, RefundID: "re_1"}
	sameAmount := RefundInput{ProgramID: 1, TransactionID: "txn_9", AmountCents: 2500}

	type want struct {
		result   RefundResult
		applied  int64 // 0: nothing written
		change   *CommissionChange
		deducted int64 // 0: no deduction entry
		notices  []string
		webhook  string
		hooks    []int64
	}
	reversed := func(deduction int64) RefundResult {
		return RefundResult{Status: RefundReversed, CommissionID: 9, DeductionMinor: deduction, Currency: USD}
	}
	refunded := func(deduction int64) RefundResult {
		return RefundResult{Status: RefundRefunded, CommissionID: 9, DeductionMinor: deduction, Currency: USD}
	}
	skipped := func(reason string) RefundResult {
		return RefundResult{Status: RefundSkipped, CommissionID: 9, SkipReason: reason}
	}
	noComm := RefundResult{Status: RefundNoCommission, Message: MsgRefundNoCommission}
	for _, tc := range []struct {
		desc string
		in   RefundInput
		snap RefundSnapshot
		want want
	}{
		// The state table.
		{"PendingFullReversed", all, snap(commission(CommissionPending, false, 3000), 0), want{
			reversed(3000), 10000, &CommissionChange{9, CommissionReversed, 0, "chargeback"}, 0,
			[]string{NoticeCommissionReversed}, EventCommissionReversed, []int64{11}}},
		{"ApprovedFullReversedWithDeduction", all, snap(commission(CommissionApproved, true, 3000), 0), want{
			reversed(3000), 10000, &CommissionChange{9, CommissionReversed, 0, "chargeback"}, 3000,
			[]string{NoticeCommissionReversed}, EventCommissionReversed, []int64{11}}},
		{"PendingPartialCancelledWhole", partial, snap(commission(CommissionPending, false, 3000), 0), want{
			refunded(750), 2500, &CommissionChange{9, CommissionRefunded, 0, "earlier"}, 0,
			[]string{NoticeCommissionRefunded}, EventCommissionRefunded, []int64{12, 13}}},
		{"ApprovedPartialReducedByFraction", partial, snap(commission(CommissionApproved, true, 3000), 0), want{
			refunded(750), 2500, &CommissionChange{9, CommissionRefunded, 2250, "earlier"}, 750,
			[]string{NoticeCommissionRefunded}, EventCommissionRefunded, []int64{12, 13}}},
		{"PaidPartialNeedsManualReview", partial, snap(paid, 0), want{
			refunded(750), 2500, &CommissionChange{9, CommissionRefunded, 2250, "earlier"}, 750,
			[]string{NoticeCommissionRefunded, NoticeManualReview}, EventCommissionRefunded, []int64{12, 13}}},
		{"PaidFullNeedsManualReview", all, snap(paid, 0), want{
			reversed(3000), 10000, &CommissionChange{9, CommissionReversed, 0, "chargeback"}, 3000,
			[]string{NoticeCommissionReversed, NoticeManualReview}, EventCommissionReversed, []int64{11}}},
		{"RefundedRestReversedWithEverythingLeft", all, snap(commission(CommissionRefunded, true, 2250), 2500), want{
			reversed(2250), 7500, &CommissionChange{9, CommissionReversed, 0, "chargeback"}, 2250,
			[]string{NoticeCommissionReversed}, EventCommissionReversed, []int64{11}}},
		{"CancelledRestReversedWithNothingToDeduct", all, snap(commission(CommissionRefunded, false, 0), 2500), want{
			reversed(0), 7500, &CommissionChange{9, CommissionReversed, 0, "chargeback"}, 0,
			[]string{NoticeCommissionReversed}, EventCommissionReversed, []int64{11}}},
		// A test sale's commission is never credited: its refund deducts nothing.
		{"TestSaleCommissionNotCredited", all, snap(commission(CommissionApproved, false, 3000), 0), want{
			reversed(3000), 10000, &CommissionChange{9, CommissionReversed, 0, "chargeback"}, 0,
			[]string{NoticeCommissionReversed}, EventCommissionReversed, []int64{11}}},
		{"ReversedSkipped", all, snap(commission(CommissionReversed, true, 0), 10000), want{
			result: skipped(SkipAlreadyReverse)}},
		// Reversed or rejected by the brand before the sale was refunded in
		// full: skipped, and the refund recorded on the sale only.
		{"ReversedSkippedWithAmount", partial, snap(commission(CommissionReversed, false, 0), 2500), want{
			result: skipped(SkipAlreadyReverse), applied: 2500}},
		{"RejectedSkippedRecorded", partial, snap(commission(CommissionRejected, false, 0), 0), want{
			result: skipped(SkipAlreadyReverse), applied: 2500}},
		{"RejectedNothingLeft", all, snap(commission(CommissionRejected, false, 0), 10000), want{
			result: skipped(SkipAlreadyReverse)}},

		// The skip rules.
		{"SameRefundIDSkipped", partial, retry(snap(commission(CommissionApproved, true, 2250), 2500)), want{
			result: skipped(SkipRefundID)}},
		{"SameAmountSkipped", sameAmount, retry(snap(commission(CommissionApproved, true, 2250), 2500)), want{
			result: skipped(SkipSameAmount)}},
		{"RetrySkippedBeforeReversed", partial, retry(snap(commission(CommissionReversed, true, 0), 10000)), want{
			result: skipped(SkipRefundID)}},
		{"AllThatIsLeftIsNoRetry", all, retry(snap(commission(CommissionRefunded, true, 2250), 2500)), want{
			reversed(2250), 7500, &CommissionChange{9, CommissionReversed, 0, "chargeback"}, 2250,
			[]string{NoticeCommissionReversed}, EventCommissionReversed, []int64{11}}},
		{"NothingLeftSkipped", partial, snap(commission(CommissionRefunded, true, 2250), 10000), want{
			result: skipped(SkipAlreadyReverse)}},

		// The cap.
		{"CappedAtWhatIsLeft", RefundInput{ProgramID: 1, TransactionID: "txn_9", AmountCents: 9000, RefundID: "re_2"},
			snap(commission(CommissionRefunded, true, 2250), 2500), want{
				reversed(2250), 7500, &CommissionChange{9, CommissionReversed, 0, "earlier"}, 2250,
				[]string{NoticeCommissionReversed}, EventCommissionReversed, []int64{11}}},

		// A sale without commission.
		{"NoCommissionRecorded", partial, snap(nil, 0), want{result: noComm, applied: 2500}},
		{"NoCommissionRetry", partial, retry(snap(nil, 0)), want{result: noComm}},
		{"NoCommissionNothingLeft", all, snap(nil, 10000), want{result: noComm}},

		// No endpoint wants the event.
		{"NoWebhookWithoutEndpoints", partial, RefundSnapshot{SaleID: 7, ProgramID: 1, WorkspaceID: 2, SaleAmount: 10000,
			Commission: commission(CommissionPending, false, 3000), ReversedEndpoints: []int64{11}}, want{
			refunded(750), 2500, &CommissionChange{9, CommissionRefunded, 0, "earlier"}, 0,
			[]string{NoticeCommissionRefunded}, "", nil}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			p := PlanRefund(tc.in, tc.snap)
			if p.Result != tc.want.result {
				t.Fatalf("result = %+v, want %+v", p.Result, tc.want.result)
			}
			if tc.want.applied == 0 {
				if p.Write != nil {
					t.Fatalf("a skip writes %+v", p.Write)
				}
				return
			}
			w := p.Write
			if w == nil {
				t.Fatal("nothing to write")
			}
			row := w.Refund
			if row.SaleID != 7 || row.ProgramID != 1 || row.AmountCents != tc.want.applied || row.RefundID != tc.in.RefundID ||
				row.Reason != tc.in.Reason || row.Source != SourceAPI || row.TransactionID != "txn_9" ||
				row.DeductionMinor != tc.want.result.DeductionMinor {
				t.Fatalf("refund row = %+v", row)
			}
			if !reflect.DeepEqual(w.Commission, tc.want.change) {
				t.Fatalf("commission change = %+v, want %+v", w.Commission, tc.want.change)
			}
			if tc.want.change == nil {
				if row.CommissionID != nil || w.Deduction != nil || w.FitWithdrawals || w.Notifications != nil || w.Webhook != nil {
					t.Fatalf("a refund recorded on the sale only writes %+v", w)
				}
				return
			}
			if row.CommissionID == nil || *row.CommissionID != 9 {
				t.Fatalf("refund row's commission = %v", row.CommissionID)
			}
			if tc.want.deducted == 0 {
				if w.Deduction != nil || w.FitWithdrawals {
					t.Fatalf("deduction %+v, fit %v; want none", w.Deduction, w.FitWithdrawals)
				}
			} else if d := w.Deduction; d == nil || *d != (BalanceDeduction{PartnerID: 4, Currency: USD, CommissionID: 9, AmountMinor: tc.want.deducted}) || !w.FitWithdrawals {
				t.Fatalf("deduction %+v, fit %v; want %d", d, w.FitWithdrawals, tc.want.deducted)
			}
			var kinds []string
			for _, n := range w.Notifications {
				kinds = append(kinds, n.Kind)
			}
			if !reflect.DeepEqual(kinds, tc.want.notices) {
				t.Fatalf("notifications %v, want %v", kinds, tc.want.notices)
			}
			if tc.want.webhook == "" {
				if w.Webhook != nil {
					t.Fatalf("webhook %+v, want none", w.Webhook)
				}
				return
			}
			h := w.Webhook
			if h == nil || h.EventType != tc.want.webhook || !reflect.DeepEqual(h.Endpoints, tc.want.hooks) ||
				h.Data.Status != tc.want.change.Status || h.Data.SaleID != 7 || h.Data.Refund.AmountCents != tc.want.applied ||
				h.Data.Refund.PaidOut != (tc.snap.Commission.PaidAt != nil) {
				t.Fatalf("webhook %+v, want %s to %v", h, tc.want.webhook, tc.want.hooks)
			}
		})
	}
}

// TestPlanRefundSource: a processor's refund keeps its source; the
// endpoint's may leave it empty.
func TestPlanRefundSource(t *testing.T) {
	s := RefundSnapshot{SaleID: 7, ProgramID: 1, SaleAmount: 100}
	for _, tc := range []struct{ desc, source, want string }{
		{"EmptyIsAPI", "", SourceAPI},
		{"Processor", SourceProcessor, SourceProcessor},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			p := PlanRefund(RefundInput{TransactionID: "txn", Source: tc.source}, s)
			if p.Write == nil || p.Write.Refund.Source != tc.want {
				t.Fatalf("plan = %+v", p.Write)
			}
		})
	}
}
