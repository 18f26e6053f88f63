package ledger

import (
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

func TestEvaluateReadiness(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := now.Add(-time.Hour)
	program := func() *Program {
		return &Program{ID: 5, Name: "Acme", Domain: "acme.example", CommissionType: Percent, CommissionRate: decimal.NewFromInt(20)}
	}
	passed := &ChainRun{Verdict: ChainVerdicts{Click: VerdictAttributed, Lead: VerdictAttributed, Sale: VerdictAttributed}, CreatedAt: at}
	failed := &ChainRun{Verdict: ChainVerdicts{Click: VerdictAttributed, Lead: VerdictUnattributed, Sale: VerdictPending}, CreatedAt: at}
	type gateWant struct{ status, next string }
	cases := []struct {
		desc        string
		facts       func(f *ReadinessFacts)
		wantState   string
		wantBlocker string
		gates       map[string]gateWant
		payoutMode  string
	}{
		{
			desc:        "draft: a program without a domain",
			facts:       func(f *ReadinessFacts) { f.Program.Domain = " " },
			wantState:   StateDraft,
			wantBlocker: GateProfile,
			gates:       map[string]gateWant{GateProfile: {GateFail, ActionCompleteProfile}, GateEconomics: {GatePass, ""}},
		},
		{
			desc:        "draft: no commission rate",
			facts:       func(f *ReadinessFacts) { f.Program.CommissionRate = decimal.Zero },
			wantState:   StateDraft,
			wantBlocker: GateEconomics,
			gates:       map[string]gateWant{GateEconomics: {GateFail, ActionSetCommission}},
		},
		{
			desc:        "configuring: nothing seen yet",
			facts:       func(f *ReadinessFacts) {},
			wantState:   StateConfiguring,
			wantBlocker: GatePayout,
			gates: map[string]gateWant{GatePayout: {GateFail, ActionStripeConnect}, GateTracking: {GateFail, ActionInstallTracker},
				GateLive: {GateUnknown, ActionRunSyntheticChain}},
		},
		{
			desc:        "configuring: Stripe connected, no events",
			facts:       func(f *ReadinessFacts) { f.ProcessorConnected = true },
			wantState:   StateConfiguring,
			wantBlocker: GateTracking,
			gates:       map[string]gateWant{GatePayout: {GatePass, ""}, GateTracking: {GateFail, ActionInstallTracker}},
			payoutMode:  PayoutStripe,
		},
		{
			desc: "ready: server sales and clicks seen, no chain yet",
			facts: func(f *ReadinessFacts) {
				f.ServerSaleAt, f.LastSaleAt, f.LastClickAt, f.KeyUsedAt = &at, &at, &at, &at
			},
			wantState:   StateReady,
			wantBlocker: GateLive,
			gates:       map[string]gateWant{GatePayout: {GatePass, ""}, GateTracking: {GatePass, ""}, GateLive: {GateUnknown, ActionRunSyntheticChain}},
			payoutMode:  PayoutS2S,
		},
		{
			desc: "ready: the last chain failed",
			facts: func(f *ReadinessFacts) {
				f.ServerSaleAt, f.LastLeadAt, f.LastChain = &at, &at, failed
			},
			wantState:   StateReady,
			wantBlocker: GateLive,
			gates:       map[string]gateWant{GateLive: {GateFail, ActionRunSyntheticChain}},
			payoutMode:  PayoutS2S,
		},
		{
			desc: "integration verified: the last chain attributed every step",
			facts: func(f *ReadinessFacts) {
				f.ProcessorConnected, f.LastClickAt, f.LastChain = true, &at, passed
			},
			wantState: StateIntegrationVerified,
			gates: map[string]gateWant{GateProfile: {GatePass, ""}, GateEconomics: {GatePass, ""}, GatePayout: {GatePass, ""},
				GateTracking: {GatePass, ""}, GateLive: {GatePass, ""}},
			payoutMode: PayoutStripe,
		},
		{
			desc: "live verified: a real sale reached a partner, no chain needed",
			facts: func(f *ReadinessFacts) {
				f.ServerSaleAt, f.LastSaleAt, f.RealAttributedSale = &at, &at, true
			},
			wantState:  StateLiveVerified,
			gates:      map[string]gateWant{GateLive: {GatePass, ""}},
			payoutMode: PayoutS2S,
		},
	}
	for _, c := range cases {
		t.Run(c.desc, func(t *testing.T) {
			f := ReadinessFacts{Program: program()}
			c.facts(&f)
			r := EvaluateReadiness(f, now)
			if r.State != c.wantState || r.Blocker != c.wantBlocker || r.IntegrationVerified != (c.wantBlocker == "") {
				t.Fatalf("state %s blocker %q verified %v; want %s %q", r.State, r.Blocker, r.IntegrationVerified, c.wantState, c.wantBlocker)
			}
			if len(r.Gates) != len(GateOrder) {
				t.Fatalf("%d gates", len(r.Gates))
			}
			for id, w := range c.gates {
				g := r.Gates[id]
				if g.Status != w.status || g.NextAction != w.next {
					t.Fatalf("gate %s = %s/%q, want %s/%q", id, g.Status, g.NextAction, w.status, w.next)
				}
			}
			if c.payoutMode != "" && r.Gates[GatePayout].Mode != c.payoutMode {
				t.Fatalf("payout mode %q, want %q", r.Gates[GatePayout].Mode, c.payoutMode)
			}
			if tr := r.Gates[GateTracking]; !tr.CheckedAt.Equal(now) || tr.Detail == "" {
				t.Fatalf("tracking gate %+v", tr)
			}
		})
	}
	t.Run("the live gate carries the last chain's verdicts", func(t *testing.T) {
		r := EvaluateReadiness(ReadinessFacts{Program: program(), LastChain: failed}, now)
		if tc := r.Gates[GateLive].TestChain; tc == nil || *tc != failed.Verdict {
			t.Fatalf("test_chain %+v", tc)
		}
	})
	t.Run("the tracking detail names what was seen", func(t *testing.T) {
		f := ReadinessFacts{Program: program(), LastClickAt: &at, KeyUsedAt: &at, Counts24h: EventCounts{Clicks: 3, Leads: 2, Sales: 1}}
		d := EvaluateReadiness(f, now).Gates[GateTracking].Detail
		for _, want := range []string{"clicks from the tracker", "server calls with the API key", "3 clicks, 2 leads, 1 sales"} {
			if !strings.Contains(d, want) {
				t.Fatalf("detail %q lacks %q", d, want)
			}
		}
	})
}
