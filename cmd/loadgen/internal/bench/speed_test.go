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
