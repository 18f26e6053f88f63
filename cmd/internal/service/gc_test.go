package service

import (
	"math"
	"runtime/debug"
	"testing"
)

func TestGCDefaultsYieldToTheEnvironment(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	for _, tc := range []struct {
		desc         string
		env          map[string]string
		wantPercent  int
		wantLimitSet bool
	}{
		{desc: "DefaultsApplied", env: map[string]string{}, wantPercent: 400, wantLimitSet: true},
		{desc: "GOGCKept", env: map[string]string{"GOGC": "50"}, wantPercent: 0, wantLimitSet: true},
		{desc: "GOMEMLIMITKept", env: map[string]string{"GOMEMLIMIT": "1GiB"}, wantPercent: 400},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			debug.SetGCPercent(100)
			debug.SetMemoryLimit(math.MaxInt64)
			percent, limit := EdgeGC.Apply(func(k string) string { return tc.env[k] })
			if percent != tc.wantPercent || (limit != 0) != tc.wantLimitSet {
				t.Fatalf("set GOGC %d, limit %d; want %d, limit set %v", percent, limit, tc.wantPercent, tc.wantLimitSet)
			}
			if got := debug.SetGCPercent(100); tc.wantPercent != 0 && got != tc.wantPercent || tc.wantPercent == 0 && got != 100 {
				t.Fatalf("GC percent is %d", got)
			}
			if got := debug.SetMemoryLimit(-1); tc.wantLimitSet != (got == EdgeGC.Limit) {
				t.Fatalf("memory limit is %d", got)
			}
		})
	}
}
