package service

import (
	"runtime/debug"
)

// GC defaults of a binary: how much the heap may grow between
// collections (percent, as GOGC) and the soft memory limit near which it
// collects more often anyway (bytes, as GOMEMLIMIT).
type GC struct {
	Percent int
	Limit   int64
}

// Edge's and worker's GC defaults. At full click load both allocate
// hundreds of megabytes a second over a live heap of a few tens, and with
// Go's default (GOGC=100) collected several times a second, each time
// shrinking the stacks the next requests grow again; collecting a quarter
// as often costs memory that the soft limit bounds below the RSS bounds
// of make bench (150 MB edge, 256 MB worker). docs/decisions.md, "Click
// intake and sustained clicks on a shared box", has the measurements.
var (
	EdgeGC   = GC{Percent: 400, Limit: 100 << 20}
	WorkerGC = GC{Percent: 400, Limit: 160 << 20}
)

// Apply sets the defaults a GOGC or GOMEMLIMIT of the environment has not
// set (the runtime has read those itself), and returns what it set.
func (g GC) Apply(getenv func(string) string) (percent int, limit int64) {
	if getenv("GOGC") == "" && g.Percent != 0 {
		debug.SetGCPercent(g.Percent)
		percent = g.Percent
	}
	if getenv("GOMEMLIMIT") == "" && g.Limit > 0 {
		debug.SetMemoryLimit(g.Limit)
		limit = g.Limit
	}
	return percent, limit
}
