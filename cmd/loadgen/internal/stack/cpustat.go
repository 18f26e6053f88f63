package stack

// The machine's CPU time, read from /proc/stat, tells how much of a
// measured run the hypervisor gave to other guests (steal time): on a
// shared host, a run with a large share stolen measured the neighbours as
// much as the code.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// CPUTimes are CPU times summed over all CPUs, in clock ticks.
type CPUTimes struct {
	Busy  uint64 // user, nice, system, irq, softirq
	Idle  uint64 // idle, iowait
	Steal uint64 // time the hypervisor ran another guest while this one was runnable
}

// Sub is the time spent from u to t.
func (t CPUTimes) Sub(u CPUTimes) CPUTimes {
	return CPUTimes{Busy: t.Busy - u.Busy, Idle: t.Idle - u.Idle, Steal: t.Steal - u.Steal}
}

// StealShare is the share of all CPU time that was stolen (0 when no time
// passed).
func (t CPUTimes) StealShare() float64 {
	total := t.Busy + t.Idle + t.Steal
	if total == 0 {
		return 0
	}
	return float64(t.Steal) / float64(total)
}

// BusyShare is the share of all CPU time that was busy (0 when no time
// passed): how loaded the machine was.
func (t CPUTimes) BusyShare() float64 {
	total := t.Busy + t.Idle + t.Steal
	if total == 0 {
		return 0
	}
	return float64(t.Busy) / float64(total)
}

// Read reads the machine's CPU times now.
func ReadCPU() (CPUTimes, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return CPUTimes{}, err
	}
	defer f.Close()
	return parse(f)
}

// parse reads the aggregate "cpu" line of /proc/stat: user nice system
// idle iowait irq softirq steal (guest time is counted in user already).
func parse(r io.Reader) (CPUTimes, error) {
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && line == "" {
		return CPUTimes{}, err
	}
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return CPUTimes{}, errors.New("cpustat: no cpu line in /proc/stat")
	}
	var v [8]uint64
	for i := range v {
		if v[i], err = strconv.ParseUint(fields[i+1], 10, 64); err != nil {
			return CPUTimes{}, fmt.Errorf("cpustat: field %d of the cpu line: %w", i+1, err)
		}
	}
	return CPUTimes{Busy: v[0] + v[1] + v[2] + v[5] + v[6], Idle: v[3] + v[4], Steal: v[7]}, nil
}

// CPUSampler reads the CPU times at a fixed interval, so that the times of
// any span of the sampling can be told afterwards.
type CPUSampler struct {
	mu      sync.Mutex
	samples []sample
}

type sample struct {
	at time.Time
	t  CPUTimes
}

// Start samples every interval until ctx is done. On a machine without
// /proc/stat it samples nothing, and Between finds nothing.
func SampleCPU(ctx context.Context, interval time.Duration) *CPUSampler {
	s := &CPUSampler{}
	s.take()
	go func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				s.take()
			}
		}
	}()
	return s
}

func (s *CPUSampler) take() {
	t, err := ReadCPU()
	if err != nil {
		return
	}
	s.mu.Lock()
	s.samples = append(s.samples, sample{at: time.Now(), t: t})
	s.mu.Unlock()
}

// Between is the CPU time spent from the last sample at or before from to
// the first one at or after to (a span a little wider than asked, never
// narrower); false when the samples do not cover the span.
func (s *CPUSampler) Between(from, to time.Time) (CPUTimes, bool) {
	s.take() // a span that ends now is covered
	s.mu.Lock()
	defer s.mu.Unlock()
	first, last := -1, -1
	for i, smp := range s.samples {
		if !smp.at.After(from) {
			first = i
		}
		if last < 0 && !smp.at.Before(to) {
			last = i
		}
	}
	if first < 0 || last < 0 || last <= first {
		return CPUTimes{}, false
	}
	return s.samples[last].t.Sub(s.samples[first].t), true
}

// Total is the CPU time spent from the first sample to now; false when
// nothing was sampled.
func (s *CPUSampler) Total() (CPUTimes, bool) {
	s.take()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.samples) < 2 {
		return CPUTimes{}, false
	}
	return s.samples[len(s.samples)-1].t.Sub(s.samples[0].t), true
}
