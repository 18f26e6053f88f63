package bench

import (
	"fmt"
	"strings"
)

// The ceilings issue 10 gives for the machine its targets were set on:
// a bare fiber handler at about 83 k req/s, the same with one enqueue
// at about 27 k, the raw sale transaction at 2.6 k tx/s.
const (
	issueBare    = 83000
	issueEnqueue = 27000
	issueRaw     = 2600
)

// speedFact names machineSpeed's line among the other figures.
const speedFact = "this machine's speed"

// machineSpeed tells how this run's ceilings compare with the issue's
// (those it measured: a phase run alone may measure only the raw sale
// transaction). The targets hold whatever the machine's speed: the ratio
// ones compare with ceilings of the same run, and the fixed-rate phases
// run at shares of them (issue 29), so a slower machine is asked the same
// share of its cores.
func machineSpeed(ceil map[string]float64) string {
	var ratios, figures []string
	for _, c := range []struct {
		key, name, figure string
		issue             float64
	}{
		{"bare", "bare fiber", "83 k req/s", issueBare},
		{"enqueue", "fiber+enqueue", "27 k req/s", issueEnqueue},
		{"raw", "raw sale transaction", "2.6 k tx/s", issueRaw},
	} {
		if v, ok := ceil[c.key]; ok {
			ratios = append(ratios, fmt.Sprintf("%s %.2f×", c.name, v/c.issue))
			figures = append(figures, c.figure)
		}
	}
	wrk := ""
	if _, ok := ceil["bare"]; ok {
		wrk = "; the first two with wrk, which read 10–35 % above this load generator side by side"
	}
	return fmt.Sprintf("%s the issue's figures (%s%s); the fixed-rate phases run at shares of this run's ceilings, so they ask a slower machine for the same share of its cores",
		strings.Join(ratios, ", "), strings.Join(figures, ", "), wrk)
}

// noticeableSteal is the share of the CPU stolen by the hypervisor above
// which a row's note says so.
const noticeableSteal = 0.02

// stolen tells the share of the machine's CPU time the hypervisor gave to
// other guests (steal time in /proc/stat): time the service and the load
// generator were ready to run and did not.
func stolen(share float64) string {
	return fmt.Sprintf("the hypervisor took %.0f %% of the CPU time (steal)", 100*share)
}
