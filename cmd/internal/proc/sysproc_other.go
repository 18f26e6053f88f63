//go:build !linux

package proc

import (
	"os/exec"
	"syscall"
)

func bindToParent(cmd *exec.Cmd, cred *syscall.Credential) {
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
}
