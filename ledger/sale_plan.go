package ledger

import (
	"fmt"
	"strconv"
	"time"

	"github.com/shopspring/decimal"
)

// SaleSnapshot is what a sale is decided on: read, with its customer
// locked, before anything of the sale is written.
type SaleSnapshot struct {
	Program *Program
	// DuplicateOf is the sale already recorded with the transaction id (0:
	// none).
	DuplicateOf int64
	// Customer is the sale's customer when it exists (the processor's
	// attribution, else the settled customer of the sale's key, else the
	// customer its click brought), locked; nil when none exists.
	Customer *Customer
	// Click is the sale's click when no customer exists (nil when it is
	// not in Postgres); the customer it brings gets NewCustomerID.
	Click         *Click
	NewCustomerID int64
	// Enrolled: the partner of the customer, or of the click, is actively
	// enrolled in the program.
	Enrolled bool
	// Policy is the current version of the terms of the enrolled partner's
	// group; nil for the default group, whose terms are the program's.
	Policy *CommissionPolicy
	// The program's webhook endpoints that want sale.created and
	// commission.created.
	SaleEndpoints, CommissionEndpoints []int64
}

// SalePlan is what a sale writes, as PlanSale decided it. Refusal set:
// nothing is written and the call answers it.
type SalePlan struct {
	Refusal error

	// Sale is the row written: the program's currency and the test amount
	// applied, its click the customer's when it named none.
	Sale Sale
	// Customer is the customer the sale is recorded on (nil: a test sale,
	// which has none); NewCustomer: it is created with the sale, from the
	// sale's click.
	Customer    *Customer
	NewCustomer bool
	// Converts: the customer has a partner and the sale is real, so the
	// customer converts (first paid at FirstPaid), its lead and its click
	// are marked converted and the operator's fee is charged.
	Converts  bool
	FirstPaid time.Time
	Fee       PlatformFee
	// Commission is written when set; NotDue tells why none is due.
	Commission *PlannedCommission
	NotDue     string
	// TrackingLog: the tracking log row is written with the sale.
	TrackingLog bool
	// StoredAnswer is an error answered although the sale is stored.
	StoredAnswer error

	SaleEndpoints, CommissionEndpoints []int64
}

// PlatformFee is the operator's fee on a sale.
type PlatformFee struct {
	RatePercent decimal.Decimal
	AmountMinor int64
}

// PlannedCommission is a commission a sale earns.
type PlannedCommission struct {
	AmountMinor  int64
	Currency     Currency
	ApproveAfter time.Time
	// PolicyID is the group terms version the commission was computed
	// with; nil for the program's own terms (the default group).
	PolicyID *int64
	// FirstOnly: written only if the customer has earned no commission
	// before (a program that pays first sales only). The write decides,
	// after the customer's lock is granted, so that it sees the commission
	// of a concurrent sale of the same customer.
	FirstOnly bool
}

