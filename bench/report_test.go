package main

import (
	"strings"
	"testing"

	"github.com/quorumlock/quorumlock/bench/adapters"
)

// The lone caller's cost targets compare quorumlock's allocations and
// client CPU per pair with redislock's in the same run, and fail when
// quorumlock's are higher.
func TestLoneCallerCostChecks(t *testing.T) {
	row := func(k adapters.Kind, variant string, allocs, cpu float64) Result {
		return Result{Case: "uncontended", Impl: string(k), Variant: variant, Nodes: 1, Goroutines: 1,
			OpsPerSec: 1000, AllocsPerOp: allocs, ClientCPUusPerOp: cpu}
	}
	verdicts := func(res []Result) map[string]bool {
		got := map[string]bool{}
		for _, c := range checks(res) {
			if strings.Contains(c.Target, "allocations per") || strings.Contains(c.Target, "client CPU per") {
				got[c.Target] = c.Pass
			}
		}
		return got
	}
	for _, tc := range []struct {
		name                string
		allocs, cpu         float64 // quorumlock's; redislock's are 30 and 40
		wantAllocs, wantCPU bool
	}{
		{"below", 11, 39.5, true, true},
		{"equal", 30, 40, true, true},
		{"more CPU", 11, 41.8, true, false},
		{"more allocations", 31, 39, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := verdicts([]Result{row(adapters.Quorumlock, "default", tc.allocs, tc.cpu), row(adapters.Redislock, "retry-5ms", 30, 40)})
			if len(got) != 2 {
				t.Fatalf("%d lone-caller cost targets, want 2: %v", len(got), got)
			}
			for target, pass := range got {
				want := tc.wantCPU
				if strings.Contains(target, "allocations") {
					want = tc.wantAllocs
				}
				if pass != want {
					t.Errorf("%s: pass %v, want %v", target, pass, want)
				}
			}
		})
	}
	if got := verdicts([]Result{row(adapters.Quorumlock, "default", 11, 40)}); len(got) != 0 {
		t.Errorf("targets without a redislock row: %v", got)
	}
}
