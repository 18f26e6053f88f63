package bench

import "fmt"

// The ceilings issue 10 gives for the machine its targets were set on:
// a bare fiber handler at about 83 k req/s, the same with one enqueue
// at about 27 k, the raw sale transaction at 2.6 k tx/s.
const (
	issueBare    = 83000
	issueEnqueue = 27000
	issueRaw     = 2600
)

// machineSpeed tells how this run's ceilings compare with the issue's.
// The ratio targets hold whatever the machine's speed, but the
// fixed-rate ones (1 k sales or refunds a second, 10 k clicks a second)
// ask a slower machine for a larger share of its cores.
func machineSpeed(ceil map[string]float64) string {
	return fmt.Sprintf("bare fiber %.2f×, fiber+enqueue %.2f×, raw sale transaction %.2f× the issue's figures "+
		"(83 k req/s, 27 k req/s, 2.6 k tx/s; the first two with wrk, which read 10–35 %% above this load generator side by side); "+
		"the fixed-rate targets ask a slower machine for a larger share of its cores",
		ceil["bare"]/issueBare, ceil["enqueue"]/issueEnqueue, ceil["raw"]/issueRaw)
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
