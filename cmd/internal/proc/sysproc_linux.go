package proc

import (
	"os/exec"
	"syscall"
)

// bindToParent makes the child die with this process (Linux), so that a
// bench or test binary killed mid-run leaves no server behind.
func bindToParent(cmd *exec.Cmd, cred *syscall.Credential) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: cred}
}
