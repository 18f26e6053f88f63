package bench

import (
	"strings"
	"testing"
	"time"
)

func TestCeilingDriftIsNoted(t *testing.T) {
	b := &bench{ceil: map[string]float64{}, first: map[string]float64{}}
	b.recordCeiling("bare", "the bare fiber ceiling", 60000)
	b.recordCeiling("bare", "the bare fiber ceiling", 55000) // 8 % apart: the usual noise
	b.recordCeiling("raw", "the raw sale transaction", 3000)
	b.recordCeiling("raw", "the raw sale transaction", 2000) // a third slower
	if b.ceil["bare"] != 60000 || b.ceil["raw"] != 3000 {
		t.Fatalf("ceilings %v, want the better run of each", b.ceil)
	}
	if len(b.notes) != 1 || !strings.HasPrefix(b.notes[0], "the raw sale transaction read 3000/s in one run and 2000/s") {
		t.Fatalf("notes %q, want one about the raw transaction", b.notes)
	}
}

func TestCPUPerRequest(t *testing.T) {
	from := cpuMark{edge: time.Second, worker: 2 * time.Second}
	to := cpuMark{edge: 3 * time.Second, worker: 2500 * time.Millisecond}
	if got := cpuPerRequest(from, to, 100000, true); got != "edge 20.0 µs, worker 5.0 µs of CPU a click" {
		t.Fatalf("got %q", got)
	}
	if got := cpuPerRequest(from, to, 100000, false); got != "edge 20.0 µs of CPU a click" {
		t.Fatalf("without the worker: got %q", got)
	}
}
