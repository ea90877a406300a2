package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/catalog"
	"github.com/quorumlock/quorumlock/jepsen-like/checker"
	"github.com/quorumlock/quorumlock/jepsen-like/history"
	"github.com/quorumlock/quorumlock/jepsen-like/workload"
)

// The guarded workload writes through the project's Redis guard on a
// simulated node of its own; the fencing counters start just below a digit
// boundary, so the tokens the guard sees cross it. Under a client pause the
// guard refuses the paused holder's write, and its order holds.
func TestGuardedTokensCrossDigitBoundary(t *testing.T) {
	for _, sc := range []string{"baseline", "client-pause"} {
		t.Run(sc, func(t *testing.T) {
			t.Parallel()
			c := CellRun{Mode: mode(t, "redlock-5+fencing"), Scenario: sc, Seed: 4, Workload: workload.Guarded,
				Timing: Timing{Duration: 5 * time.Second}}
			v := Run(t, c)
			t.Log(v)
			if v.Bug() || v.Report.GuardOrder.Verdict != checker.Ok || !strings.Contains(v.Result.Judged, string(checker.GuardOrder)) {
				t.Fatalf("%v (guard order %v, judged %q)", v, v.Report.GuardOrder, v.Result.Judged)
			}
			var accepted, refused int
			lo, hi := uint64(1<<63), uint64(0)
			for _, o := range v.History.Ops {
				if o.Kind != history.GuardWrite {
					continue
				}
				switch o.Outcome {
				case history.Ok:
					accepted++
					lo, hi = min(lo, o.Token), max(hi, o.Token)
				case history.Fail:
					refused++
				}
			}
			start := uint64(catalog.FenceStart(c.Seed))
			boundary := uint64(10)
			for boundary <= start {
				boundary *= 10
			}
			t.Logf("guard writes: %d accepted (tokens %d..%d), %d refused; counters preset to %d", accepted, lo, hi, refused, start)
			if accepted == 0 || lo >= boundary || hi < boundary {
				t.Errorf("accepted tokens %d..%d do not cross %d (preset %d)", lo, hi, boundary, start)
			}
			if sc == "client-pause" && refused == 0 {
				t.Errorf("the guard refused no write of a paused holder")
			}
		})
	}
}
