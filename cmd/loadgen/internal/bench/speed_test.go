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
		desc  string
		avg   float64
		known bool
		want  string
		busy  bool
	}{
		{"Idle", 0.42, true, "Load average (1 min) 0.42 when the bench started (at most 1", false},
		{"IdleAtOne", 1.0, true, "Load average (1 min) 1.00 when the bench started (at most 1", false},
		{"Busy", 2.38, true, "Load average (1 min) 2.38 when the bench started: above 1, other work", true},
		{"Unknown", 0, false, "Load average (1 min) unknown", false},
	} {
		t.Run(c.desc, func(t *testing.T) {
			got := loadStatement(c.avg, c.known)
			if !strings.HasPrefix(got, c.want) {
				t.Fatalf("loadStatement(%v, %v) = %q, want it to start %q", c.avg, c.known, got, c.want)
			}
			if busy := strings.Contains(got, "lower and noisier"); busy != c.busy {
				t.Fatalf("loadStatement(%v, %v) = %q: says the machine was busy %v, want %v", c.avg, c.known, got, busy, c.busy)
			}
		})
	}
}
