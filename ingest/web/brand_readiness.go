package web

import (
	"fmt"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// check is one line of the overview's readiness checklist: a gate of the
// readiness answer, whether it passes, and what to do next when not.
type check struct {
	Label  string
	Status string // pass, fail or unknown, as the API says
	Next   string // what to do next, in words
	Detail string // what the API saw (tracking), or where sales go (payout)
	Tab    string // the program's tab where it is done, "" for none
}

// OK reports whether the gate passes.
func (c check) OK() bool { return c.Status == "pass" }

// nextSteps say in words what the readiness answer's next_action codes
// ask for, and on which tab of the program it is done.
var nextSteps = map[string]struct{ text, tab string }{
	"complete_program_profile":       {"Give the program a name and a domain.", "settings"},
	"set_commission_policy":          {"Set the commission type and a positive rate.", "settings"},
	"surface_stripe_connect_url":     {"Connect Stripe, or send your sales from your server to the sale endpoint.", "settings"},
	"install_tracker_or_send_events": {"Install the tracker snippet on your site, or send events with the API key.", "settings"},
	"run_synthetic_sale_chain":       {"Run a test click, lead and sale to check the whole chain, or wait for a first real sale through a partner.", ""},
}

// readinessChecks turns the readiness answer into the checklist, in the
// order the API checks the gates.
func readinessChecks(r *apiclient.ProgramMeReadiness) []check {
	g := r.Gates
	out := []check{
		gateCheck("Program profile", string(g.Profile.Status), (*string)(g.Profile.NextAction)),
		gateCheck("Commission terms", string(g.Economics.Status), (*string)(g.Economics.NextAction)),
		gateCheck("Sales reach partnertrack", string(g.Payout.Status), (*string)(g.Payout.NextAction)),
		gateCheck("Tracking", string(g.Tracking.Status), (*string)(g.Tracking.NextAction)),
		gateCheck("Live test", string(g.Live.Status), (*string)(g.Live.NextAction)),
	}
	if g.Payout.Endpoint != nil {
		mode := "the sale endpoint"
		if g.Payout.Mode != nil && *g.Payout.Mode == "stripe" {
			mode = "the Stripe webhook"
		}
		out[2].Detail = fmt.Sprintf("Sales arrive at %s: %s", mode, *g.Payout.Endpoint)
	}
	out[3].Detail = g.Tracking.Detail
	return out
}

func gateCheck(label, status string, next *string) check {
	c := check{Label: label, Status: status}
	if next != nil && *next != "" {
		if s, ok := nextSteps[*next]; ok {
			c.Next, c.Tab = s.text, s.tab
		} else {
			c.Next = *next // a step this page has no words for yet: the API's code
		}
	}
	return c
}

// readinessView is the checklist section of the overview.
type readinessView struct {
	State  string
	Checks []check
}

// readinessStates say where the program stands, after the answer's state.
var readinessStates = map[string]string{
	"draft":                "Draft: the program's profile or commission terms are missing.",
	"configuring":          "Configuring: sales or tracking do not reach partnertrack yet.",
	"ready":                "Ready: everything is set up; a live test or a first real sale will verify it.",
	"integration_verified": "Integration verified: tracking and sales work end to end.",
	"live_verified":        "Live: a real sale has reached a partner.",
}

func newReadinessView(resp *apiclient.GetProgramReadinessResponse) *readinessView {
	if resp == nil || resp.JSON200 == nil {
		return nil
	}
	r := resp.JSON200
	state, ok := readinessStates[string(r.State)]
	if !ok {
		state = string(r.State)
	}
	return &readinessView{State: state, Checks: readinessChecks(r)}
}
