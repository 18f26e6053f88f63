package drive

import (
	"testing"
	"time"
)

func TestIndexIsMonotonicAndUpperBounds(t *testing.T) {
	prev := -1
	for v := uint64(0); v < 1<<20; v += 1 + v/500 {
		i := index(v)
		if i < prev {
			t.Fatalf("index(%d) = %d < index of a smaller value %d", v, i, prev)
		}
		prev = i
		if u := upper(i); u < v {
			t.Fatalf("upper(index(%d)) = %d, below the value", v, u)
		}
		if i > 0 && upper(i-1) >= v {
			t.Fatalf("value %d also fits bucket %d (upper %d)", v, i-1, upper(i-1))
		}
	}
}

func TestRelativeErrorBound(t *testing.T) {
	for _, v := range []uint64{63, 64, 100, 1000, 12345, 999999, 1 << 30} {
		u := upper(index(v))
		if float64(u-v) > float64(v)/sub {
			t.Fatalf("value %d reported as %d: more than 1/%d off", v, u, sub)
		}
	}
}

func TestQuantilesOfUniformValues(t *testing.T) {
	h := NewHistogram()
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Millisecond)
	}
	check := func(q float64, want time.Duration) {
		t.Helper()
		got := h.Quantile(q)
		if got < want || float64(got-want) > float64(want)/sub {
			t.Fatalf("q%.3f = %v, want %v within 1/%d", q, got, want, sub)
		}
	}
	check(0.5, 500*time.Millisecond)
	check(0.9, 900*time.Millisecond)
	check(0.99, 990*time.Millisecond)
	if h.Quantile(1) != time.Second || h.Max() != time.Second {
		t.Fatalf("q1 = %v, max = %v, want 1s", h.Quantile(1), h.Max())
	}
	if h.Count() != 1000 || h.Mean() != 500500*time.Microsecond {
		t.Fatalf("count %d mean %v", h.Count(), h.Mean())
	}
}

func TestQuantileOfATailIsTheTail(t *testing.T) {
	h := NewHistogram()
	for i := 0; i < 989; i++ {
		h.Record(2 * time.Millisecond)
	}
	for i := 0; i < 11; i++ {
		h.Record(80 * time.Millisecond)
	}
	if p := h.Quantile(0.99); p < 80*time.Millisecond {
		t.Fatalf("p99 = %v with 1.1%% of values at 80ms", p)
	}
	if p := h.Quantile(0.5); p < 2*time.Millisecond || p > 2032*time.Microsecond {
		t.Fatalf("p50 = %v, want about 2ms", p)
	}
}

func TestMergeAndEmpty(t *testing.T) {
	a, b := NewHistogram(), NewHistogram()
	if a.Quantile(0.99) != 0 || a.Mean() != 0 {
		t.Fatal("an empty histogram reports values")
	}
	a.Record(time.Millisecond)
	b.Record(3 * time.Millisecond)
	b.Record(-time.Second)
	a.Merge(b)
	if a.Count() != 3 || a.Max() != 3*time.Millisecond || a.Quantile(0) != 0 {
		t.Fatalf("merged: count %d max %v min %v", a.Count(), a.Max(), a.Quantile(0))
	}
}
