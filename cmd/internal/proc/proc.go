// Package proc starts what the bench (cmd/loadgen) and the fault tests
// (cmd/internal/faulttest) run beside the service: child processes with
// their output captured line by line, redis-servers of their own, the
// service binaries built with `go build`, free ports on 127.0.0.1, and
// scratch databases created and dropped on a Postgres server.
//
// Every child is killed when the process that started it dies (on
// Linux), so a bench or a test binary killed mid-run leaves no server
// behind. Nothing here touches a database or a Redis it did not create.
package proc

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"syscall"
	"time"
)

// Options say how to run a child process.
type Options struct {
	Args []string
	Env  map[string]string // set in the child's environment
	// Inherit starts the child's environment from this process's;
	// otherwise it holds only PATH, HOME and Env.
	Inherit bool
	LogFile string              // also write the output to this file
	Cred    *syscall.Credential // run as another user (nil: this one)
}

// Process is a running child process; its stdout and stderr go to Logs.
type Process struct {
	Name string
	Logs *Logs
	cmd  *exec.Cmd
	done chan struct{}
	err  error // of cmd.Wait, once done is closed
}

// pipeGrace bounds how long Wait reads output after the child exited,
// when a grandchild (a Postgres backend) still holds the pipe open.
const pipeGrace = 5 * time.Second

// Start runs path with o.Args.
func Start(name, path string, o Options) (*Process, error) {
	logs := &Logs{}
	if o.LogFile != "" {
		f, err := os.Create(o.LogFile)
		if err != nil {
			return nil, err
		}
		logs.file = f
	}
	cmd := exec.Command(path, o.Args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	if o.Inherit {
		cmd.Env = os.Environ()
	}
	keys := make([]string, 0, len(o.Env))
	for k := range o.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cmd.Env = append(cmd.Env, k+"="+o.Env[k])
	}
	bindToParent(cmd, o.Cred)
	// One writer for both streams: exec copies them through one pipe,
	// and Wait returns once the copy is done (or pipeGrace after exit).
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.WaitDelay = pipeGrace
	if err := cmd.Start(); err != nil {
		logs.close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, Logs: logs, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logs.close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the process; signalling one that exited is no
// error.
func (p *Process) Signal(sig os.Signal) error {
	if err := p.cmd.Process.Signal(sig); err != nil && !p.Exited() {
		return fmt.Errorf("signal %s to %s: %w", sig, p.Name, err)
	}
	return nil
}

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Wait waits up to timeout for the process to exit and returns its exit
// code (-1 when a signal ended it). It leaves a process still running
// after timeout alone and says so.
func (p *Process) Wait(timeout time.Duration) (int, error) {
	if !p.Exited() {
		select {
		case <-p.done:
		case <-time.After(timeout):
			return 0, fmt.Errorf("%s still running after %s", p.Name, timeout)
		}
	}
	if p.err == nil {
		return 0, nil
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode(), nil
	}
	return 0, p.err
}

// Kill ends the process with SIGKILL (a crash) and waits for it.
func (p *Process) Kill() {
	p.cmd.Process.Kill()
	<-p.done
}

// Stop asks the process to end with SIGTERM and kills it after 20 s.
func (p *Process) Stop() error { return p.StopWith(syscall.SIGTERM, 20*time.Second) }

// StopWith sends sig, waits up to grace for the process to exit, then
// kills it and says so.
func (p *Process) StopWith(sig os.Signal, grace time.Duration) error {
	if p.Exited() {
		return nil
	}
	p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
		p.Kill()
		return fmt.Errorf("%s ignored %s for %s; killed", p.Name, sig, grace)
	}
}

// WaitLog waits up to timeout for an output line that is a JSON object
// whose msg is msg, and returns it decoded. It fails early, with the end
// of the output, when the process exits first.
func (p *Process) WaitLog(msg string, timeout time.Duration) (map[string]any, error) {
	deadline := time.Now().Add(timeout)
	for seen := 0; ; {
		exited := p.Exited() // before reading: the last lines are in by then
		lines := p.Logs.Lines()
		for _, l := range lines[seen:] {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == msg {
				return m, nil
			}
		}
		seen = len(lines)
		if exited {
			code, _ := p.Wait(0)
			return nil, fmt.Errorf("%s exited (code %d) before logging %q:\n%s", p.Name, code, msg, p.Logs.Tail(40))
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s did not log %q within %s:\n%s", p.Name, msg, timeout, p.Logs.Tail(40))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
