package sim

import (
	"slices"
	"testing"
)

// Shrink looks for a smallest sub-list of faults under which c still
// fails (Judgement.Bug): it drops one fault at a time and keeps every drop
// after which the run still fails, until no single fault can go (a local
// minimum, as delta debugging's last stage). Each try is a full run with
// c's seed; the workers' random choices stay those of the seed.
func Shrink(t *testing.T, c CellRun, faults []Fault) []Fault {
	t.Helper()
	cur := slices.Clone(faults)
	for changed := true; changed && len(cur) > 1; {
		changed = false
		for i := 0; i < len(cur) && len(cur) > 1; i++ {
			try := slices.Delete(slices.Clone(cur), i, i+1)
			c.Faults = try
			if Run(t, c).Bug() {
				cur, changed = try, true
				i--
			}
		}
	}
	return cur
}
