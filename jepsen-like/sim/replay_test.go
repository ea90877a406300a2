package sim

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// replayFloor holds how many quick cells must replay with the same trace
// hash: the last committed count. The test fails below it, so the count
// can only go up; raise it when the test says so. The count moves by a
// few between runs (Go's runtime still picks among ready select cases at
// random, and a loaded machine preempts goroutines on the wall clock), so
// the floor sits a little under the counts seen.
const replayFloor = "testdata/replay-floor"

// TestReplaySameTrace runs every quick cell twice with one seed, each run
// a TestCell of its own process as `quorumlock-lab chaos --sim` runs it, and
// compares the two runs' trace hashes: a seed must determine the run. It
// reports how many cells replayed, and fails when fewer did than
// testdata/replay-floor says.
func TestReplaySameTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every quick cell twice")
	}
	if raceBuild {
		t.Skip("the race detector changes the schedule the floor is counted on: make sim-soak-ci runs this without -race")
	}
	b, err := os.ReadFile(replayFloor)
	if err != nil {
		t.Fatal(err)
	}
	floor, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", replayFloor, err)
	}
	var (
		mu     sync.Mutex
		same   int
		differ []string
	)
	t.Run("cells", func(t *testing.T) {
		eachQuickCell(t, 2*time.Second, func(t *testing.T, name string, c CellRun) {
			first, second := runCellProcess(t, c), runCellProcess(t, c)
			mu.Lock()
			defer mu.Unlock()
			if first.Trace == second.Trace {
				same++
				return
			}
			differ = append(differ, name)
			t.Logf("trace %s, then %s (acquisitions %d, then %d)\nreplay: %s",
				first.Trace, second.Trace, first.Acquisitions, second.Acquisitions, ReplayCommand(c))
		})
	})
	t.Logf("%d of %d quick cells replayed with the same trace hash; not: %v", same, len(quickCells), differ)
	switch {
	case same < floor:
		t.Errorf("%d of %d quick cells replayed with the same trace hash, fewer than the %d of %s", same, len(quickCells), floor, replayFloor)
	case same > floor:
		t.Logf("%d cells replayed, more than the %d of %s: raise it", same, floor, replayFloor)
	}
}

// runCellProcess runs c as TestCell in a process of its own (this test
// binary) and returns its row.
func runCellProcess(t *testing.T, c CellRun) row {
	t.Helper()
	r, _ := runTestCell(t, "-sim.mode", c.Mode.ID, "-sim.scenario", c.Scenario,
		"-sim.workload", string(c.kind()), "-sim.seed", fmt.Sprint(c.Seed), "-sim.seeds", "1",
		"-sim.duration", c.timing().Duration.String(), "-sim.shrink=false")
	return r
}

// runTestCell runs TestCell with args in a process of its own (this test
// binary) and returns its one row and its output. The verdict is the
// caller's to judge: a failing run still has a row and a trace.
func runTestCell(t *testing.T, args ...string) (row, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "cell.json")
	cmd := exec.Command(os.Args[0], append(append([]string{"-test.run", "^TestCell$", "-test.v"}, args...), "-sim.json", out)...)
	b, _ := cmd.CombinedOutput()
	var rows struct {
		Results []row `json:"results"`
	}
	j, err := os.ReadFile(out)
	if err == nil {
		err = json.Unmarshal(j, &rows)
	}
	if err != nil || len(rows.Results) != 1 {
		t.Fatalf("%v: no row (%v):\n%s", args, err, b)
	}
	return rows.Results[0], string(b)
}

// TestReplayReproducesFailure runs a failing cell (a planted error in the
// leases' validity, which the RedLock invariant catches) as `chaos --sim`
// runs it, then runs the replay command its row prints, as printed (with
// the trace hash it must have), several times: each replay fails the same
// way with the same trace hash.
func TestReplayReproducesFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cell four times")
	}
	if raceBuild {
		t.Skip("the race detector changes the schedule a replay follows: make sim-soak-ci runs this without -race")
	}
	first, _ := runTestCell(t, "-sim.mode", "redlock-3", "-sim.scenario", "baseline", "-sim.seed", "11", "-sim.seeds", "1",
		"-sim.duration", "2s", "-sim.shrink=false", "-sim.plant-until", "250ms")
	if first.Verdict != "refuted" || !strings.Contains(first.Broken, "redlock invariant") {
		t.Fatalf("the planted error was not caught: %+v", first)
	}
	_, rest, ok := strings.Cut(first.Replay, "-run '^TestCell$' ")
	if !ok || !strings.Contains(rest, "-sim.want-trace="+first.Trace) || !strings.Contains(rest, "-sim.plant-until=") {
		t.Fatalf("replay %q: want TestCell's flags with the planted error and the trace hash", first.Replay)
	}
	for i := range 3 {
		again, out := runTestCell(t, strings.Fields(rest)...)
		if again.Trace != first.Trace || again.Verdict != first.Verdict || again.Broken != first.Broken {
			t.Fatalf("replay %d: trace %s, %s (%s); the run it replays: trace %s, %s (%s)\n%s", i+1,
				again.Trace, again.Verdict, again.Broken, first.Trace, first.Verdict, first.Broken, tailOf(out, 2000))
		}
		if strings.Contains(out, "the replay did not run as the run it replays") {
			t.Fatalf("replay %d: TestCell says the trace differs:\n%s", i+1, tailOf(out, 2000))
		}
	}
	t.Logf("a failing cell and 3 replays: trace %s, %s", first.Trace, first.Broken)
}

func tailOf(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
