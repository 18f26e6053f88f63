package ledger

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// Readiness is a program's integration verdict: five gates, checked in
// order (profile, economics, payout, tracking, live), each passing,
// failing or unknown, computed from what the service has recorded.

// Gate ids, in the order they are checked.
const (
	GateProfile   = "profile"
	GateEconomics = "economics"
	GatePayout    = "payout"
	GateTracking  = "tracking"
	GateLive      = "live"
)

// GateOrder lists the gates in the order they are checked; the blocker is
// the first one that does not pass.
var GateOrder = []string{GateProfile, GateEconomics, GatePayout, GateTracking, GateLive}

// Gate statuses.
const (
	GatePass    = "pass"
	GateFail    = "fail"
	GateUnknown = "unknown"
)

// Next actions a gate names when it does not pass.
const (
	ActionCompleteProfile   = "complete_program_profile"
	ActionSetCommission     = "set_commission_policy"
	ActionStripeConnect     = "surface_stripe_connect_url"
	ActionInstallTracker    = "install_tracker_or_send_events"
	ActionRunSyntheticChain = "run_synthetic_sale_chain"
)

// Readiness states, from the least to the most advanced.
const (
	StateDraft               = "draft"                // profile or economics incomplete
	StateConfiguring         = "configuring"          // payout or tracking not seen yet
	StateReady               = "ready"                // everything but the live check passes
	StateIntegrationVerified = "integration_verified" // every gate passes
	StateLiveVerified        = "live_verified"        // every gate passes and a real sale was attributed
)

// Payout modes.
const (
	PayoutStripe = "stripe" // a connected processor account reports sales
	PayoutS2S    = "s2s"    // the brand's server calls the sale endpoint
)

// Paths a gate points at; the edge prefixes its public base URL.
const (
	PathStripeWebhook = "/api/v1/webhooks/stripe"
	PathSaleEndpoint  = "/api/v1/track/sale"
)

// ReadinessPollSeconds is how long a client waits between readiness polls.
const ReadinessPollSeconds = 5

// Tracking-log sources the CLI writes, which readiness never counts as
// the brand's integration.
const (
	LogSourceCLITest        = "cli_test"        // single test events
	LogSourceSyntheticChain = "synthetic_chain" // the chain's lead and sale
)

// ReadinessFacts are what readiness is computed from. Event times and
// counts cover what the brand's integration sent: real clicks, and leads
// and sales (test-mode calls included), never what the CLI made itself.
type ReadinessFacts struct {
	Program            *Program
	ProcessorConnected bool       // a processor account is connected to the program
	ServerSaleAt       *time.Time // last sale reported with the program key on the sale endpoint (test mode included)
	KeyUsedAt          *time.Time // last tracking call authenticated with the program key (server lead, sale, refund)
	LastClickAt        *time.Time
	LastLeadAt         *time.Time
	LastSaleAt         *time.Time
	Counts24h          EventCounts
	KeyRotatedAt       *time.Time // when the owner last generated the live key; nil when never
	LastChain          *ChainRun  // the latest synthetic chain, nil when none ran
	RealAttributedSale bool       // a real (non-test) sale reached a partner
}

// Gate is one gate's verdict.
type Gate struct {
	Status     string
	NextAction string // "" when the gate passes

	Mode      string         // payout: stripe or s2s
	Endpoint  string         // payout: the path that receives sales
	Detail    string         // tracking: what was seen
	CheckedAt time.Time      // tracking: when it was computed
	TestChain *ChainVerdicts // live: the latest chain's verdicts
}

// Readiness is the verdict.
type Readiness struct {
	ProgramID           int64
	State               string
	IntegrationVerified bool
	Blocker             string // the first gate that does not pass; "" when none
	Gates               map[string]Gate
	Facts               ReadinessFacts
}

// EvaluateReadiness computes the gates from the facts.
func EvaluateReadiness(f ReadinessFacts, now time.Time) Readiness {
	r := Readiness{ProgramID: f.Program.ID, Facts: f, Gates: make(map[string]Gate, len(GateOrder))}
	p := f.Program

	profile := Gate{Status: GatePass}
	if strings.TrimSpace(p.Name) == "" || strings.TrimSpace(p.Domain) == "" {
		profile = Gate{Status: GateFail, NextAction: ActionCompleteProfile}
	}
	r.Gates[GateProfile] = profile

	economics := Gate{Status: GatePass}
	if !p.CommissionType.valid() || !p.CommissionRate.IsPositive() {
		economics = Gate{Status: GateFail, NextAction: ActionSetCommission}
	}
	r.Gates[GateEconomics] = economics

	var payout Gate
	switch {
	case f.ProcessorConnected:
		payout = Gate{Status: GatePass, Mode: PayoutStripe, Endpoint: PathStripeWebhook}
	case f.ServerSaleAt != nil:
		payout = Gate{Status: GatePass, Mode: PayoutS2S, Endpoint: PathSaleEndpoint}
	default:
		payout = Gate{Status: GateFail, NextAction: ActionStripeConnect, Endpoint: PathSaleEndpoint}
	}
	r.Gates[GatePayout] = payout

	tracking := Gate{Status: GateFail, NextAction: ActionInstallTracker, CheckedAt: now, Detail: trackingDetail(f)}
	if f.LastClickAt != nil || f.LastLeadAt != nil || f.LastSaleAt != nil {
		tracking.Status, tracking.NextAction = GatePass, ""
	}
	r.Gates[GateTracking] = tracking

	live := Gate{Status: GateUnknown, NextAction: ActionRunSyntheticChain}
	if f.LastChain != nil {
		v := f.LastChain.Verdict
		live.TestChain = &v
		live.Status = GateFail
	}
	if (f.LastChain != nil && f.LastChain.Verdict.Passed()) || f.RealAttributedSale {
		live.Status, live.NextAction = GatePass, ""
	}
	r.Gates[GateLive] = live

	for _, id := range GateOrder {
		if r.Gates[id].Status != GatePass {
			r.Blocker = id
			break
		}
	}
	r.IntegrationVerified = r.Blocker == ""
	switch r.Blocker {
	case GateProfile, GateEconomics:
		r.State = StateDraft
	case GatePayout, GateTracking:
		r.State = StateConfiguring
	case GateLive:
		r.State = StateReady
	default:
		r.State = StateIntegrationVerified
		if f.RealAttributedSale {
			r.State = StateLiveVerified
		}
	}
	return r
}

// trackingDetail says in a line what the tracking gate saw.
func trackingDetail(f ReadinessFacts) string {
	var seen []string
	if f.LastClickAt != nil {
		seen = append(seen, "clicks from the tracker")
	}
	if f.KeyUsedAt != nil {
		seen = append(seen, "server calls with the API key")
	}
	if f.LastLeadAt != nil && f.KeyUsedAt == nil {
		seen = append(seen, "browser leads")
	}
	if len(seen) == 0 {
		return "No clicks, leads or sales seen yet: install the tracker or send events with the API key."
	}
	c := f.Counts24h
	return "Seen: " + strings.Join(seen, ", ") + ". Last 24 hours: " +
		strconv.FormatInt(c.Clicks, 10) + " clicks, " + strconv.FormatInt(c.Leads, 10) + " leads, " +
		strconv.FormatInt(c.Sales, 10) + " sales."
}

// ReadinessService reads the facts of readiness.
type ReadinessService interface {
	// ReadinessFacts reads a program's facts as of now (the 24-hour
	// counts end at now). Errors: ENotFound.
	ReadinessFacts(ctx context.Context, programID int64, now time.Time) (*ReadinessFacts, error)
}