// PlanSale decides a validated sale from its snapshot: refused (nothing
// written), a test sale, or a real sale with what follows from it. Its
// answers, in the spec's order: a test sale is recorded as such; a taken
// transaction id is 409; a sale naming no customer is 400; a customer
// that cannot be found, or a click of another program, is 400; a partner
// not enrolled is 400; a customer without partner stores the sale and
// answers 400; otherwise the commission is due or not by the program's
// terms.
func PlanSale(sale Sale, snap SaleSnapshot, feePercent decimal.Decimal, now time.Time) SalePlan {
	prog := snap.Program
	terms := snap.Terms()
	if sale.Currency == "" {
		sale.Currency = prog.Currency
	}
	if sale.AmountCents == 0 {
		sale.AmountCents = DefaultTestAmount(sale.Currency)
	}
	p := SalePlan{Sale: sale, TrackingLog: true, SaleEndpoints: snap.SaleEndpoints, CommissionEndpoints: snap.CommissionEndpoints}
	if sale.IsTest {
		if snap.DuplicateOf != 0 && !sale.GeneratedID {
			return refusedSale(DuplicateSale(snap.DuplicateOf))
		}
		return p
	}
	if snap.DuplicateOf != 0 {
		return refusedSale(DuplicateSale(snap.DuplicateOf))
	}
	cust := snap.Customer
	if cust == nil {
		switch c := snap.Click; {
		case sale.CustomerKey == "" && sale.ClickID == "":
			return refusedSale(NewError(EInvalid, MsgCustomerNotFound))
		case c == nil:
			return refusedSale(NewError(ENoAttribution, MsgCustomerNotFound))
		case c.ProgramID != prog.ID:
			return refusedSale(NewError(ENoAttribution, MsgNoAttribution))
		default:
			cust = &Customer{ID: snap.NewCustomerID, ProgramID: prog.ID, PartnerID: c.PartnerID, LinkID: c.LinkID,
				ClickID: c.ID, Status: FunnelClick, IsTest: c.IsTest}
			p.NewCustomer = true
		}
	}
	p.Customer = cust
	if p.Sale.ClickID == "" {
		p.Sale.ClickID = cust.ClickID
	}
	if cust.IsTest {
		// A customer of a test click (a test link: the CLI's synthetic
		// chain) buys in test: attributed, flagged, never paid.
		p.Sale.IsTest = true
		return p
	}
	if cust.PartnerID == nil {
		p.StoredAnswer = NewError(ENoAttribution, MsgPartnerRequired)
		return p
	}
	if !snap.Enrolled {
		return refusedSale(NewError(ENoAttribution, MsgNoRelationship))
	}
	p.Converts = true
	p.FirstPaid = sale.OccurredAt
	if cust.FirstPaidAt != nil && cust.FirstPaidAt.Before(p.FirstPaid) {
		p.FirstPaid = *cust.FirstPaidAt
	}
	p.Fee = PlatformFee{RatePercent: feePercent, AmountMinor: PercentOf(p.Sale.AmountCents, feePercent)}
	due, why := CommissionDue(terms, p.FirstPaid, sale.OccurredAt, false)
	if !due {
		p.NotDue = why
		return p
	}
	again, _ := CommissionDue(terms, p.FirstPaid, sale.OccurredAt, true)
	amount, cur := CommissionAmount(terms, p.Sale.AmountCents, p.Sale.Currency)
	p.Commission = &PlannedCommission{AmountMinor: amount, Currency: cur, ApproveAfter: ApproveAfter(terms, now), FirstOnly: !again}
	if snap.Policy != nil {
		id := snap.Policy.ID
		p.Commission.PolicyID = &id
	}
	return p
}

// Terms is the program as the commission of the snapshot's sale is
// computed: the program with the commission type, rate, duration and hold
// of the partner's group policy when it has one (a group other than the
// default), else the program itself.
func (snap SaleSnapshot) Terms() *Program {
	if snap.Policy == nil {
		return snap.Program
	}
	p := *snap.Program
	snap.Policy.Terms.applyTo(&p)
	return &p
}

func refusedSale(err error) SalePlan { return SalePlan{Refusal: err} }

// DuplicateSale is the 409 of a transaction id already recorded as sale
// id.
func DuplicateSale(id int64) error {
	return NewError(EDuplicateTransaction, MsgDuplicateTransaction).WithDetails(map[string]any{"sale_id": id})
}

// Fallbacks are the plans to write, in order, when the write of p fails
// for another reason than a taken transaction id: first without its
// tracking log (a counter: a failure to update it never fails a sale),
// then without its commission (the sale is stored and the call answers
// 500 Failed to create commission, as the spec asks), then without both.
func (p SalePlan) Fallbacks() []SalePlan {
	var out []SalePlan
	noLog := p
	noLog.TrackingLog = false
	if p.TrackingLog {
		out = append(out, noLog)
	}
	if p.Commission != nil {
		noCommission := p
		noCommission.Commission = nil
		noCommission.StoredAnswer = NewError(EInternal, MsgCommissionFailed)
		out = append(out, noCommission)
		if p.TrackingLog {
			noCommission.TrackingLog = false
			out = append(out, noCommission)
		}
	}
	return out
}

