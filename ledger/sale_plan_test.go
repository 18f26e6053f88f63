package ledger

import (
	"errors"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// TestPlanSale covers every rule a sale is decided by, from the snapshot
// alone: the spec's answers and their order, test sales, the customer a
// click brings, the conversion, the platform fee and the commission's
// terms.
func TestPlanSale(t *testing.T) {
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	partner, otherPartner := int64(7), int64(8)
	clickID := "01jd0000000000000000000000"
	firstPaid := now.Add(-48 * time.Hour)
	customer := func(mod func(c *Customer)) *Customer {
		c := &Customer{ID: 40, ProgramID: 1, PartnerID: &partner, ClickID: clickID, Status: FunnelClick}
		if mod != nil {
			mod(c)
		}
		return c
	}
	prog := func(t CommissionType, rate string, months int) *Program {
		p := program(t, rate, USD, months)
		p.ID = 1
		return p
	}
	byKey := Sale{ProgramID: 1, TransactionID: "txn_1", AmountCents: 10000, CustomerKey: "k", OccurredAt: now, Source: SourceAPI}
	byClick := byKey
	byClick.CustomerKey, byClick.ClickID = "", clickID
	test := Sale{ProgramID: 1, TransactionID: "test_txn_1", GeneratedID: true, OccurredAt: now, IsTest: true, Source: SourceAPI}
	fee := decimal.RequireFromString("2.5")

	type want struct {
		refusal      string // the error code of a refusal ("" none)
		refusalMsg   string
		test         bool
		newCustomer  bool
		converts     bool
		firstPaid    time.Time
		feeMinor     int64
		commission   int64 // 0: none planned
		commissionIn Currency
		firstOnly    bool
		notDue       string
		storedAnswer string
		amount       int64
		clickID      string
	}
	for _, tc := range []struct {
		desc string
		sale Sale
		snap SaleSnapshot
		want want
	}{
		{"a test sale writes the sale alone, at one major unit when sent without amount",
			test, SaleSnapshot{Program: prog(Percent, "10", 0)},
			want{test: true, amount: 100}},
		{"a test sale whose made-up id is taken is tried under another",
			test, SaleSnapshot{Program: prog(Percent, "10", 0), DuplicateOf: 5},
			want{test: true, amount: 100}},
		{"a test sale naming a taken id is 409",
			func() Sale { s := test; s.GeneratedID = false; return s }(), SaleSnapshot{Program: prog(Percent, "10", 0), DuplicateOf: 5},
			want{refusal: EDuplicateTransaction, refusalMsg: MsgDuplicateTransaction}},
		{"a taken transaction id is 409 before anything else",
			Sale{ProgramID: 1, TransactionID: "txn_1", AmountCents: 1}, SaleSnapshot{Program: prog(Percent, "10", 0), DuplicateOf: 5},
			want{refusal: EDuplicateTransaction, refusalMsg: MsgDuplicateTransaction}},
		{"a sale naming neither customer key nor click id is 400",
			Sale{ProgramID: 1, TransactionID: "txn_1", AmountCents: 1}, SaleSnapshot{Program: prog(Percent, "10", 0)},
			want{refusal: EInvalid, refusalMsg: MsgCustomerNotFound}},
		{"a customer key nobody has and no click is not found",
			byKey, SaleSnapshot{Program: prog(Percent, "10", 0)},
			want{refusal: ENoAttribution, refusalMsg: MsgCustomerNotFound}},
		{"a click id that is in no table is not found",
			byClick, SaleSnapshot{Program: prog(Percent, "10", 0)},
			want{refusal: ENoAttribution, refusalMsg: MsgCustomerNotFound}},
		{"a click of another program attributes nothing",
			byClick, SaleSnapshot{Program: prog(Percent, "10", 0), Click: &Click{ID: clickID, ProgramID: 2, PartnerID: &partner}},
			want{refusal: ENoAttribution, refusalMsg: MsgNoAttribution}},
		{"a partner not enrolled in the program is refused, nothing written",
			byKey, SaleSnapshot{Program: prog(Percent, "10", 0), Customer: customer(func(c *Customer) { c.PartnerID = &otherPartner })},
			want{refusal: ENoAttribution, refusalMsg: MsgNoRelationship}},
		{"the first sale of a click brings its customer, converted, with fee and commission",
			byClick, SaleSnapshot{Program: prog(Percent, "10", 0), Click: &Click{ID: clickID, ProgramID: 1, PartnerID: &partner}, NewCustomerID: 99, Enrolled: true},
			want{newCustomer: true, converts: true, firstPaid: now, feeMinor: 250, commission: 1000, commissionIn: USD, firstOnly: true, amount: 10000, clickID: clickID}},
		{"a customer without partner: the sale is stored and answers 400",
			byKey, SaleSnapshot{Program: prog(Percent, "10", 0), Customer: customer(func(c *Customer) { c.PartnerID = nil })},
			want{storedAnswer: MsgPartnerRequired, amount: 10000, clickID: clickID}},
		{"a click without partner brings a customer that cannot convert",
			byClick, SaleSnapshot{Program: prog(Percent, "10", 0), Click: &Click{ID: clickID, ProgramID: 1}, NewCustomerID: 99},
			want{newCustomer: true, storedAnswer: MsgPartnerRequired, amount: 10000, clickID: clickID}},
		{"a test customer buys in test, its partner's enrollment unread",
			byKey, SaleSnapshot{Program: prog(Percent, "10", 0), Customer: customer(func(c *Customer) { c.IsTest = true })},
			want{test: true, amount: 10000, clickID: clickID}},
		{"a test click brings a test customer",
			byClick, SaleSnapshot{Program: prog(Percent, "10", 0), Click: &Click{ID: clickID, ProgramID: 1, PartnerID: &partner, IsTest: true}, NewCustomerID: 99},
			want{test: true, newCustomer: true, amount: 10000, clickID: clickID}},
		{"a one-time program pays the first sale only, which the write decides",
			byKey, SaleSnapshot{Program: prog(Fixed, "12.5", 0), Customer: customer(func(c *Customer) { c.FirstPaidAt = &firstPaid }), Enrolled: true},
			want{converts: true, firstPaid: firstPaid, feeMinor: 250, commission: 1250, commissionIn: USD, firstOnly: true, amount: 10000, clickID: clickID}},
		{"a recurring program pays every sale within its months",
			byKey, SaleSnapshot{Program: prog(RecurringPercent, "30", 2), Customer: customer(func(c *Customer) { c.FirstPaidAt = &firstPaid }), Enrolled: true},
			want{converts: true, firstPaid: firstPaid, feeMinor: 250, commission: 3000, commissionIn: USD, amount: 10000, clickID: clickID}},
		{"a recurring program pays nothing once its months are over",
			byKey, SaleSnapshot{Program: prog(RecurringFixed, "5", 1), Customer: customer(func(c *Customer) {
				c.FirstPaidAt = new(now.AddDate(0, -1, 0))
			}), Enrolled: true},
			want{converts: true, firstPaid: now.AddDate(0, -1, 0), feeMinor: 250, notDue: NotDueDurationOver, amount: 10000, clickID: clickID}},
		{"a lifetime recurring program pays years later",
			byKey, SaleSnapshot{Program: prog(RecurringFixed, "5", 0), Customer: customer(func(c *Customer) {
				c.FirstPaidAt = new(now.AddDate(-5, 0, 0))
			}), Enrolled: true},
			want{converts: true, firstPaid: now.AddDate(-5, 0, 0), feeMinor: 250, commission: 500, commissionIn: USD, amount: 10000, clickID: clickID}},
		{"a sale dated before the customer's first paid sale moves it back",
			func() Sale { s := byKey; s.OccurredAt = firstPaid.Add(-time.Hour); return s }(),
			SaleSnapshot{Program: prog(RecurringPercent, "10", 0), Customer: customer(func(c *Customer) { c.FirstPaidAt = &firstPaid }), Enrolled: true},
			want{converts: true, firstPaid: firstPaid.Add(-time.Hour), feeMinor: 250, commission: 1000, commissionIn: USD, amount: 10000, clickID: clickID}},
		{"a fixed commission is paid in the program's currency",
			func() Sale { s := byKey; s.Currency = EUR; return s }(),
			SaleSnapshot{Program: prog(Fixed, "3", 0), Customer: customer(nil), Enrolled: true},
			want{converts: true, firstPaid: now, feeMinor: 250, commission: 300, commissionIn: USD, firstOnly: true, amount: 10000, clickID: clickID}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			p := PlanSale(tc.sale, tc.snap, fee, now)
			w := tc.want
			if w.refusal != "" {
				if ErrorCode(p.Refusal) != w.refusal || ErrorMessage(p.Refusal) != w.refusalMsg {
					t.Fatalf("refusal %v, want %s %q", p.Refusal, w.refusal, w.refusalMsg)
				}
				return
			}
			if p.Refusal != nil {
				t.Fatalf("refused: %v", p.Refusal)
			}
			if p.Sale.IsTest != w.test || p.NewCustomer != w.newCustomer || p.Converts != w.converts ||
				p.Sale.AmountCents != w.amount || p.Sale.ClickID != w.clickID || !p.TrackingLog {
				t.Fatalf("plan %+v, want %+v", p, w)
			}
			if w.converts && (!p.FirstPaid.Equal(w.firstPaid) || p.Fee.AmountMinor != w.feeMinor || !p.Fee.RatePercent.Equal(fee)) {
				t.Fatalf("converts with first paid %v, fee %+v; want %v, %d", p.FirstPaid, p.Fee, w.firstPaid, w.feeMinor)
			}
			if !w.converts && (p.Fee != PlatformFee{} || p.Commission != nil) {
				t.Fatalf("a sale that does not convert plans fee %+v, commission %+v", p.Fee, p.Commission)
			}
			switch c := p.Commission; {
			case w.commission == 0 && c != nil:
				t.Fatalf("commission %+v, want none", c)
			case w.commission != 0 && (c == nil || c.AmountMinor != w.commission || c.Currency != w.commissionIn ||
				c.FirstOnly != w.firstOnly || !c.ApproveAfter.Equal(now.AddDate(0, 0, 30))):
				t.Fatalf("commission %+v, want %d %s first only %v", c, w.commission, w.commissionIn, w.firstOnly)
			}
			if p.NotDue != w.notDue || ErrorMessage(p.StoredAnswer) != w.storedAnswer {
				t.Fatalf("not due %q, stored answer %v; want %q, %q", p.NotDue, p.StoredAnswer, w.notDue, w.storedAnswer)
			}
			if w.newCustomer && (p.Customer.ID != 99 || p.Customer.Status != FunnelClick || p.Customer.IsTest != w.test) {
				t.Fatalf("new customer %+v", p.Customer)
			}
		})
	}
}

