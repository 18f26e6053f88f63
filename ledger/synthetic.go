package ledger

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"
)

// The synthetic verification chain proves that a program attributes: it
// sends one click on the program's test link, a server-mode lead for that
// click and a sale for the lead's customer through the same services that
// serve the tracking endpoints, and reports, step by step, whether each
// reached the test partner. The test partner and link (the fixture) are
// created on the first run and refreshed on every run; the link is a test
// link, so the click, its customer, the lead and the sale are all test
// events: never listed, counted or paid.

// ChainVerdict is the outcome of one step of the chain.
type ChainVerdict string

// Step outcomes: a step passes only when attributed.
const (
	VerdictAttributed   ChainVerdict = "attributed"    // the step reached the test partner
	VerdictUnattributed ChainVerdict = "unattributed"  // the step found no partner, or was refused
	VerdictWrongPartner ChainVerdict = "wrong_partner" // the step reached another partner
	VerdictPending      ChainVerdict = "pending"       // the step did not run (an earlier one failed)
)

// The chain's own cap (spec Limits rule 4), checked inside the endpoint
// after the fixture is ready.
const (
	ChainCapRuns   = 10
	ChainCapWindow = time.Hour
)

// Prefixes of what the CLI makes, so that no caller's ids collide with
// them and readiness can tell them apart.
const (
	SyntheticChainPrefix = "synthetic_chain_"
	SyntheticTestPrefix  = "synthetic_test_"
	// SyntheticUserAgent is the user agent of the chain's clicks.
	SyntheticUserAgent = "partnertrack-synthetic-chain/1"
)

// Messages of single test events.
const (
	MsgTestClickRecorded = "Test click recorded; it is flagged as a test and never counts, shows or pays"
	MsgTestLeadRecorded  = "Test lead recorded; it is flagged as a test and never counts, shows or pays"
	MsgTestSaleEvent     = "Test sale recorded; it is flagged as a test and never counts, shows or pays"
)

// ChainVerdicts are the outcomes of the three steps.
type ChainVerdicts struct {
	Click ChainVerdict
	Lead  ChainVerdict
	Sale  ChainVerdict
}

// Attributed reports whether the chain's sale reached the test partner
// (the reference clients' "attributed").
func (v ChainVerdicts) Attributed() bool { return v.Sale == VerdictAttributed }

// Passed reports whether every step reached the test partner.
func (v ChainVerdicts) Passed() bool {
	return v.Click == VerdictAttributed && v.Lead == VerdictAttributed && v.Sale == VerdictAttributed
}

// partnerVerdict compares the partner a step reached with the test
// partner.
func partnerVerdict(got *int64, want int64) ChainVerdict {
	switch {
	case got == nil:
		return VerdictUnattributed
	case *got != want:
		return VerdictWrongPartner
	}
	return VerdictAttributed
}

// SyntheticFixture is a program's test partner and test link.
type SyntheticFixture struct {
	ProgramID int64
	PartnerID int64
	LinkID    int64
	Code      string // the test link's referral code (the chain's short_code)
	Domain    string // the program's domain, for the click's landing URL
	Currency  Currency
	// Changed reports that the link was created or changed (reactivated):
	// caches of links must drop it.
	Changed bool
}

// ChainRun is one run of the chain: what each step made and its verdict.
type ChainRun struct {
	ID            int64
	ProgramID     int64
	LinkID        int64
	ShortCode     string
	CustomerKey   string
	ClickID       string
	LeadID        *int64
	SaleID        *int64
	TransactionID string
	Verdict       ChainVerdicts
	CreatedAt     time.Time
}

// SyntheticStore keeps the fixture, reads what the chain's steps reached,
// records runs and writes single test events.
type SyntheticStore interface {
	// EnsureFixture creates the program's test partner (flagged, enrolled)
	// and test link, or refreshes them (link active, pointing at the test
	// partner, enrolment active). Errors: ENotFound (program).
	EnsureFixture(ctx context.Context, programID int64) (*SyntheticFixture, error)
	// CustomerPartner returns the partner of a customer (nil when none).
	// Errors: ENotFound.
	CustomerPartner(ctx context.Context, customerID int64) (*int64, error)
	// SalePartner returns the partner of a sale (nil when none).
	// Errors: ENotFound.
	SalePartner(ctx context.Context, saleID int64) (*int64, error)
	// RecordChain stores a run (setting its ID and CreatedAt) and marks
	// the tracking log rows of its lead and sale as the chain's, so that
	// readiness never mistakes them for the brand's integration.
	RecordChain(ctx context.Context, run *ChainRun) error
	// TestLead stores one flagged test lead and its tracking log row
	// (source cli_test). It returns the lead id.
	TestLead(ctx context.Context, programID int64, customerKey string) (int64, error)
	// TestSale stores one flagged test sale of one major unit of the
	// program's currency and its tracking log row (source cli_test). It
	// returns the sale id.
	TestSale(ctx context.Context, programID int64, transactionID string) (int64, error)
}

