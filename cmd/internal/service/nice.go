package service

import "fmt"

// Nice is a binary's default CPU priority, counted as nice(1) counts it:
// 0 is a normal process's, 19 the lowest.
type Nice int

// WorkerNice is the worker's: 10. A worker drains queues the edge has
// already answered for, while the edge answers brands' and browsers'
// calls; on a machine they share, the edge's answers come first and the
// worker takes the CPU left over (docs/decisions.md, "The worker below
// the edge").
const WorkerNice Nice = 10

// Check tells whether n is a niceness a process may lower itself to.
func (n Nice) Check() error {
	if n < 0 || n > 19 {
		return fmt.Errorf("nice %d: want 0 (as started) to 19 (the lowest priority)", n)
	}
	return nil
}

// Apply lowers the process's CPU priority to n, unless it already runs
// at n or lower (a process may not raise its own). 0 changes nothing.
func (n Nice) Apply() error {
	if err := n.Check(); err != nil || n == 0 {
		return err
	}
	return lowerPriority(int(n))
}
