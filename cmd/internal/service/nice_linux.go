package service

import (
	"errors"
	"os"
	"strconv"
	"syscall"
)

// lowerPriority sets every thread of the process to niceness nice unless
// it is already that low. Linux keeps a niceness per thread, and a thread
// the Go runtime starts later inherits the one of the thread that starts
// it, so each thread present is set, pass after pass until a pass finds
// no thread it has not seen.
func lowerPriority(nice int) error {
	seen := map[int]bool{}
	for {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		fresh := false
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil || seen[tid] {
				continue
			}
			seen[tid], fresh = true, true
			if err := lowerThread(tid, nice); err != nil && !errors.Is(err, syscall.ESRCH) {
				return err
			}
		}
		if !fresh {
			return nil
		}
	}
}

func lowerThread(tid, nice int) error {
	// The raw getpriority system call answers 20 - niceness.
	raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	if err != nil {
		return err
	}
	if 20-raw >= nice {
		return nil
	}
	return syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice)
}