// ChainCap counts the chain's runs per program: at most ChainCapRuns in
// any ChainCapWindow. Take reports whether a run is allowed and, when it
// is not, the seconds until one is.
type ChainCap interface {
	Take(ctx context.Context, key string) (allowed bool, retryAfterSeconds int, err error)
}

// ClickRecorder records a click the way the click endpoint does (the
// TrafficRecorder's click half): once it returns, the click is durable and
// a lead or sale can resolve its id, from Postgres or from the record of a
// click still in the queue.
type ClickRecorder interface {
	RecordClick(ctx context.Context, c *Click) error
}

// Synthetic runs the CLI's test events and the synthetic chain through
// the services of the tracking endpoints: the click endpoint's link
// lookup (Links, the edge's link cache) and click pipeline (Clicks, the
// group commit into the clicks queue), the lead service and the sale
// service.
type Synthetic struct {
	Store SyntheticStore
	Cap   ChainCap
	Links TrackingDirectory
	// LinkCache, when set, drops the fixture's link on every edge
	// instance after EnsureFixture created or reactivated it.
	LinkCache TrackingInvalidator
	Clicks    ClickRecorder
	Leads     LeadService
	Sales     SaleService
	Now       func() time.Time
	Logger    *slog.Logger
}

func (s *Synthetic) now() time.Time {
	if s.Now == nil {
		return time.Now().UTC()
	}
	return s.Now().UTC()
}

// ErrChainCap is the refusal of a chain over the cap: 429 in the typed
// envelope, code rate_limited.
func ErrChainCap(retryAfterSeconds int) *Error {
	return &Error{Code: ERateLimited, Message: MsgChainCap,
		Details: map[string]any{"retry_after_seconds": retryAfterSeconds}}
}

// RunChain runs the chain for a program. The fixture is created or
// refreshed before the cap is checked (the spec: the fixture may already
// have been created when the cap refuses the run). A step that is refused
// (attribution failed) ends the chain: its verdict says so and the later
// steps stay pending. Errors: ENotFound (program), ERateLimited (the cap,
// with details.retry_after_seconds); anything else is unexpected.
func (s *Synthetic) RunChain(ctx context.Context, programID int64) (*ChainRun, error) {
	fx, err := s.fixture(ctx, programID)
	if err != nil {
		return nil, err
	}
	allowed, retry, err := s.Cap.Take(ctx, "chain:"+strconv.FormatInt(programID, 10))
	if err != nil {
		// The cap guards against floods; an outage of its store must not
		// stop verification, as an outage of the rate limiter stops nothing.
		if s.Logger != nil {
			s.Logger.Warn("synthetic chain cap unavailable; run allowed", "program_id", programID, "err", err)
		}
	} else if !allowed {
		return nil, ErrChainCap(retry)
	}

	run := &ChainRun{ProgramID: programID, LinkID: fx.LinkID, ShortCode: fx.Code,
		Verdict: ChainVerdicts{Click: VerdictPending, Lead: VerdictPending, Sale: VerdictPending}}
	click, err := s.click(ctx, fx)
	if err != nil {
		return nil, err
	}
	run.CustomerKey = SyntheticChainPrefix + NewClickID(s.now())
	if click == nil {
		// The link did not resolve to a usable, active link of the program:
		// no click was recorded.
		run.Verdict.Click = VerdictUnattributed
		return run, s.Store.RecordChain(ctx, run)
	}
	run.ClickID = click.ID
	run.CustomerKey = SyntheticChainPrefix + click.ID
	run.TransactionID = SyntheticChainPrefix + click.ID
	run.Verdict.Click = partnerVerdict(click.PartnerID, fx.PartnerID)

	if err := s.lead(ctx, fx, run); err != nil {
		return nil, err
	}
	if run.LeadID != nil {
		if err := s.sale(ctx, fx, run); err != nil {
			return nil, err
		}
	}
	if err := s.Store.RecordChain(ctx, run); err != nil {
		return nil, err
	}
	return run, nil
}

// fixture creates or refreshes the program's test partner and link, and
// drops the link from the link caches when it changed.
func (s *Synthetic) fixture(ctx context.Context, programID int64) (*SyntheticFixture, error) {
	fx, err := s.Store.EnsureFixture(ctx, programID)
	if err != nil {
		return nil, err
	}
	if fx.Changed && s.LinkCache != nil {
		if err := s.LinkCache.InvalidateLink(ctx, fx.Code); err != nil && s.Logger != nil {
			s.Logger.Warn("synthetic link invalidation not published", "program_id", programID, "err", err)
		}
	}
	return fx, nil
}

