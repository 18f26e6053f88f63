package bench

import (
	"strconv"
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

func TestFullRunsLogCarriesOver(t *testing.T) {
	run := func(at time.Time, ok bool, history []string) string {
		return Document{Command: "make bench", Date: at, Machine: "2 cores", Took: 540 * time.Second,
			Facts:   [][2]string{{speedFact, "bare fiber 0.82×, fiber+enqueue 0.94× the issue's figures (83 k req/s)"}},
			Targets: []Target{{Name: "a", OK: true}, {Name: "b", OK: ok}},
			Commit:  "1c9b3fa", Start: "load 0.20, cores 1 % busy", History: history,
		}.Markdown()
	}
	first := run(time.Date(2026, 11, 27, 21, 56, 0, 0, time.UTC), false, ParseHistory("# Performance\n\nno log yet\n"))
	second := run(time.Date(2026, 11, 28, 0, 12, 0, 0, time.UTC), true, ParseHistory(first))
	rows := ParseHistory(second)
	want := []string{
		"| 2026-11-28 00:12 UTC | 1c9b3fa | 9m0s | load 0.20, cores 1 % busy | bare fiber 0.82×, fiber+enqueue 0.94× | 2 passed, 0 failed |",
		"| 2026-11-27 21:56 UTC | 1c9b3fa | 9m0s | load 0.20, cores 1 % busy | bare fiber 0.82×, fiber+enqueue 0.94× | 1 passed, 1 failed |",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Fatalf("log rows:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(second, "\n## What each run is\n") {
		t.Fatal("the sections after the log are gone")
	}
}

func TestFullRunsLogKeepsTheNewest(t *testing.T) {
	var history []string
	for i := range historyKeep + 5 {
		history = append(history, "| old run "+strconv.Itoa(i)+" |")
	}
	rows := ParseHistory(Document{Date: time.Now(), History: history}.Markdown())
	if len(rows) != historyKeep || rows[1] != "| old run 0 |" || rows[historyKeep-1] != "| old run "+strconv.Itoa(historyKeep-2)+" |" {
		t.Fatalf("kept %d rows: first old %q, last %q", len(rows), rows[1], rows[len(rows)-1])
	}
}
