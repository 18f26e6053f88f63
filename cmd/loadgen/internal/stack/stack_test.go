package stack

import (
	"testing"
	"time"
)

func TestParseVmHWM(t *testing.T) {
	n, err := parseVmHWM([]byte("Name:\tedge\nVmPeak:\t 900000 kB\nVmHWM:\t   51234 kB\nVmRSS:\t 40000 kB\n"))
	if err != nil || n != 51234*1024 {
		t.Fatalf("VmHWM = %d, %v", n, err)
	}
	if _, err := parseVmHWM([]byte("Name:\tx\n")); err == nil {
		t.Fatal("a status without VmHWM parsed")
	}
}

func TestParseStatCPU(t *testing.T) {
	line := "4242 (edge (x)) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 8 0 100 0 0\n"
	got, err := parseStatCPU([]byte(line))
	if err != nil || got != 3250*time.Millisecond {
		t.Fatalf("cpu = %v, %v; want 3.25s (utime 250 + stime 75 ticks)", got, err)
	}
	if _, err := parseStatCPU([]byte("4242 (edge) S 1")); err == nil {
		t.Fatal("a short line parsed")
	}
}
