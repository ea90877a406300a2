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
	row := func(k adapters.Impl, variant string, allocs, cpu float64) CaseRow {
		return CaseRow{Case: "uncontended", Impl: string(k), Variant: variant, Nodes: 1, Goroutines: 1,
			OpsPerSec: 1000, AllocsPerOp: allocs, ClientCPUusPerOp: cpu}
	}
	verdicts := func(res []CaseRow) map[string]bool {
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
			got := verdicts([]CaseRow{row(adapters.Quorumlock, "default", tc.allocs, tc.cpu), row(adapters.Redislock, "retry-5ms", 30, 40)})
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
	if got := verdicts([]CaseRow{row(adapters.Quorumlock, "default", 11, 40)}); len(got) != 0 {
		t.Errorf("targets without a redislock row: %v", got)
	}
}

// A ratio's interval brackets its median, is a point for equal rounds, and
// marks a miss as within noise only when the interval reaches the target.
func TestRatioInterval(t *testing.T) {
	if lo, hi, ok := medianInterval([]float64{0.9, 0.9, 0.9, 0.9, 0.9}); !ok || lo != 0.9 || hi != 0.9 {
		t.Errorf("equal rounds: [%v, %v] ok %v, want [0.9, 0.9]", lo, hi, ok)
	}
	if _, _, ok := medianInterval([]float64{0.9, 1, 1.1, 1.2}); ok {
		t.Error("an interval from 4 rounds")
	}
	spread := []float64{0.80, 0.85, 0.88, 0.90, 0.91, 0.92, 0.93, 0.95, 0.99, 1.05, 1.20}
	lo, hi, ok := medianInterval(spread)
	if m := median(spread); !ok || lo > m || hi < m || lo == hi {
		t.Errorf("spread rounds: [%v, %v] ok %v around median %v", lo, hi, ok, m)
	}
	// quorumlock's rate ÷ raw's, round by round, against the 0.95 target.
	check := func(ratios []float64) Check {
		a := CaseRow{Case: "uncontended", Impl: string(adapters.Quorumlock), Variant: "default", Nodes: 1, Goroutines: 1, OpsPerSec: 1000}
		b := CaseRow{Case: "uncontended", Impl: string(adapters.Raw), Variant: "default", Nodes: 1, Goroutines: 1, OpsPerSec: 1000}
		for _, r := range ratios {
			a.RoundsRates = append(a.RoundsRates, 1000*r)
			b.RoundsRates = append(b.RoundsRates, 1000)
		}
		for _, c := range checks([]CaseRow{a, b}) {
			if strings.Contains(c.Target, "÷ raw") {
				return c
			}
		}
		t.Fatal("no ÷ raw target")
		return Check{}
	}
	for _, tc := range []struct {
		name              string
		ratios            []float64
		pass, withinNoise bool
	}{
		{"met", []float64{0.96, 0.97, 0.98, 0.99, 1.0}, true, false},
		{"missed, the rounds spread past the target", []float64{0.80, 0.85, 0.90, 0.93, 0.94, 0.96, 0.99, 1.02, 1.10}, false, true},
		{"missed by every round", []float64{0.80, 0.81, 0.82, 0.83, 0.84, 0.85, 0.86}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := check(tc.ratios)
			if c.Pass != tc.pass || c.WithinNoise != tc.withinNoise {
				t.Errorf("pass %v, within noise %v; want %v, %v (%s)", c.Pass, c.WithinNoise, tc.pass, tc.withinNoise, c.Measured)
			}
			if !strings.Contains(c.Measured, "[") {
				t.Errorf("no interval in %q", c.Measured)
			}
		})
	}
}
