package catalog

import (
	"math/rand/v2"
	"testing"
	"time"
)

// Every scenario has an abstract plan unless the simulation says why it
// cannot run it; a runner that cannot run a scenario gives a reason.
func TestScenariosComplete(t *testing.T) {
	seen := map[string]bool{}
	tm := Timing{Workers: 4, Lease: time.Second, Duration: 10 * time.Second}
	for _, s := range Scenarios {
		if seen[s.ID] {
			t.Errorf("scenario %s twice", s.ID)
		}
		seen[s.ID] = true
		if s.Summary == "" || s.Expect == nil {
			t.Errorf("scenario %s incomplete", s.ID)
		}
		for r, why := range s.NotOn {
			if why == "" {
				t.Errorf("scenario %s: no reason why it does not run on %s", s.ID, r)
			}
		}
		onSim, _ := s.RunsOn(Sim)
		if onSim != (s.Faults != nil) {
			t.Errorf("scenario %s: runs on the simulation %v, has a plan %v", s.ID, onSim, s.Faults != nil)
		}
		if !onSim {
			continue
		}
		for _, m := range Modes {
			if s.Applies != nil && !s.Applies(m) {
				continue
			}
			for _, f := range s.Faults(m, tm, rand.New(rand.NewPCG(1, 2))) {
				for _, n := range f.Nodes {
					if n < 0 || n >= m.Nodes() {
						t.Errorf("%s × %s: fault %v names node %d of %d", m.ID, s.ID, f, n, m.Nodes())
					}
				}
			}
		}
	}
	if len(On(Matrix)) == 0 || len(On(Sim)) == 0 || len(On(Matrix)) == len(Scenarios) && len(On(Sim)) == len(Scenarios) {
		t.Errorf("On: matrix %d, sim %d of %d scenarios", len(On(Matrix)), len(On(Sim)), len(Scenarios))
	}
}

// Every mode sets its safety explicitly and has a quorum it can reach.
func TestModes(t *testing.T) {
	want := map[string]int{"single": 1, "single+wait": 1, "failover": 1, "redlock-3": 2, "redlock-5": 3, "redlock-5+fencing": 3, "multilock-3": 3, "redlock-3+functions": 2, "redlock-3+restart": 2}
	for _, m := range Modes {
		if m.Lock == nil {
			t.Errorf("mode %s: no lock", m.ID)
		}
		if q, ok := want[m.ID]; !ok || m.Quorum() != q {
			t.Errorf("mode %s: quorum %d, want %d", m.ID, m.Quorum(), want[m.ID])
		}
		if got := len(SafetyOptions(m)); m.Fencing && got == 0 {
			t.Errorf("mode %s: fencing without an option", m.ID)
		}
	}
	if _, ok := FindWorkload(DefaultWorkload); !ok {
		t.Errorf("no default workload %q", DefaultWorkload)
	}
}

// A pair the quick matrix leaves a workload out of is one another
// workload's quick form runs, so the pair is still judged.
func TestQuickCovered(t *testing.T) {
	for _, w := range Workloads {
		for _, p := range w.QuickCovered {
			if _, ok := FindMode(Modes, p[0]); !ok {
				t.Errorf("workload %s: covered pair %v names no mode", w.ID, p)
			}
			if !w.Covered(p[0], p[1], Workloads) {
				t.Errorf("workload %s: %s × %s is in no other workload's quick form: the quick matrix would not judge it", w.ID, p[0], p[1])
			}
			if w.Covered(p[0], p[1], []Workload{w}) {
				t.Errorf("workload %s: %s × %s covered when the run has no other workload", w.ID, p[0], p[1])
			}
		}
	}
}