// TestSaleOutcome covers the answers of a written sale and the brand
// events it sends.
func TestSaleOutcome(t *testing.T) {
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	partner := int64(7)
	base := SalePlan{Sale: Sale{ProgramID: 1, TransactionID: "txn_1", AmountCents: 10000, Currency: USD},
		Customer: &Customer{ID: 40, PartnerID: &partner}, Converts: true, TrackingLog: true,
		SaleEndpoints: []int64{3}, CommissionEndpoints: []int64{4}}
	withCommission := base
	withCommission.Commission = &PlannedCommission{AmountMinor: 1000, Currency: USD, ApproveAfter: now, FirstOnly: true}
	written := SaleWritten{SaleID: 11, OccurredAt: now, CommissionID: 12, ApproveAfter: now}
	for _, tc := range []struct {
		desc    string
		plan    SalePlan
		written SaleWritten
		taken   bool
		message string
		answer  string
		events  []string
	}{
		{"an id taken meanwhile", withCommission, SaleWritten{}, true, "", "", nil},
		{"commission written", withCommission, written, false, MsgSaleRecorded, "", []string{EventSaleCreated, EventCommissionCreated}},
		{"the customer had earned one already", withCommission, SaleWritten{SaleID: 11, OccurredAt: now}, false, MsgSaleNotFirst, "", []string{EventSaleCreated}},
		{"not the first sale, decided earlier", func() SalePlan { p := base; p.NotDue = NotDueNotFirst; return p }(),
			SaleWritten{SaleID: 11, OccurredAt: now}, false, MsgSaleNotFirst, "", []string{EventSaleCreated}},
		{"duration over", func() SalePlan { p := base; p.NotDue = NotDueDurationOver; return p }(),
			SaleWritten{SaleID: 11, OccurredAt: now}, false, MsgSaleDurationOver, "", []string{EventSaleCreated}},
		{"a test sale", func() SalePlan { p := base; p.Sale.IsTest, p.Converts = true, false; return p }(),
			SaleWritten{SaleID: 11, OccurredAt: now}, false, MsgTestSaleRecorded, "", nil},
		{"stored without partner", func() SalePlan { p := base; p.StoredAnswer = NewError(ENoAttribution, MsgPartnerRequired); return p }(),
			SaleWritten{SaleID: 11, OccurredAt: now}, false, "", MsgPartnerRequired, nil},
		{"stored without the commission that failed", withCommission.Fallbacks()[1],
			SaleWritten{SaleID: 11, OccurredAt: now}, false, "", MsgCommissionFailed, nil},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			out, err := tc.plan.Outcome(tc.written)
			if err != nil {
				t.Fatal(err)
			}
			if out.Taken != tc.taken {
				t.Fatalf("taken %v, want %v", out.Taken, tc.taken)
			}
			if tc.taken {
				return
			}
			if out.Result.SaleID != 11 || out.Result.Message != tc.message || ErrorMessage(out.Answer) != tc.answer {
				t.Fatalf("result %+v, answer %v; want %q, %q", out.Result, out.Answer, tc.message, tc.answer)
			}
			var types []string
			for _, ev := range out.Events {
				types = append(types, ev.Type)
			}
			if len(types) != len(tc.events) || (len(types) > 0 && (types[0] != tc.events[0] || types[len(types)-1] != tc.events[len(tc.events)-1])) {
				t.Fatalf("events %v, want %v", types, tc.events)
			}
		})
	}
	// A commission planned without FirstOnly must be written: a write that
	// returns none is an error, not an answer.
	always := withCommission
	always.Commission = &PlannedCommission{AmountMinor: 1000, Currency: USD}
	if _, err := always.Outcome(SaleWritten{SaleID: 11}); err == nil {
		t.Fatal("a commission planned and not written was answered")
	}
}

