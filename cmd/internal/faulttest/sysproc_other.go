//go:build !linux

package faulttest

import (
	"os/exec"
	"syscall"
)

func bindToTest(cmd *exec.Cmd, cred *syscall.Credential) {
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
}
