package proc

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisOptions say how to run a redis-server of one's own.
type RedisOptions struct {
	Port int
	Dir  string // its working directory (the append-only file)
	// AppendOnly turns on the append-only file with appendfsync everysec:
	// what it acknowledged survives a crash of the process unless the
	// disk was too slow (docs/ingestion.md). Otherwise it persists nothing.
	AppendOnly bool
	// FsyncAlways fsyncs the append-only file before every reply
	// (appendfsync always), as docker-compose.yml runs Redis, instead of
	// once a second.
	FsyncAlways bool
	LogFile     string // also write its log to this file
	// Args are further redis-server options (cluster mode, replicaof).
	Args []string
}

// StartRedis starts redis-server on 127.0.0.1 and waits until it answers
// PING (with an append-only file it first reloads what it held). A
// missing redis-server is an error that says how to install it.
func StartRedis(o RedisOptions) (*Process, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, fmt.Errorf("redis-server is not installed (%v); install it with `apt-get install -y redis-server`", err)
	}
	appendOnly, fsync := "no", "everysec"
	if o.AppendOnly {
		appendOnly = "yes"
	}
	if o.FsyncAlways {
		fsync = "always"
	}
	p, err := Start("redis-server", "redis-server", Options{LogFile: o.LogFile, Args: append([]string{
		"--port", strconv.Itoa(o.Port), "--bind", "127.0.0.1", "--protected-mode", "yes",
		"--save", "", "--appendonly", appendOnly, "--appendfsync", fsync,
		"--dir", o.Dir, "--logfile", "", "--daemonize", "no"}, o.Args...)})
	if err != nil {
		return nil, err
	}
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(o.Port), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	if err := WaitFor(20*time.Second, func() error {
		if p.Exited() {
			return fmt.Errorf("redis-server exited:\n%s", p.Logs.Tail(20))
		}
		return c.Ping(context.Background()).Err() // LOADING until the file is read
	}); err != nil {
		p.Kill()
		return nil, fmt.Errorf("redis on %d did not come up: %w", o.Port, err)
	}
	return p, nil
}

// WaitFor calls check every 50 ms until it returns nil or timeout passes,
// and returns its last error.
func WaitFor(timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %w", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
