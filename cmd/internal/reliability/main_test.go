package reliability

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/cmd/internal/faulttest"
)

// bins are the edge and worker binaries, built once per test run.
var bins map[string]string

// soak is true in the long versions (go test -tags soak, make soak): the
// scenarios run longer, with more load and more faults.
var soak = false

// scale picks the short or the long value of a scenario's size.
func scale[T any](short, long T) T {
	if soak {
		return long
	}
	return short
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "reliability-bin-")
	if err == nil {
		bins, err = faulttest.Build(dir, "./cmd/edge", "./cmd/worker")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "reliability: build the binaries:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	printScenarios()
	os.Exit(code)
}

// A scenario is one proof of the suite: what it accepted and what it
// stored, and whether its test passed.
type scenario struct {
	name     string
	accepted int
	stored   int
	notes    []string
	failed   bool
	took     time.Duration
}

var (
	scenariosMu sync.Mutex
	scenarios   []*scenario
)

// report registers a scenario of test t. Its counts are set with
// accepted/stored as the test learns them; when the test ends, its
// outcome is recorded and, in the long versions, printed.
func report(t *testing.T, name string) *scenario {
	t.Helper()
	s := &scenario{name: name}
	start := time.Now()
	scenariosMu.Lock()
	scenarios = append(scenarios, s)
	scenariosMu.Unlock()
	t.Cleanup(func() {
		scenariosMu.Lock()
		defer scenariosMu.Unlock()
		s.failed = t.Failed()
		s.took = time.Since(start).Round(100 * time.Millisecond)
		t.Logf("scenario %s", s.line())
	})
	return s
}

func (s *scenario) counts(accepted, stored int) {
	scenariosMu.Lock()
	s.accepted, s.stored = accepted, stored
	scenariosMu.Unlock()
}

func (s *scenario) note(format string, args ...any) {
	scenariosMu.Lock()
	s.notes = append(s.notes, fmt.Sprintf(format, args...))
	scenariosMu.Unlock()
}

func (s *scenario) line() string {
	verdict := "PASS"
	if s.failed {
		verdict = "FAIL"
	}
	l := fmt.Sprintf("%-4s %-44s accepted %7d  stored %7d  (%s)", verdict, s.name, s.accepted, s.stored, s.took)
	if len(s.notes) > 0 {
		l += "  " + strings.Join(s.notes, "; ")
	}
	return l
}

// printScenarios prints one line per scenario and a last line with the
// number of scenarios that passed and failed.
func printScenarios() {
	scenariosMu.Lock()
	defer scenariosMu.Unlock()
	if len(scenarios) == 0 {
		return
	}
	passed, failed := 0, 0
	fmt.Println()
	for _, s := range scenarios {
		fmt.Println(s.line())
		if s.failed {
			failed++
		} else {
			passed++
		}
	}
	fmt.Printf("%d passed, %d failed\n", passed, failed)
}
