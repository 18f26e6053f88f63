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

func TestWithDB(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable": "postgres://postgres@127.0.0.1:5432/bench1?sslmode=disable",
		"postgres://u:p@db:5432/x":                                    "postgres://u:p@db:5432/bench1",
	} {
		if got := WithDB(in, "bench1"); got != want {
			t.Errorf("WithDB(%s) = %s, want %s", in, got, want)
		}
	}
}
