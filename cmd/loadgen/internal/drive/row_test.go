package report

import (
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/cmd/loadgen/internal/hist"
	"github.com/partnertrack/partnertrack/cmd/loadgen/internal/load"
)

func result(n int, each time.Duration, elapsed time.Duration, status map[int]int64) *load.Result {
	h := hist.New()
	for i := 0; i < n; i++ {
		h.Record(each)
	}
	return &load.Result{Workers: 64, Elapsed: elapsed, Latency: h, Status: status, Sent: int64(n)}
}

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

func TestNumbers(t *testing.T) {
	for d, want := range map[time.Duration]string{
		1500 * time.Microsecond: "1.50 ms", 12340 * time.Microsecond: "12.3 ms", 250 * time.Millisecond: "250 ms"} {
		if got := Ms(d); got != want {
			t.Errorf("Ms(%v) = %q, want %q", d, got, want)
		}
	}
	if Rate(35210) != "35.2 k/s" || Rate(2612.4) != "2612/s" {
		t.Fatalf("rates %q %q", Rate(35210), Rate(2612.4))
	}
	if got := Statuses(map[int]int64{200: 900, 0: 2, 429: 98}); got != "200×900 429×98 err×2" {
		t.Fatalf("statuses = %q", got)
	}
}

func TestRowRatioAndLine(t *testing.T) {
	r := Row{Name: "clicks max", Result: result(1000, 2*time.Millisecond, 100*time.Millisecond, map[int]int64{200: 1000}),
		Ceiling: "enqueue", Base: 5000}
	if r.Ratio() != 2 {
		t.Fatalf("ratio = %v, want 2 (10k/s over 5k/s)", r.Ratio())
	}
	line := r.Line()
	for _, want := range []string{"clicks max", "10.0 k/s", "(2.00× enqueue)", "p99 2.00 ms", "max, 64 conns", "200×1000"} {
		if !strings.Contains(line, want) {
			t.Errorf("line %q lacks %q", line, want)
		}
	}
	if (Row{Result: r.Result}).Ratio() != 0 {
		t.Fatal("a row without ceiling has a ratio")
	}
}

func TestMarkdown(t *testing.T) {
	res := result(10, time.Millisecond, time.Second, map[int]int64{201: 10})
	res.Rate, res.Late = 1000, 3
	md := Document{Command: "make bench", Date: time.Date(2026, 11, 21, 5, 0, 0, 0, time.UTC), Machine: "2 cores",
		Took: 421 * time.Second, Notes: []string{"noisy"},
		Rows:    []Row{{Name: "sales 1k/s", Result: res, Ceiling: "raw tx", Base: 20, Note: "a|b"}},
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
