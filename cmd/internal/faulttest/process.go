package faulttest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Build compiles the given main packages (paths relative to the module
// root, like "./cmd/edge") into dir with `go build`, and returns the path
// of each binary by its base name.
func Build(dir string, pkgs ...string) (map[string]string, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	args := append([]string{"build", "-o", dir + string(filepath.Separator)}, pkgs...)
	cmd := exec.Command(goTool(), args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	bins := make(map[string]string, len(pkgs))
	for _, p := range pkgs {
		name := filepath.Base(p)
		bins[name] = filepath.Join(dir, name)
	}
	return bins, nil
}

func goTool() string {
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(p) {
		return p
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// moduleRoot is the directory of the module's go.mod, found from the
// working directory upwards (go test runs in the package's directory).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if fileExists(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("faulttest: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Logs collects a process's stderr: the service logs one JSON object per
// line there.
type Logs struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	lines []string
}

func newLogs() *Logs { return &Logs{} }

func (l *Logs) add(line string) {
	l.mu.Lock()
	l.buf.WriteString(line)
	l.buf.WriteByte('\n')
	l.lines = append(l.lines, line)
	l.mu.Unlock()
}

// Text returns everything logged so far.
func (l *Logs) Text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Entries returns the log lines that are JSON objects, decoded.
func (l *Logs) Entries() []map[string]any {
	l.mu.Lock()
	lines := append([]string(nil), l.lines...)
	l.mu.Unlock()
	var out []map[string]any
	for _, s := range lines {
		var m map[string]any
		if json.Unmarshal([]byte(s), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// Count returns how many JSON lines have msg as their message.
func (l *Logs) Count(msg string) int {
	n := 0
	for _, e := range l.Entries() {
		if e["msg"] == msg {
			n++
		}
	}
	return n
}

// Process is a binary of the service running as a child of the test.
type Process struct {
	Name string
	Logs *Logs
	cmd  *exec.Cmd
	done chan struct{}
	err  error // of Wait, once done is closed
}

// StartProcess runs path with args and exactly the environment env (plus
// PATH and HOME), capturing stderr into Logs and discarding stdout. The
// process is killed when the test ends, if it is still running.
func StartProcess(tb testing.TB, path string, args []string, env map[string]string) *Process {
	tb.Helper()
	p := &Process{Name: filepath.Base(path), Logs: newLogs(), done: make(chan struct{})}
	p.cmd = exec.Command(path, args...)
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	p.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for _, k := range keys {
		p.cmd.Env = append(p.cmd.Env, k+"="+env[k])
	}
	bindToTest(p.cmd, nil)
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		tb.Fatalf("faulttest: %s: %v", p.Name, err)
	}
	if err := p.cmd.Start(); err != nil {
		tb.Fatalf("faulttest: start %s: %v", p.Name, err)
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			p.Logs.add(sc.Text())
		}
		io.Copy(io.Discard, stderr)
	}()
	go func() {
		<-copied // Wait closes the pipe: read everything first
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	tb.Cleanup(func() {
		if !p.Exited() {
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the process.
func (p *Process) Signal(tb testing.TB, sig syscall.Signal) {
	tb.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil && !p.Exited() {
		tb.Fatalf("faulttest: signal %s to %s: %v", sig, p.Name, err)
	}
}

// Kill kills the process with SIGKILL and waits for it to exit.
func (p *Process) Kill(tb testing.TB) {
	tb.Helper()
	p.Signal(tb, syscall.SIGKILL)
	<-p.done
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
// code (-1 when it was killed by a signal).
func (p *Process) Wait(timeout time.Duration) (int, error) {
	select {
	case <-p.done:
	case <-time.After(timeout):
		return 0, fmt.Errorf("%s still running after %s", p.Name, timeout)
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

// WaitLog waits up to timeout for a JSON log line whose msg is msg and
// returns it decoded. It fails the test when the process exits first.
func (p *Process) WaitLog(tb testing.TB, msg string, timeout time.Duration) map[string]any {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, e := range p.Logs.Entries() {
			if e["msg"] == msg {
				return e
			}
		}
		if p.Exited() {
			code, _ := p.Wait(0)
			tb.Fatalf("faulttest: %s exited (code %d) before logging %q:\n%s", p.Name, code, msg, p.Logs.Text())
		}
		if time.Now().After(deadline) {
			tb.Fatalf("faulttest: %s did not log %q within %s:\n%s", p.Name, msg, timeout, p.Logs.Text())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
