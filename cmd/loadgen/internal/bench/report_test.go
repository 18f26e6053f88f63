package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/cmd/loadgen/internal/drive"
)

func TestTargetLinesAndSummary(t *testing.T) {
	ts := []Target{
		{Name: "click intake", Measured: "1.42× enqueue ceiling, p99 6.1 ms", Want: "≥ 1.30×, p99 ≤ 10 ms", OK: true},
		{Name: "listing p99", Measured: "72 ms", Want: "≤ 50 ms", OK: false},
		{Name: "edge RSS", Measured: "88 MB", Want: "≤ 150 MB", OK: true},
	}
	if got := ts[0].Line(); got != "click intake: 1.42× enqueue ceiling, p99 6.1 ms (≥ 1.30×, p99 ≤ 10 ms) ok" {
		t.Fatalf("line = %q", got)
	}
	if got := ts[1].Line(); !strings.HasSuffix(got, "(≤ 50 ms) short") {
		t.Fatalf("line = %q", got)
	}
	if got := Summary(ts); got != "2 passed, 1 failed" {
		t.Fatalf("summary = %q", got)
	}
	if got := Summary(nil); got != "0 passed, 0 failed" {
		t.Fatalf("empty summary = %q", got)
	}
}

func result(n int, each, elapsed time.Duration, status map[int]int64) *drive.Result {
	h := drive.NewHistogram()
	for i := 0; i < n; i++ {
		h.Record(each)
	}
	return &drive.Result{Workers: 64, Elapsed: elapsed, Latency: h, Status: status, Sent: int64(n)}
}

func TestMarkdown(t *testing.T) {
	res := result(10, time.Millisecond, time.Second, map[int]int64{201: 10})
	res.Rate, res.Late = 1000, 3
	md := Document{Command: "make bench", Date: time.Date(2026, 11, 21, 5, 0, 0, 0, time.UTC), Machine: "2 cores",
		Took: 421 * time.Second, Notes: []string{"noisy"},
		Rows:    []drive.Row{{Name: "sales 1k/s", Result: res, Ceiling: "raw tx", Base: 20, Note: "a|b"}},
		Facts:   [][2]string{{"edge peak RSS", "88 MB"}},
		Targets: []Target{{Name: "sales p99", Measured: "1.00 ms", Want: "≤ 30 ms", OK: true}},
	}.Markdown()
	for _, want := range []string{"    make bench\n", "2026-11-21 05:00 UTC", "in 7m1s", "- noisy\n",
		"| sales p99 | 1.00 ms | ≤ 30 ms | ok |", "1 passed, 0 failed.",
		"| sales 1k/s | 1000/s fixed, pool 64 | 10/s | 0.50× raw tx |", "late 3, unsent 0; a/b", "| edge peak RSS | 88 MB |"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}
