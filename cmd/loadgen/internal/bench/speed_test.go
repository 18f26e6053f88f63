package bench

import (
	"strings"
	"testing"
)

func TestMachineSpeedComparesEachCeilingWithTheIssues(t *testing.T) {
	got := machineSpeed(map[string]float64{"bare": 41500, "enqueue": 27000, "raw": 3900})
	for _, want := range []string{"bare fiber 0.50×", "fiber+enqueue 1.00×", "raw sale transaction 1.50×"} {
		if !strings.Contains(got, want) {
			t.Errorf("machineSpeed = %q, want it to contain %q", got, want)
		}
	}
}

func TestMachineSpeedNamesOnlyTheCeilingsMeasured(t *testing.T) {
	got := machineSpeed(map[string]float64{"raw": 1300})
	if !strings.HasPrefix(got, "raw sale transaction 0.50× the issue's figures (2.6 k tx/s)") || strings.Contains(got, "fiber") {
		t.Errorf("machineSpeed = %q, want only the raw sale transaction", got)
	}
}

func TestLoadStatementSaysABusyStart(t *testing.T) {
	for _, c := range []struct {
		desc     string
		avg      float64
		known    bool
		cpu      float64
		cpuKnown bool
		want     string
		busy     bool
	}{
		{"Idle", 0.42, true, 0.02, true, "Load average (1 min) 0.42 when the bench started (at most 1: an idle machine); the cores were 2 % busy", false},
		{"IdleAtOne", 1.0, true, 0, false, "Load average (1 min) 1.00 when the bench started (at most 1: an idle machine).", false},
		{"Busy", 2.38, true, 0.61, true, "Load average (1 min) 2.38 when the bench started; the cores were 61 % busy in the second before it: above 1, other work", true},
		{"BusyCoresUnknown", 2.38, true, 0, false, "Load average (1 min) 2.38 when the bench started: above 1, other work", true},
		{"AfterABuild", 2.13, true, 0.03, true, "Load average (1 min) 2.13 when the bench started, above 1; the cores were 3 % busy in the second before it: the average still counted work that had ended", false},
		{"Unknown", 0, false, 0.5, true, "Load average (1 min) unknown when the bench started (no /proc/loadavg); the cores were 50 % busy", false},
	} {
		t.Run(c.desc, func(t *testing.T) {
			got := loadStatement(c.avg, c.known, c.cpu, c.cpuKnown)
			if !strings.HasPrefix(got, c.want) {
				t.Fatalf("loadStatement = %q, want it to start %q", got, c.want)
			}
			if busy := strings.Contains(got, "lower and noisier"); busy != c.busy {
				t.Fatalf("loadStatement = %q: says the machine was busy %v, want %v", got, busy, c.busy)
			}
		})
	}
}
