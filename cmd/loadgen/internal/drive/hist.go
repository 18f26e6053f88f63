package drive

// Latencies are recorded in a fixed-size log-linear histogram
// (microsecond resolution, at most 1/64 relative error) that answers
// percentiles. One histogram per goroutine, merged at the end: no locks.

import (
	"math"
	"math/bits"
	"time"
)

// subBits is the number of mantissa bits kept per power of two: 64 buckets
// per octave, so a bucket is at most 1/64 of its value wide.
const subBits = 6

const sub = 1 << subBits

// buckets covers values up to 2^40 µs (12 days).
const buckets = (40 - subBits + 1) * sub

// Histogram counts durations.
type Histogram struct {
	counts [buckets]uint64
	n      uint64
	sum    uint64 // µs
	max    uint64 // µs
	min    uint64 // µs
}

// New returns an empty histogram.
func NewHistogram() *Histogram { return &Histogram{min: math.MaxUint64} }

// index is the bucket of v (µs).
func index(v uint64) int {
	if v < sub {
		return int(v)
	}
	shift := bits.Len64(v) - subBits - 1
	i := (shift+1)*sub + int(v>>uint(shift)) - sub
	if i >= buckets {
		return buckets - 1
	}
	return i
}

// upper is the largest value (µs) that falls in bucket i.
func upper(i int) uint64 {
	if i < sub {
		return uint64(i)
	}
	shift := i/sub - 1
	m := uint64(i%sub + sub)
	return (m+1)<<uint(shift) - 1
}

// Record adds one duration (negative counts as zero).
func (h *Histogram) Record(d time.Duration) {
	v := uint64(0)
	if d > 0 {
		v = uint64(d / time.Microsecond)
	}
	h.counts[index(v)]++
	h.n++
	h.sum += v
	if v > h.max {
		h.max = v
	}
	if v < h.min {
		h.min = v
	}
}

// Merge adds every value of o to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	if o.max > h.max {
		h.max = o.max
	}
	if o.min < h.min {
		h.min = o.min
	}
}

// Count is the number of recorded values.
func (h *Histogram) Count() uint64 { return h.n }

// Max is the largest recorded value (exact).
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) * time.Microsecond }

// Mean is the average of the recorded values.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum/h.n) * time.Microsecond
}

// Quantile returns the value at or below which a fraction q (0..1) of the
// values lie, rounded up to its bucket's upper bound (never above Max).
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			v := upper(i)
			if v > h.max {
				v = h.max
			}
			if v < h.min {
				v = h.min
			}
			return time.Duration(v) * time.Microsecond
		}
	}
	return h.Max()
}
