package service

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestMain lets the test binary run as the child of the niceness tests:
// lowering a process's priority cannot be undone without privilege, so
// it is done in a process of its own.
func TestMain(m *testing.M) {
	if os.Getenv("NICE_CHILD") == "1" {
		niceChild()
		return
	}
	os.Exit(m.Run())
}

// niceChild lowers its priority to WorkerNice, then makes the runtime
// start more threads, and prints the niceness of each of its threads.
func niceChild() {
	if err := WorkerNice.Apply(); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	var started, release sync.WaitGroup
	release.Add(1)
	for range 4 {
		started.Add(1)
		go func() {
			runtime.LockOSThread() // this goroutine keeps its thread; the others need new ones
			started.Done()
			release.Wait()
		}()
	}
	started.Wait()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	for _, t := range tasks {
		stat, err := os.ReadFile("/proc/self/task/" + t.Name() + "/stat")
		if err != nil {
			continue // the thread ended
		}
		// The fields after the command's closing parenthesis start at
		// the third (state); the niceness is the nineteenth.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		fmt.Println(fields[16])
	}
	release.Done()
}

// childNiceness runs niceChild, under the command prefix if any, and
// returns the niceness of each of its threads.
func childNiceness(t *testing.T, prefix ...string) []int {
	t.Helper()
	args := append(prefix, os.Args[0], "-test.run=^$")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "NICE_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	var nices []int
	for _, line := range strings.Fields(string(out)) {
		n, err := strconv.Atoi(line)
		if err != nil {
			t.Fatalf("child printed %q:\n%s", line, out)
		}
		nices = append(nices, n)
	}
	return nices
}

func TestWorkerNiceLowersEveryThread(t *testing.T) {
	nices := childNiceness(t)
	if len(nices) < 5 {
		t.Fatalf("child ran %d threads, want at least 5 (four locked goroutines and main)", len(nices))
	}
	for i, n := range nices {
		if n != int(WorkerNice) {
			t.Fatalf("thread %d of %d runs at niceness %d, want %d: %v", i, len(nices), n, WorkerNice, nices)
		}
	}
}

func TestWorkerNiceNeverRaisesPriority(t *testing.T) {
	if _, err := exec.LookPath("nice"); err != nil {
		t.Skip("nice(1) is not installed")
	}
	for _, n := range childNiceness(t, "nice", "-n", "15") {
		if n != 15 {
			t.Fatalf("a child started at niceness 15 has a thread at %d", n)
		}
	}
}

func TestNiceChecksItsRange(t *testing.T) {
	for _, n := range []Nice{-1, 20} {
		if err := n.Check(); err == nil {
			t.Errorf("Nice(%d).Check() = nil, want an error", n)
		}
	}
	if err := Nice(0).Apply(); err != nil {
		t.Errorf("Nice(0).Apply() = %v, want nil (nothing to do)", err)
	}
}
