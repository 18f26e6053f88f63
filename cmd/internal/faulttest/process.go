package faulttest

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/cmd/internal/proc"
)

// Build compiles the given main packages (paths relative to the module
// root, like "./cmd/edge") into dir, and returns the path of each binary
// by its base name.
func Build(dir string, pkgs ...string) (map[string]string, error) {
	root, err := proc.ModuleRoot()
	if err != nil {
		return nil, err
	}
	return proc.Build(root, dir, pkgs...)
}

// Process is a binary of the service running as a child of the test; its
// Logs hold what it wrote (the service logs JSON lines to stderr).
type Process struct {
	*proc.Process
}

// StartProcess runs path with args and exactly the environment env (plus
// PATH and HOME), capturing its output into Logs. The process is killed
// when the test ends, if it is still running.
func StartProcess(tb testing.TB, path string, args []string, env map[string]string) *Process {
	tb.Helper()
	p, err := proc.Start(filepath.Base(path), path, proc.Options{Args: args, Env: env})
	if err != nil {
		tb.Fatalf("faulttest: %v", err)
	}
	tb.Cleanup(p.Kill)
	return &Process{p}
}

// Signal sends sig to the process.
func (p *Process) Signal(tb testing.TB, sig syscall.Signal) {
	tb.Helper()
	if err := p.Process.Signal(sig); err != nil {
		tb.Fatalf("faulttest: %v", err)
	}
}

// Kill kills the process with SIGKILL and waits for it to exit.
func (p *Process) Kill(tb testing.TB) {
	tb.Helper()
	p.Process.Kill()
}

// WaitLog waits up to timeout for a JSON log line whose msg is msg and
// returns it decoded. It fails the test when the process exits first.
func (p *Process) WaitLog(tb testing.TB, msg string, timeout time.Duration) map[string]any {
	tb.Helper()
	line, err := p.Process.WaitLog(msg, timeout)
	if err != nil {
		tb.Fatalf("faulttest: %v", err)
	}
	return line
}
