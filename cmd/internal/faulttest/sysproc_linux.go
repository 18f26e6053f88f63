package faulttest

import (
	"os/exec"
	"syscall"
)

// bindToTest makes the child die with the test process (Linux), so that
// a test binary killed by its timeout leaves no server behind.
func bindToTest(cmd *exec.Cmd, cred *syscall.Credential) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: cred}
}
