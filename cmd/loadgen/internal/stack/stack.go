// Package stack runs what the bench measures and reads what it costs: the
// service binaries built from a checkout (or given), child processes with
// their logs in the run's directory, private redis-servers, scratch
// databases on the shared Postgres, the bench's queue namespace on the
// shared Redis, the bulk-loaded clicks of the listing, and from /proc the
// peak memory of a process and the CPU time the hypervisor took.
//
// Starting processes, free ports and scratch databases are
// cmd/internal/proc's, which the fault tests share.
package stack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/partnertrack/partnertrack/cmd/internal/proc"
)

// Build compiles the given main packages (./cmd/edge, …) of the module
// in dir into binDir and returns their paths by base name.
func Build(dir, binDir string, pkgs ...string) (map[string]string, error) {
	return proc.Build(dir, binDir, pkgs...)
}

// CreateDB creates database name on the server of adminURL (a DSN of any
// database there) and returns a DSN of it.
func CreateDB(adminURL, name string) (string, error) {
	return proc.CreateDB(context.Background(), adminURL, name)
}

// DropDB drops database name.
func DropDB(adminURL, name string) error {
	return proc.DropDB(context.Background(), adminURL, name)
}

// Process is a running child process whose output also goes to a log
// file, kept when the bench fails.
type Process struct {
	*proc.Process
}

// Start runs bin with args and env (added to the current environment),
// logging to name.log in logDir.
func Start(name, bin string, args []string, env map[string]string, logDir string) (*Process, error) {
	p, err := proc.Start(name, bin, proc.Options{Args: args, Env: env, Inherit: true,
		LogFile: filepath.Join(logDir, name+".log")})
	if err != nil {
		return nil, err
	}
	return &Process{p}, nil
}

// Wait waits for the process to exit and reports a failure with the end
// of its log; it kills a process still running after timeout.
func (p *Process) Wait(timeout time.Duration) error {
	code, err := p.Process.Wait(timeout)
	if err != nil {
		p.Kill()
		return err
	}
	if code != 0 {
		return fmt.Errorf("%s exited with %d:\n%s", p.Name, code, p.Logs.Tail(20))
	}
	return nil
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

// CPUTime is the CPU time the process has used so far (user and system,
// from /proc/<pid>/stat), to tell what a phase cost each process.
func (p *Process) CPUTime() (time.Duration, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(p.Pid()) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseStatCPU(raw)
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on
// every Linux architecture Go runs on.
const clockTicks = 100

// parseStatCPU reads utime and stime (fields 14 and 15) of a
// /proc/<pid>/stat line; the command name in parentheses may hold spaces.
func parseStatCPU(stat []byte) (time.Duration, error) {
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("no command name in stat")
	}
	f := strings.Fields(s[i+1:]) // from field 3, the state
	if len(f) < 13 {
		return 0, errors.New("short stat line")
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// Redis is a private redis-server.
type Redis struct {
	*Process
	URL  string
	Port int
}

// Persistence is how a private Redis keeps what it acknowledged.
type Persistence int

const (
	// NoPersistence keeps nothing on disk (the CI Redis).
	NoPersistence Persistence = iota
	// AOFEverySec writes the append-only file before each reply and
	// fsyncs it once a second.
	AOFEverySec
	// AOFAlways fsyncs the append-only file before each reply, as
	// docker-compose.yml runs Redis.
	AOFAlways
)

// String names the setting as a row does.
func (p Persistence) String() string {
	switch p {
	case AOFEverySec:
		return "AOF everysec"
	case AOFAlways:
		return "AOF always"
	}
	return "without persistence"
}

// StartRedis starts redis-server on a free port with its data in dir.
func StartRedis(dir string, persist Persistence, logDir string) (*Redis, error) {
	port, err := proc.FreePort()
	if err != nil {
		return nil, err
	}
	return StartRedisOn(port, dir, persist, logDir)
}

// StartRedisOn starts redis-server on port (again, after a Kill: with AOF
// it reloads what it held). Its log in logDir is named after dir, so that
// each server of a run keeps its own.
func StartRedisOn(port int, dir string, persist Persistence, logDir string) (*Redis, error) {
	p, err := proc.StartRedis(proc.RedisOptions{Port: port, Dir: dir, AppendOnly: persist != NoPersistence,
		FsyncAlways: persist == AOFAlways, LogFile: filepath.Join(logDir, filepath.Base(dir)+".log")})
	if err != nil {
		return nil, err
	}
	return &Redis{Process: &Process{p}, URL: "redis://127.0.0.1:" + strconv.Itoa(port) + "/0", Port: port}, nil
}
