package service

import (
	"runtime"
	"testing"
)

func TestWorkerProcsYieldToTheEnvironment(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(before)
	if got := WorkerProcs.Apply(func(k string) string { return map[string]string{"GOMAXPROCS": "3"}[k] }); got != 0 {
		t.Fatalf("set GOMAXPROCS %d with GOMAXPROCS in the environment", got)
	}
	if now := runtime.GOMAXPROCS(0); now != before {
		t.Fatalf("GOMAXPROCS changed to %d with GOMAXPROCS in the environment", now)
	}
	if got := WorkerProcs.Apply(func(string) string { return "" }); got != 1 {
		t.Fatalf("set GOMAXPROCS %d, want 1", got)
	}
	if now := runtime.GOMAXPROCS(0); now != 1 {
		t.Fatalf("GOMAXPROCS is %d, want 1", now)
	}
}
