// Package stack starts what the bench measures: the service binaries
// built from this checkout, run against a database created for the run
// and a queue namespace of their own on the shared Redis, or against a
// private redis-server; and it reads their peak memory.
package stack

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	_ "github.com/lib/pq" // the Postgres driver
)

// Build compiles the given main packages (./cmd/edge, …) of the module
// in dir into binDir and returns their paths by base name.
func Build(ctx context.Context, dir, binDir string, pkgs ...string) (map[string]string, error) {
	args := append([]string{"build", "-o", binDir + string(filepath.Separator)}, pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build: %v\n%s", err, out)
	}
	bins := make(map[string]string)
	for _, p := range pkgs {
		bins[filepath.Base(p)] = filepath.Join(binDir, filepath.Base(p))
	}
	return bins, nil
}

// CreateDB creates database name on the server of adminURL (a DSN of any
// database there) and returns a DSN of it.
func CreateDB(adminURL, name string) (string, error) {
	db, err := sql.Open("postgres", adminURL)
	if err != nil {
		return "", err
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE DATABASE "` + name + `"`); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return WithDB(adminURL, name), nil
}

// DropDB drops database name.
func DropDB(adminURL, name string) error {
	db, err := sql.Open("postgres", adminURL)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.Exec(`DROP DATABASE IF EXISTS "` + name + `" WITH (FORCE)`)
	return err
}

// WithDB is adminURL naming database name instead.
func WithDB(adminURL, name string) string {
	base, query, _ := strings.Cut(adminURL, "?")
	if i := strings.LastIndex(base, "/"); i > len("postgres://") {
		base = base[:i]
	}
	if query != "" {
		return base + "/" + name + "?" + query
	}
	return base + "/" + name
}

// Process is a running child process whose output goes to a log file.
type Process struct {
	Name string
	cmd  *exec.Cmd
	log  string
	done chan error
}

// Start runs bin with args and env (added to the current environment),
// logging to a file in logDir.
func Start(name, bin string, args []string, env map[string]string, logDir string) (*Process, error) {
	f, err := os.Create(filepath.Join(logDir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	p := &Process{Name: name, cmd: cmd, log: f.Name(), done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait(); f.Close() }()
	return p, nil
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// WaitLog waits until the process logged a line containing msg and
// returns the line's JSON fields (nil for a line that is not JSON).
func (p *Process) WaitLog(msg string, timeout time.Duration) (map[string]any, error) {
	deadline := time.Now().Add(timeout)
	for {
		exited := false
		select {
		case err := <-p.done:
			p.done <- err
			exited = true
		default:
		}
		if fields, ok := p.findLog(msg); ok {
			return fields, nil
		}
		if exited {
			return nil, fmt.Errorf("%s exited before logging %q:\n%s", p.Name, msg, p.Tail(20))
		}
		time.Sleep(100 * time.Millisecond)
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s did not log %q within %s:\n%s", p.Name, msg, timeout, p.Tail(20))
		}
	}
}

// findLog looks for a logged line containing msg.
func (p *Process) findLog(msg string) (map[string]any, bool) {
	raw, err := os.ReadFile(p.log)
	if err != nil {
		return nil, false
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if line := sc.Bytes(); bytes.Contains(line, []byte(msg)) {
			var fields map[string]any
			json.Unmarshal(line, &fields)
			return fields, true
		}
	}
	return nil, false
}

// Wait waits for the process to exit and reports a failure with the
// end of its log.
func (p *Process) Wait(timeout time.Duration) error {
	select {
	case err := <-p.done:
		p.done <- err
		if err != nil {
			return fmt.Errorf("%s: %v:\n%s", p.Name, err, p.Tail(20))
		}
		return nil
	case <-time.After(timeout):
		p.Stop()
		return fmt.Errorf("%s did not finish within %s", p.Name, timeout)
	}
}

// Tail is the last n lines of the log.
func (p *Process) Tail(n int) string {
	raw, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// PeakRSS is the process's peak resident set size (VmHWM), in bytes.
func (p *Process) PeakRSS() (int64, error) { return PeakRSS(p.Pid()) }

// PeakRSS reads VmHWM of a process from /proc.
func PeakRSS(pid int) (int64, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	return parseVmHWM(raw)
}

func parseVmHWM(status []byte) (int64, error) {
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) != 2 || f[1] != "kB" {
				break
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb * 1024, err
		}
	}
	return 0, errors.New("no VmHWM line")
}

// Stop sends SIGTERM, waits up to 20 s, then kills.
func (p *Process) Stop() error {
	select {
	case err := <-p.done:
		p.done <- err
		return nil
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(20 * time.Second):
		p.cmd.Process.Kill()
		err := <-p.done
		p.done <- err
		return fmt.Errorf("%s did not stop on SIGTERM", p.Name)
	}
}

// FreePort returns a TCP port free on 127.0.0.1 right now.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Kill ends the process with SIGKILL (a crash) and waits for it.
func (p *Process) Kill() {
	select {
	case err := <-p.done:
		p.done <- err
		return
	default:
	}
	p.cmd.Process.Kill()
	err := <-p.done
	p.done <- err
}

// Redis is a private redis-server.
type Redis struct {
	*Process
	URL  string
	Port int
}

// StartRedis starts redis-server on a free port with its data in dir,
// with AOF (appendfsync everysec) or without any persistence.
func StartRedis(dir string, aof bool, logDir string) (*Redis, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	return StartRedisOn(port, dir, aof, logDir)
}

// StartRedisOn starts redis-server on port (again, after a Kill: with AOF
// it reloads what it held).
func StartRedisOn(port int, dir string, aof bool, logDir string) (*Redis, error) {
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--daemonize", "no"}
	name := "redis-noaof"
	if aof {
		args = append(args, "--appendonly", "yes", "--appendfsync", "everysec")
		name = "redis-aof"
	} else {
		args = append(args, "--appendonly", "no")
	}
	p, err := Start(name, "redis-server", args, nil, logDir)
	if err != nil {
		return nil, fmt.Errorf("start redis-server (is it installed?): %w", err)
	}
	if _, err := p.WaitLog("Ready to accept connections", 20*time.Second); err != nil {
		p.Stop()
		return nil, err
	}
	return &Redis{Process: p, URL: "redis://127.0.0.1:" + strconv.Itoa(port) + "/0", Port: port}, nil
}
