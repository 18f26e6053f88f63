package postgres_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
)

// reviewBundle is a ledger with the review service, a program (10% of
// the sale, USD, 30 days' hold) with webhook endpoints for the review
// events, and the workspace owner acting.
type reviewBundle struct {
	*ledgerBundle
	review   *postgres.CommissionReviewService
	w        saleWorld
	ownerID  int64
	endpoint int64
}

func setupReview(t *testing.T) *reviewBundle {
	t.Helper()
	b := setupLedger(t, "0")
	ctx := context.Background()
	w := b.MustWorld(t, programInput("percent", "10", "USD", 0, 30))
	e, err := postgres.NewWebhookService(b.db.DB, nil).CreateEndpoint(ctx, w.program.ID, ledger.WebhookInput{
		URL:    ledger.Some("https://93.184.215.14/hooks"),
		Events: ledger.Some([]string{ledger.EventCommissionApproved, ledger.EventCommissionRejected})})
	if err != nil {
		t.Fatal(err)
	}
	var owner int64
	if err := b.db.QueryRow(`SELECT id FROM users WHERE email = 'owner@acme.example'`).Scan(&owner); err != nil {
		t.Fatal(err)
	}
	return &reviewBundle{ledgerBundle: b, review: postgres.NewCommissionReviewService(b.db.DB, nil, discard), w: w,
		ownerID: owner, endpoint: e.ID}
}

