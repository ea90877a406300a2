package sim

import (
	"strings"
	"testing"
	"time"
)

// The RedLock invariant's check passes clean runs and fails a run whose
// leases believe they hold longer than the nodes keep their keys (a
// planted error in validity arithmetic), before any second holder needs
// to get in; the failing run shrinks to at most one fault.
func TestInvariant(t *testing.T) {
	for _, id := range []string{"redlock-3", "multilock-3", "single"} {
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			c := CellRun{Mode: mode(t, id), Scenario: "random", Seed: 11, Timing: Timing{Duration: 4 * time.Second}}
			clean := Run(t, c)
			if clean.Invariant.Checks == 0 || clean.Invariant.Violations > 0 || clean.Bug() {
				t.Fatalf("clean run: %+v; %v", clean.Invariant, clean)
			}
			t.Logf("clean: %d checks", clean.Invariant.Checks)

			c.plantUntil = c.timing().Lease / 4
			bad := Run(t, c)
			if !bad.Bug() || bad.Invariant.Violations == 0 || !strings.Contains(bad.Result.Broken, "redlock invariant") {
				t.Fatalf("planted error not caught: %+v; %v", bad.Invariant, bad)
			}
			if id != "redlock-3" {
				return
			}
			small := Shrink(t, c, bad.Faults)
			if len(small) > 1 || len(small) >= len(bad.Faults) {
				t.Fatalf("shrunk %d faults to %d: %s", len(bad.Faults), len(small), faultList(small))
			}
			c.Faults = small
			if again := Run(t, c); !again.Bug() {
				t.Fatalf("the shrunk run passes: %v", again)
			}
			t.Logf("caught: %s\nshrunk from %d faults to %s\nreplay: %s", bad.Invariant.First, len(bad.Faults), faultList(small), ReplayCommand(c))
		})
	}
}
