package stack

import "testing"

func TestParseVmHWM(t *testing.T) {
	n, err := parseVmHWM([]byte("Name:\tedge\nVmPeak:\t 900000 kB\nVmHWM:\t   51234 kB\nVmRSS:\t 40000 kB\n"))
	if err != nil || n != 51234*1024 {
		t.Fatalf("VmHWM = %d, %v", n, err)
	}
	if _, err := parseVmHWM([]byte("Name:\tx\n")); err == nil {
		t.Fatal("a status without VmHWM parsed")
	}
}
