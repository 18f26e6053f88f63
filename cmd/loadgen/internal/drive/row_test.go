package drive

import (
	"strings"
	"testing"
	"time"
)

func result(n int, each time.Duration, elapsed time.Duration, status map[int]int64) *Result {
	h := NewHistogram()
	for i := 0; i < n; i++ {
		h.Record(each)
	}
	return &Result{Workers: 64, Elapsed: elapsed, Latency: h, Status: status, Sent: int64(n)}
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

func TestModeNamesTheSharedConnections(t *testing.T) {
	for _, c := range []struct {
		res  Result
		want string
	}{
		{Result{Workers: 64}, "max, 64 conns"},
		{Result{Rate: 1000, Workers: 70}, "1000/s fixed, pool 70"},
		{Result{Rate: 16000, Workers: 800, Conns: 64}, "16.0 k/s fixed, pool 800 on 64 conns"},
	} {
		if got := c.res.Mode(); got != c.want {
			t.Errorf("Mode() = %q, want %q", got, c.want)
		}
	}
}
