package matrix

import (
	"fmt"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/history"
	"github.com/quorumlock/quorumlock/jepsen-like/report"
	"github.com/quorumlock/quorumlock/localredis"
)

func needRedis(t *testing.T) {
	t.Helper()
	if _, err := localredis.Find(); err != nil {
		if localredis.Required() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// testTiming is the shortest timing every scenario fits in. Its attempt
// timeout is three times the library's default: with 5 nodes each call
// then gets 150 ms, not 50, which a loaded CI machine needs for a round
// trip through the in-process proxies (at the default, cells of
// TestMatrixCanFail acquired nothing in 2.5 s with 6 busy processes on the
// 2 cores).
var testTiming = RunTiming{Duration: 2500 * time.Millisecond, Lease: time.Second, Workers: 4, Work: Quick.Work,
	AttemptTimeout: 750 * time.Millisecond}

func findCell(t *testing.T, mode, scenario string) Cell {
	t.Helper()
	m, ok := FindMode(Modes, mode)
	s, ok2 := FindScenario(Scenarios, scenario)
	if !ok || !ok2 {
		t.Fatalf("no cell %s × %s", mode, scenario)
	}
	return Cell{Mode: m, Scenario: s}
}

// The checker can fail: a known-unsafe cell shows violations, a safe one
// none, and fencing turns stale writes from accepted into rejected. On
// real servers, through the whole pipeline (cluster, faults, workload,
// history, checker, report row).
func TestMatrixCanFail(t *testing.T) {
	needRedis(t)
	ms, _ := SelectModes(Modes, "redlock-5,redlock-5+fencing")
	ss, _ := SelectScenarios(Scenarios, "baseline,client-pause")
	// One cell at a time: two clusters of 5 in one process, next to the
	// other packages' tests, starved the cells (with 8 busy processes on 2
	// cores, 2 of 3 runs had cells with 2 acquisitions; one at a time, 6
	// of 6 runs acquired throughout).
	out, err := Run(t.Context(), Config{Modes: ms, Scenarios: ss, Timing: testTiming, Seed: 1, Parallel: 1})
	if err != nil || len(out.Errors) > 0 {
		t.Fatal(err, out.Errors)
	}
	rows := map[string]report.Row{}
	for i, r := range out.Matrix.Results {
		rows[r.Mode+" × "+r.Scenario] = r
		t.Logf("%s × %s: %d of %d attempts acquired%s", r.Mode, r.Scenario, r.Acquisitions, r.Attempts, firstErrors(out.Histories[i], 3))
	}
	if len(rows) != 4 || len(out.Histories) != 4 {
		t.Fatalf("%d rows, %d histories; want 4", len(rows), len(out.Histories))
	}
	for _, id := range []string{"redlock-5 × baseline", "redlock-5+fencing × baseline"} {
		if r := rows[id]; r.Acquisitions == 0 || r.Violations != 0 || r.LostUpdates != 0 || r.Verdict != report.Reproduced {
			t.Errorf("%s: %d acquisitions, %d overlaps, %d lost updates, %s; want > 0, 0, 0, reproduced",
				id, r.Acquisitions, r.Violations, r.LostUpdates, r.Verdict)
		}
	}
	if r := rows["redlock-5 × client-pause"]; r.StaleAccepted == 0 || r.Verdict != report.Reproduced {
		t.Errorf("redlock-5 × client-pause (unfenced): %d stale writes accepted, %s; want > 0, reproduced", r.StaleAccepted, r.Verdict)
	}
	if r := rows["redlock-5+fencing × client-pause"]; r.StaleAccepted != 0 || r.StaleRejected == 0 || r.Verdict != report.Reproduced {
		t.Errorf("redlock-5+fencing × client-pause: %d accepted, %d rejected, %s; want 0, > 0, reproduced", r.StaleAccepted, r.StaleRejected, r.Verdict)
	}
	if f := Failures(out.Matrix); len(f) != 0 {
		t.Errorf("failures: %v", f)
	}
}

// firstErrors lists the first n distinct errors of h's operations, for a
// failure message that says why nothing was acquired.
func firstErrors(h history.History, n int) string {
	var out string
	seen := map[string]bool{}
	for _, o := range h.Ops {
		if o.Error != "" && !seen[o.Error] && len(seen) < n {
			seen[o.Error] = true
			out += fmt.Sprintf("\n\t%v at %v: %s", o.Kind, o.Invoke.Round(time.Millisecond), o.Error)
		}
	}
	return out
}

// failover without WAIT grants the lock on both sides of a split brain;
// the same split with WAIT grants nothing twice. By construction (two
// workers on each side, the split held for half the run) one run should
// show it; the cell is retried up to 3 times in case the machine is too
// slow for any worker to get in during the split.
func TestFailoverViolates(t *testing.T) {
	needRedis(t)
	var r report.Row
	for try := 1; try <= 3; try++ {
		var err error
		r, _, err = RunCell(t.Context(), findCell(t, "failover", "failover"), testTiming, int64(try), 0)
		if err != nil {
			t.Fatal(err)
		}
		if r.Violations > 0 {
			break
		}
		t.Logf("try %d: no overlap in %d acquisitions", try, r.Acquisitions)
	}
	if r.Violations == 0 || r.ValidOverlaps == 0 || r.Verdict != report.Reproduced || r.ExpectedSafe {
		t.Fatalf("failover × failover: %d overlaps, %d valid overlaps, %s, expected safe %v; want > 0, > 0, reproduced, false",
			r.Violations, r.ValidOverlaps, r.Verdict, r.ExpectedSafe)
	}
	w, _, err := RunCell(t.Context(), findCell(t, "single+wait", "failover"), testTiming, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if w.Acquisitions == 0 || w.ValidOverlaps != 0 || w.Verdict != report.Reproduced {
		t.Errorf("single+wait × failover: %d acquisitions, %d valid overlaps, %s; want > 0, 0, reproduced", w.Acquisitions, w.ValidOverlaps, w.Verdict)
	}
}
