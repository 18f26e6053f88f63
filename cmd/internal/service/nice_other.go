//go:build !linux

package service

import "syscall"

// lowerPriority sets the process's niceness (a process-wide value outside
// Linux).
func lowerPriority(nice int) error {
	return syscall.Setpriority(syscall.PRIO_PROCESS, 0, nice)
}
