package service

import "runtime"

// Procs is a binary's default GOMAXPROCS: how many threads run its Go
// code at once (0 leaves the runtime's own choice).
type Procs int

// WorkerProcs is the worker's: one. A worker runs one click insert at a
// time and its other queues wait on Postgres, Redis or a brand's
// receiver, so a second thread drained no faster, while on a machine it
// shared with an edge it cost the edge CPU and its answers time
// (docs/decisions.md, "One thread for the worker"). Scale a worker by
// processes.
const WorkerProcs Procs = 1

// Apply sets the default unless GOMAXPROCS is set in the environment
// (the runtime has read it itself), and returns what it set (0: nothing).
func (p Procs) Apply(getenv func(string) string) int {
	if getenv("GOMAXPROCS") != "" || p <= 0 {
		return 0
	}
	runtime.GOMAXPROCS(int(p))
	return int(p)
}