// auditRows are the program's audit rows as (action, subject id, actor
// email, details), oldest first.
func (b *reviewBundle) auditRows(tb testing.TB) []string {
	tb.Helper()
	rows, err := b.db.Query(`SELECT action || ' ' || subject_id || ' ' || COALESCE(actor_email, '-') || ' ' || details::text
		FROM audit_log WHERE program_id = $1 ORDER BY id`, b.w.program.ID)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			tb.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func TestReviewApproveCommission(t *testing.T) {
	b := setupReview(t)
	ctx := context.Background()
	_, cid := b.sold(t, b.w, 12050) // 1205 pending
	since := b.lastOutboxID(t)

	r, err := b.review.ApproveCommission(ctx, b.w.program.ID, cid, b.ownerID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != ledger.CommissionApproved || r.ApprovedAt == nil || !r.Credited || r.PartnerName != "Pat" {
		t.Fatalf("approved: %+v", r)
	}
	if got := b.balance(t, b.w.partnerID, ledger.USD); got != 1205 {
		t.Fatalf("balance %d, want 1205", got)
	}
	hooks := b.webhookRows(t, since)
	wantDeliveries(t, hooks, ledger.EventCommissionApproved, b.endpoint)
	var data map[string]any
	decodeData(t, hooks[0], &data)
	if data["status"] != "approved" || data["amount"] != 12.05 || data["commission_id"] != float64(cid) || data["approved_at"] == nil {
		t.Fatalf("data %v", data)
	}
	audit := b.auditRows(t)
	if len(audit) != 1 || !strings.HasPrefix(audit[0], "commission.approved "+strconv.FormatInt(cid, 10)+" owner@acme.example ") ||
		!strings.Contains(audit[0], `"amount": 12.05`) || !strings.Contains(audit[0], `"previous_status": "pending"`) {
		t.Fatalf("audit %q", audit)
	}

	t.Run("ErrConflict not pending", func(t *testing.T) {
		_, err := b.review.ApproveCommission(ctx, b.w.program.ID, cid, b.ownerID)
		assertCode(t, err, ledger.EConflict, ledger.MsgApproveNotPending+"approved")
		if got := b.balance(t, b.w.partnerID, ledger.USD); got != 1205 || len(b.auditRows(t)) != 1 {
			t.Fatalf("a refused approval changed something: balance %d", got)
		}
	})
	t.Run("ErrNotFound other program", func(t *testing.T) {
		other := b.MustWorld(t, programInput("percent", "10", "USD", 0, 30))
		_, ocid := b.sold(t, other, 1000)
		_, err := b.review.ApproveCommission(ctx, b.w.program.ID, ocid, b.ownerID)
		assertCode(t, err, ledger.ENotFound, ledger.MsgCommissionNotFound)
		if c := b.MustCommission(t, ocid); c.Status != ledger.CommissionPending {
			t.Fatalf("another program's commission became %s", c.Status)
		}
		_, err = b.review.ApproveCommission(ctx, b.w.program.ID, 1<<60, b.ownerID)
		assertCode(t, err, ledger.ENotFound, ledger.MsgCommissionNotFound)
	})
}

// TestScheduledApprovalSendsWebhook checks that the hold's end, the
// scheduled approval, writes commission.approved through the outbox in
// its transaction, with no actor in the audit log (it writes none).
func TestScheduledApprovalSendsWebhook(t *testing.T) {
	b := setupReview(t)
	_, cid := b.sold(t, b.w, 10000)
	since := b.lastOutboxID(t)
	b.clock.Add(31 * 24 * time.Hour)
	n, err := b.balances.ApproveDue(context.Background(), 10)
	if err != nil || n != 1 {
		t.Fatalf("ApproveDue: %d, %v", n, err)
	}
	hooks := b.webhookRows(t, since)
	wantDeliveries(t, hooks, ledger.EventCommissionApproved, b.endpoint)
	var data ledger.CommissionApprovedData
	decodeData(t, hooks[0], &data)
	if data.CommissionID != cid || data.Status != "approved" || data.Amount != "10" {
		t.Fatalf("data %+v", data)
	}
}

func TestReviewRejectCommission(t *testing.T) {
	b := setupReview(t)
	ctx := context.Background()
	pid := b.w.program.ID

	t.Run("OK pending becomes rejected", func(t *testing.T) {
		txn, cid := b.sold(t, b.w, 5000) // 500 pending
		before := b.balance(t, b.w.partnerID, ledger.USD)
		since := b.lastOutboxID(t)
		r, err := b.review.RejectCommission(ctx, pid, cid, b.ownerID, "self-referral")
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != ledger.CommissionRejected || r.RejectedAt == nil || r.ReversedAt != nil || r.AmountMinor != 0 ||
			r.OriginalMinor != 500 || r.Reason != "self-referral" {
			t.Fatalf("rejected: %+v", r)
		}
		if got := b.balance(t, b.w.partnerID, ledger.USD); got != before {
			t.Fatalf("balance %d, want %d", got, before)
		}
		if n := b.count(t, `SELECT count(*) FROM balance_entries WHERE commission_id = $1`, cid); n != 0 {
			t.Fatalf("%d balance entries of a rejected commission", n)
		}
		hooks := b.webhookRows(t, since)
		wantDeliveries(t, hooks, ledger.EventCommissionRejected, b.endpoint)
		var data map[string]any
		decodeData(t, hooks[0], &data)
		if data["status"] != "rejected" || data["reason"] != "self-referral" || data["rejected_amount"] != float64(5) || data["deduction_amount"] != float64(0) {
			t.Fatalf("data %v", data)
		}
		// The partner's in-app notification is in the outbox, before the webhook.
		var n ledger.Notification
		var raw []byte
		if err := b.db.QueryRow(`SELECT payload FROM outbox WHERE id > $1 AND task_type = $2 ORDER BY id`,
			since, ledger.OutboxTaskNotification).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &n); err != nil || n.PartnerID == nil || *n.PartnerID != b.w.partnerID ||
			n.Kind != ledger.NoticeCommissionRejected || n.Data["reason"] != "self-referral" {
			t.Fatalf("notification %s, %v", raw, err)
		}
		// It never pays: neither the hold's end nor the operator approves it.
		b.clock.Add(31 * 24 * time.Hour)
		if _, err := b.balances.ApproveDue(ctx, 10); err != nil {
			t.Fatal(err)
		}
		if c := b.MustCommission(t, cid); c.Status != ledger.CommissionRejected {
			t.Fatalf("after the hold: %s", c.Status)
		}
		_, err = b.balances.ApproveCommission(ctx, cid)
		assertCode(t, err, ledger.EConflict, ledger.MsgCommissionRejected)
		_, err = b.balances.MarkCommissionPaid(ctx, cid)
		assertCode(t, err, ledger.EConflict, ledger.MsgCommissionRejected)
		// A refund of its sale is skipped for the commission but recorded on
		// the sale, so the sale's revenue stays true; nothing else moves.
		bal := b.balance(t, b.w.partnerID, ledger.USD)
		assertRefund(t, b.refund(t, b.w, ledger.RefundInput{TransactionID: txn, AmountCents: 2000, RefundID: "re_after_reject"}),
			ledger.RefundResult{Status: ledger.RefundSkipped, CommissionID: cid, SkipReason: ledger.SkipAlreadyReverse})
		if n := b.count(t, `SELECT count(*) FROM sales WHERE processor_event_id = $1 AND refunded_cents = 2000`, txn); n != 1 {
			t.Fatal("the refund of a rejected commission's sale was not recorded on the sale")
		}
		if n := b.count(t, `SELECT count(*) FROM refunds WHERE refund_id = 're_after_reject' AND deduction_minor = 0`); n != 1 {
			t.Fatalf("%d refund rows", n)
		}
		if c := b.MustCommission(t, cid); c.Status != ledger.CommissionRejected || c.AmountMinor != 0 || b.balance(t, b.w.partnerID, ledger.USD) != bal {
			t.Fatalf("after the refund: %+v", c)
		}
		// The same refund again is a retry.
		assertRefund(t, b.refund(t, b.w, ledger.RefundInput{TransactionID: txn, AmountCents: 2000, RefundID: "re_after_reject"}),
			ledger.RefundResult{Status: ledger.RefundSkipped, CommissionID: cid, SkipReason: ledger.SkipRefundID})
	})

	t.Run("OK approved is reversed and open withdrawals fitted", func(t *testing.T) {
		_, keep := b.approved(t, b.w, 10000) // 1000
		_, cid := b.approved(t, b.w, 8000)   // 800
		bal := b.balance(t, b.w.partnerID, ledger.USD)
		wd, err := b.balances.CreateWithdrawal(ctx, b.w.partnerID, ledger.USD, bal)
		if err != nil {
			t.Fatal(err)
		}
		r, err := b.review.RejectCommission(ctx, pid, cid, b.ownerID, "fraud")
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != ledger.CommissionReversed || r.ReversedAt == nil || r.RejectedAt != nil || r.AmountMinor != 0 {
			t.Fatalf("reversed: %+v", r)
		}
		if got := b.balance(t, b.w.partnerID, ledger.USD); got != bal-800 {
			t.Fatalf("balance %d, want %d", got, bal-800)
		}
		var deduction int64
		if err := b.db.QueryRow(`SELECT amount_minor FROM balance_entries WHERE commission_id = $1 AND kind = 'deduction'`, cid).Scan(&deduction); err != nil || deduction != -800 {
			t.Fatalf("deduction entry %d, %v", deduction, err)
		}
		got, err := b.balances.Withdrawal(ctx, wd.ID)
		if err != nil || got.AmountMinor != bal-800 || got.Status != ledger.WithdrawalOpen {
			t.Fatalf("withdrawal %+v, %v; want lowered to %d", got, err, bal-800)
		}
		if c := b.MustCommission(t, keep); c.Status != ledger.CommissionApproved {
			t.Fatalf("the other commission became %s", c.Status)
		}
		// The balance equals the sum of what the commissions still credit.
		var credited int64
		if err := b.db.QueryRow(`SELECT COALESCE(SUM(amount_minor), 0) FROM commissions WHERE partner_id = $1 AND credited AND paid_at IS NULL`,
			b.w.partnerID).Scan(&credited); err != nil || credited != b.balance(t, b.w.partnerID, ledger.USD) {
			t.Fatalf("credited %d, balance %d", credited, b.balance(t, b.w.partnerID, ledger.USD))
		}
	})

	t.Run("ErrConflict", func(t *testing.T) {
		_, paid := b.approved(t, b.w, 2000)
		if _, err := b.balances.MarkCommissionPaid(ctx, paid); err != nil {
			t.Fatal(err)
		}
		_, rejected := b.sold(t, b.w, 2000)
		if _, err := b.review.RejectCommission(ctx, pid, rejected, b.ownerID, "x"); err != nil {
			t.Fatal(err)
		}
		txn, refunded := b.sold(t, b.w, 2000) // pending, partly refunded: cancelled whole
		b.refund(t, b.w, ledger.RefundInput{TransactionID: txn, AmountCents: 500})
		txn2, reversed := b.sold(t, b.w, 2000)
		b.refund(t, b.w, ledger.RefundInput{TransactionID: txn2})
		audits, bal := len(b.auditRows(t)), b.balance(t, b.w.partnerID, ledger.USD)
		for _, tc := range []struct {
			id  int64
			msg string
		}{{paid, ledger.MsgRejectPaid}, {rejected, ledger.MsgRejectRejected}, {refunded, ledger.MsgRejectRefunded}, {reversed, ledger.MsgRejectReversed}} {
			_, err := b.review.RejectCommission(ctx, pid, tc.id, b.ownerID, "again")
			assertCode(t, err, ledger.EConflict, tc.msg)
		}
		if len(b.auditRows(t)) != audits || b.balance(t, b.w.partnerID, ledger.USD) != bal {
			t.Fatal("a refused rejection changed something")
		}
	})

	t.Run("OK refunded and credited is reversed with what is left", func(t *testing.T) {
		txn, cid := b.approved(t, b.w, 2000) // 200 credited
		b.refund(t, b.w, ledger.RefundInput{TransactionID: txn, AmountCents: 500})
		if c := b.MustCommission(t, cid); c.Status != ledger.CommissionRefunded || c.AmountMinor != 150 {
			t.Fatalf("after the partial refund: %+v", c)
		}
		bal := b.balance(t, b.w.partnerID, ledger.USD)
		r, err := b.review.RejectCommission(ctx, pid, cid, b.ownerID, "late fraud")
		if err != nil || r.Status != ledger.CommissionReversed || r.AmountMinor != 0 {
			t.Fatalf("rejected: %+v, %v", r, err)
		}
		if got := b.balance(t, b.w.partnerID, ledger.USD); got != bal-150 {
			t.Fatalf("balance %d, want %d", got, bal-150)
		}
	})

	t.Run("audit rows", func(t *testing.T) {
		audit := b.auditRows(t)
		if len(audit) != 4 {
			t.Fatalf("audit %q", audit)
		}
		for _, a := range audit {
			if !strings.HasPrefix(a, "commission.rejected ") || !strings.Contains(a, " owner@acme.example ") {
				t.Fatalf("audit row %q", a)
			}
		}
		if !strings.Contains(audit[1], `"status": "reversed"`) || !strings.Contains(audit[1], `"deduction_amount": 8`) {
			t.Fatalf("reversal's audit row %q", audit[1])
		}
	})
}

func TestReviewListAndAudit(t *testing.T) {
	b := setupReview(t)
	ctx := context.Background()
	pid := b.w.program.ID
	_, c1 := b.sold(t, b.w, 1000)
	b.clock.Add(time.Hour)
	_, c2 := b.sold(t, b.w, 2000)
	b.clock.Add(time.Hour)
	_, c3 := b.sold(t, b.w, 3000)
	if _, err := b.review.RejectCommission(ctx, pid, c2, b.ownerID, "dup"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.review.ApproveCommission(ctx, pid, c3, b.ownerID); err != nil {
		t.Fatal(err)
	}
	// A test-mode sale's commission is never listed.
	if _, err := b.db.Exec(`UPDATE sales SET is_test = true WHERE id = (SELECT sale_id FROM commissions WHERE id = $1)`, c1); err != nil {
		t.Fatal(err)
	}
	ids := func(p *ledger.CommissionPage) []int64 {
		var out []int64
		for _, c := range p.Commissions {
			out = append(out, c.ID)
		}
		return out
	}
	page, err := b.review.Commissions(ctx, ledger.CommissionQuery{ProgramID: pid, Page: 1, PageSize: 10})
	if err != nil || page.Total != 2 || len(page.Commissions) != 2 || page.Commissions[0].ID != c3 || page.Commissions[1].ID != c2 {
		t.Fatalf("page %v total %d, %v", ids(page), page.Total, err)
	}
	page, _ = b.review.Commissions(ctx, ledger.CommissionQuery{ProgramID: pid, Status: ledger.CommissionRejected, Page: 1, PageSize: 10})
	if page.Total != 1 || page.Commissions[0].ID != c2 || page.Commissions[0].Reason != "dup" {
		t.Fatalf("rejected: %v", ids(page))
	}
	page, _ = b.review.Commissions(ctx, ledger.CommissionQuery{ProgramID: pid, Page: 3, PageSize: 1})
	if page.Total != 2 || len(page.Commissions) != 0 {
		t.Fatalf("past the end: total %d", page.Total)
	}
	batch, err := b.review.CommissionBatch(ctx, ledger.CommissionQuery{ProgramID: pid}, nil)
	if err != nil || len(batch) != 2 {
		t.Fatalf("batch %d, %v", len(batch), err)
	}
	rest, err := b.review.CommissionBatch(ctx, ledger.CommissionQuery{ProgramID: pid}, &batch[0])
	if err != nil || len(rest) != 1 || rest[0].ID != c2 {
		t.Fatalf("after the first: %d, %v", len(rest), err)
	}

	audit, err := b.review.Audit(ctx, ledger.AuditQuery{ProgramID: pid, Page: 1, PageSize: 10})
	if err != nil || audit.Total != 2 || audit.Entries[0].Action != ledger.AuditCommissionApproved ||
		audit.Entries[1].Action != ledger.AuditCommissionRejected || audit.Entries[0].ActorEmail != "owner@acme.example" ||
		audit.Entries[0].SubjectID != c3 || audit.Entries[0].ActorUserID != b.ownerID {
		t.Fatalf("audit %+v, %v", audit, err)
	}
	if amount, _ := audit.Entries[0].Details["amount"].(json.Number); amount != "3" {
		t.Fatalf("details %v", audit.Entries[0].Details)
	}
	audit, _ = b.review.Audit(ctx, ledger.AuditQuery{ProgramID: pid, Action: ledger.AuditCommissionRejected, SubjectType: "commission", Page: 1, PageSize: 10})
	if audit.Total != 1 || audit.Entries[0].SubjectID != c2 {
		t.Fatalf("filtered audit %+v", audit)
	}
	other := b.MustWorld(t, programInput("percent", "10", "USD", 0, 30))
	audit, _ = b.review.Audit(ctx, ledger.AuditQuery{ProgramID: other.program.ID, Page: 1, PageSize: 10})
	if audit.Total != 0 {
		t.Fatalf("another program's audit has %d rows", audit.Total)
	}

	t.Run("append-only", func(t *testing.T) {
		_, err := b.db.Exec(`UPDATE audit_log SET action = 'commission.approved' WHERE program_id = $1`, pid)
		if err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Fatalf("UPDATE of audit_log: %v", err)
		}
		again, _ := b.review.Audit(ctx, ledger.AuditQuery{ProgramID: pid, Action: ledger.AuditCommissionRejected, Page: 1, PageSize: 10})
		if again.Total != 1 {
			t.Fatal("the refused UPDATE changed a row")
		}
	})
}

// TestReviewRaces runs the brand's approve, its reject and the scheduled
// approval on the same commissions at once: each commission ends in one
// consistent state (rejected with no entry, or reversed with its credit
// and a deduction of the same amount, or approved and credited once),
// and the balance is what the commissions still credit.
func TestReviewRaces(t *testing.T) {
	b := setupReview(t)
	ctx := context.Background()
	pid := b.w.program.ID
	const n = 8
	ids := make([]int64, n)
	for i := range ids {
		_, ids[i] = b.sold(t, b.w, 1000+int64(i)*100)
	}
	b.clock.Add(31 * 24 * time.Hour)
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(3)
		go func() {
			defer wg.Done()
			if _, err := b.review.ApproveCommission(ctx, pid, id, b.ownerID); err != nil && ledger.ErrorCode(err) != ledger.EConflict {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			if _, err := b.review.RejectCommission(ctx, pid, id, b.ownerID, "race"); err != nil && ledger.ErrorCode(err) != ledger.EConflict {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			if _, err := b.balances.ApproveDue(ctx, 1); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for _, id := range ids {
		c := b.MustCommission(t, id)
		credits := b.count(t, `SELECT count(*) FROM balance_entries WHERE commission_id = $1 AND kind = 'credit'`, id)
		deductions := b.count(t, `SELECT count(*) FROM balance_entries WHERE commission_id = $1 AND kind = 'deduction'`, id)
		switch {
		case c.Status == ledger.CommissionRejected && credits == 0 && deductions == 0:
		case c.Status == ledger.CommissionReversed && credits == 1 && deductions == 1:
		default:
			t.Errorf("commission %d: %s with %d credits and %d deductions", id, c.Status, credits, deductions)
		}
	}
	if got := b.balance(t, b.w.partnerID, ledger.USD); got != 0 {
		t.Fatalf("balance %d after every commission was rejected", got)
	}
}
