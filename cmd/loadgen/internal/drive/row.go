package drive

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Row is one measured run, as a line of `loadgen run` and a row of the
// bench.
type Row struct {
	Name    string
	Result  *Result
	Ceiling string  // the name of the ceiling it is a ratio to ("" for none)
	Base    float64 // that ceiling's throughput
	Note    string  // anything else measured with it
}

// Ratio is the row's throughput over its ceiling's (0 without one).
func (r Row) Ratio() float64 {
	if r.Base <= 0 || r.Result == nil {
		return 0
	}
	return r.Result.Throughput() / r.Base
}

// Ms formats a duration in milliseconds with two significant decimals.
func Ms(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case ms < 10:
		return strconv.FormatFloat(ms, 'f', 2, 64) + " ms"
	case ms < 100:
		return strconv.FormatFloat(ms, 'f', 1, 64) + " ms"
	}
	return strconv.FormatFloat(ms, 'f', 0, 64) + " ms"
}

// Rate formats a throughput.
func Rate(perSec float64) string {
	if perSec >= 10000 {
		return strconv.FormatFloat(perSec/1000, 'f', 1, 64) + " k/s"
	}
	return strconv.FormatFloat(perSec, 'f', 0, 64) + "/s"
}

// Statuses formats status counts, most frequent first ("200×1000 429×3";
// transport errors as "err").
func Statuses(m map[int]int64) string {
	codes := make([]int, 0, len(m))
	for c := range m {
		codes = append(codes, c)
	}
	sort.Slice(codes, func(i, j int) bool {
		if m[codes[i]] != m[codes[j]] {
			return m[codes[i]] > m[codes[j]]
		}
		return codes[i] < codes[j]
	})
	parts := make([]string, len(codes))
	for i, c := range codes {
		name := strconv.Itoa(c)
		if c == 0 {
			name = "err"
		}
		parts[i] = name + "×" + strconv.FormatInt(m[c], 10)
	}
	return strings.Join(parts, " ")
}

// Mode describes how a run was driven.
func (r *Result) Mode() string {
	if r.Rate > 0 && r.Conns > 0 {
		return fmt.Sprintf("%s fixed, pool %d on %d conns", Rate(r.Rate), r.Workers, r.Conns)
	}
	if r.Rate > 0 {
		return fmt.Sprintf("%s fixed, pool %d", Rate(r.Rate), r.Workers)
	}
	return fmt.Sprintf("max, %d conns", r.Workers)
}

// Line is the row as one line of text.
func (r Row) Line() string {
	res := r.Result
	var b strings.Builder
	fmt.Fprintf(&b, "%-28s %10s", r.Name, Rate(res.Throughput()))
	if r.Ceiling != "" {
		fmt.Fprintf(&b, " (%.2f× %s)", r.Ratio(), r.Ceiling)
	}
	fmt.Fprintf(&b, "  p50 %s p90 %s p99 %s max %s  [%s]  %s", Ms(res.Latency.Quantile(0.5)), Ms(res.Latency.Quantile(0.9)),
		Ms(res.Latency.Quantile(0.99)), Ms(res.Latency.Max()), res.Mode(), Statuses(res.Status))
	if res.Late > 0 || res.Unsent > 0 {
		fmt.Fprintf(&b, "  late %d unsent %d", res.Late, res.Unsent)
	}
	if res.FirstErr != "" {
		fmt.Fprintf(&b, "  first error: %s", res.FirstErr)
	}
	if r.Note != "" {
		b.WriteString("  " + r.Note)
	}
	return b.String()
}