// TestSaleFallbacks: a failed write is tried again without the tracking
// log, then without the commission (answering 500), then without both.
func TestSaleFallbacks(t *testing.T) {
	p := SalePlan{TrackingLog: true, Commission: &PlannedCommission{AmountMinor: 1}}
	fb := p.Fallbacks()
	if len(fb) != 3 || fb[0].TrackingLog || fb[0].Commission == nil ||
		!fb[1].TrackingLog || fb[1].Commission != nil || ErrorMessage(fb[1].StoredAnswer) != MsgCommissionFailed ||
		fb[2].TrackingLog || fb[2].Commission != nil {
		t.Fatalf("fallbacks %+v", fb)
	}
	if fb := (SalePlan{TrackingLog: true}).Fallbacks(); len(fb) != 1 || fb[0].TrackingLog {
		t.Fatalf("fallbacks of a sale without commission %+v", fb)
	}
	var e *Error
	if !errors.As(fb[1].StoredAnswer, &e) || e.Code != EInternal {
		t.Fatalf("stored answer %v", fb[1].StoredAnswer)
	}
	if next, ok := (SalePlan{Sale: Sale{GeneratedID: true}}).WithTestID("test_txn_1", 2); !ok || next.Sale.TransactionID != "test_txn_1_2" {
		t.Fatalf("second test id %q", next.Sale.TransactionID)
	}
	if _, ok := (SalePlan{Sale: Sale{GeneratedID: true}}).WithTestID("test_txn_1", 11); ok {
		t.Fatal("an eleventh test id")
	}
	if _, ok := (SalePlan{}).WithTestID("txn", 2); ok {
		t.Fatal("a sale that named its id got another")
	}
}