// click records one click on the fixture's link the way the click
// endpoint does: the referral code read from a landing URL, resolved by
// the link directory, the click (a test click: the link is a test link)
// made durable by the click recorder. It returns nil, and records nothing,
// when the code does not resolve to an active link of the program with a
// partner.
func (s *Synthetic) click(ctx context.Context, fx *SyntheticFixture) (*Click, error) {
	landing := "https://" + fx.Domain + "/?" + ReferralParam + "=" + fx.Code
	code, err := ReferralCode(landing)
	if err != nil {
		return nil, err
	}
	link, err := s.Links.ReferralLink(ctx, code)
	if ErrorCode(err) == ENotFound {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	if !link.Usable() || !link.Active || link.Program.ProgramID != fx.ProgramID {
		return nil, nil
	}
	id := NewClickID(s.now())
	at, _ := ClickTime(id)
	linkID := link.LinkID
	c := &Click{
		ID: id, OccurredAt: at, ProgramID: link.Program.ProgramID, PartnerID: link.PartnerID, LinkID: &linkID,
		IsTest:    true,
		PageURL:   landing,
		UserAgent: SyntheticUserAgent,
	}
	if err := s.Clicks.RecordClick(ctx, c); err != nil {
		return nil, err
	}
	return c, nil
}

// refused reports whether err is a step's refusal (attribution failed)
// rather than an unexpected failure.
func refused(err error) bool {
	switch ErrorCode(err) {
	case EInvalid, ENoAttribution, ENotFound, EForbidden:
		return true
	}
	return false
}

// lead sends the chain's server-mode lead for its click, with the chain's
// customer key.
func (s *Synthetic) lead(ctx context.Context, fx *SyntheticFixture, run *ChainRun) error {
	res, err := s.Leads.TrackLead(ctx, LeadRequest{
		Mode: LeadModeServer, ProgramID: fx.ProgramID, ClickID: run.ClickID, CustomerKey: run.CustomerKey,
		EventName: "synthetic_chain",
	})
	if refused(err) {
		run.Verdict.Lead = VerdictUnattributed
		return nil
	} else if err != nil {
		return err
	}
	run.LeadID = &res.LeadID
	partner, err := s.Store.CustomerPartner(ctx, res.CustomerID)
	if err != nil {
		return err
	}
	run.Verdict.Lead = partnerVerdict(partner, fx.PartnerID)
	return nil
}

// sale sends the chain's sale, attributed by the customer key the lead
// saved: one major unit of the program's currency.
func (s *Synthetic) sale(ctx context.Context, fx *SyntheticFixture, run *ChainRun) error {
	res, err := s.Sales.RecordSale(ctx, SaleRequest{
		ProgramID:     fx.ProgramID,
		TransactionID: Some(run.TransactionID),
		AmountCents:   Some(DefaultTestAmount(fx.Currency)),
		Currency:      Some(string(fx.Currency)),
		CustomerKey:   Some(run.CustomerKey),
		EventName:     Some("synthetic_chain"),
	})
	if refused(err) {
		run.Verdict.Sale = VerdictUnattributed
		return nil
	} else if err != nil {
		return err
	}
	run.SaleID = &res.SaleID
	partner, err := s.Store.SalePartner(ctx, res.SaleID)
	if err != nil {
		return err
	}
	run.Verdict.Sale = partnerVerdict(partner, fx.PartnerID)
	return nil
}

// TestEvent records one flagged test event of eventType (click, lead or
// sale) in the program. A test click is a click on the fixture's test
// link; a test lead and a test sale are stored directly, flagged, with
// tracking log rows that readiness knows as the CLI's. Errors: EInvalid
// (an unknown type), ENotFound (program).
func (s *Synthetic) TestEvent(ctx context.Context, programID int64, eventType string) (*TestEventResult, error) {
	stamp := NewClickID(s.now())
	switch eventType {
	case TestEventClick:
		fx, err := s.fixture(ctx, programID)
		if err != nil {
			return nil, err
		}
		c, err := s.click(ctx, fx)
		if err != nil {
			return nil, err
		}
		if c == nil {
			return nil, fmt.Errorf("synthetic: the test link %s of program %d does not resolve", fx.Code, programID)
		}
		return &TestEventResult{EventType: eventType, EventID: c.ID}, nil
	case TestEventLead:
		id, err := s.Store.TestLead(ctx, programID, SyntheticTestPrefix+stamp)
		if err != nil {
			return nil, err
		}
		return &TestEventResult{EventType: eventType, EventID: strconv.FormatInt(id, 10)}, nil
	case TestEventSale:
		id, err := s.Store.TestSale(ctx, programID, SyntheticTestPrefix+stamp)
		if err != nil {
			return nil, err
		}
		return &TestEventResult{EventType: eventType, EventID: strconv.FormatInt(id, 10)}, nil
	}
	return nil, NewError(EInvalid, MsgInvalidEventType(eventType))
}

// SyntheticService runs the CLI's test events and synthetic chains;
// *Synthetic implements it.
type SyntheticService interface {
	RunChain(ctx context.Context, programID int64) (*ChainRun, error)
	TestEvent(ctx context.Context, programID int64, eventType string) (*TestEventResult, error)
}

var _ SyntheticService = (*Synthetic)(nil)