// WithTestID is a test sale sent without a transaction id planned again
// under its n-th made-up id (test_txn_<ms>_<n>, n from 2) when the ones
// before are taken; false when it named its own id, or after the tenth.
func (p SalePlan) WithTestID(base string, n int) (SalePlan, bool) {
	if !p.Sale.GeneratedID || n > 10 {
		return p, false
	}
	p.Sale.TransactionID = base + "_" + strconv.Itoa(n)
	return p, true
}

// SaleWritten is what the write of a planned sale reports.
type SaleWritten struct {
	// SaleID is 0 when the transaction id was taken meanwhile (nothing was
	// written).
	SaleID       int64
	OccurredAt   time.Time
	ClickID      string
	CommissionID int64 // 0: no commission written
	ApproveAfter time.Time
}

// BrandEvent is a webhook event for the program's endpoints.
type BrandEvent struct {
	Type      string
	Data      any
	Endpoints []int64
}

// SaleOutcome is the answer of a written sale and the brand events it
// sends. Taken: the transaction id was taken meanwhile; the call answers
// the 409 of the sale that took it.
type SaleOutcome struct {
	Taken  bool
	Result *SaleResult
	// Answer is an error answered although the sale is stored; Result
	// names the stored sale.
	Answer error
	Events []BrandEvent
}

// Outcome answers the plan once written.
func (p SalePlan) Outcome(w SaleWritten) (SaleOutcome, error) {
	if w.SaleID == 0 {
		return SaleOutcome{Taken: true}, nil
	}
	res := &SaleResult{SaleID: w.SaleID, ProgramID: p.Sale.ProgramID}
	switch {
	case p.Sale.IsTest:
		res.Test, res.Message = true, MsgTestSaleRecorded
		return SaleOutcome{Result: res}, nil
	case p.StoredAnswer != nil:
		return SaleOutcome{Result: res, Answer: p.StoredAnswer}, nil
	case w.CommissionID != 0:
		res.CommissionID = &w.CommissionID
		res.Message = MsgSaleRecorded
	case p.Commission != nil && p.Commission.FirstOnly, p.NotDue == NotDueNotFirst:
		res.Message = MsgSaleNotFirst
	case p.NotDue == NotDueDurationOver:
		res.Message = MsgSaleDurationOver
	default:
		return SaleOutcome{}, fmt.Errorf("sale %q: commission planned %v, written %v, not due because %q",
			p.Sale.TransactionID, p.Commission != nil, w.CommissionID != 0, p.NotDue)
	}
	return SaleOutcome{Result: res, Events: p.events(w)}, nil
}

// events are sale.created, and commission.created when the sale earned a
// commission.
func (p SalePlan) events(w SaleWritten) []BrandEvent {
	d := SaleEventData{
		SaleID: w.SaleID, ProgramID: p.Sale.ProgramID, TransactionID: p.Sale.TransactionID,
		AmountCents: p.Sale.AmountCents, Currency: string(p.Sale.Currency), CustomerID: &p.Customer.ID,
		PartnerID: p.Customer.PartnerID, SaleType: p.Sale.SaleType, IsRecurring: p.Sale.IsRecurring,
		OccurredAt: FormatTime(w.OccurredAt),
	}
	if w.ClickID != "" {
		d.ClickID = &w.ClickID
	}
	events := []BrandEvent{{Type: EventSaleCreated, Data: d, Endpoints: p.SaleEndpoints}}
	if w.CommissionID == 0 {
		return events
	}
	d.CommissionID = &w.CommissionID
	events[0].Data = d
	c := &Commission{
		ID: w.CommissionID, ProgramID: p.Sale.ProgramID, PartnerID: *p.Customer.PartnerID, SaleID: w.SaleID,
		TransactionID: p.Sale.TransactionID, Status: CommissionPending, AmountMinor: p.Commission.AmountMinor,
		Currency: p.Commission.Currency, ApproveAfter: w.ApproveAfter.UTC(),
	}
	return append(events, BrandEvent{Type: EventCommissionCreated, Data: CommissionCreatedData(c), Endpoints: p.CommissionEndpoints})
}
