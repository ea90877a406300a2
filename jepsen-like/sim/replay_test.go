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
		eachQuickCell(t, 2*time.Second, func(t *testing.T, name string, c Cell) {
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
func runCellProcess(t *testing.T, c Cell) row {
	t.Helper()
	out := filepath.Join(t.TempDir(), "cell.json")
	cmd := exec.Command(os.Args[0], "-test.run", "^TestCell$", "-sim.mode", c.Mode.ID, "-sim.scenario", c.Scenario,
		"-sim.workload", string(c.kind()), "-sim.seed", fmt.Sprint(c.Seed), "-sim.seeds", "1",
		"-sim.duration", c.timing().Duration.String(), "-sim.shrink=false", "-sim.json", out)
	// The verdict is TestQuickCells' to judge: a failing run still has a
	// trace.
	b, _ := cmd.CombinedOutput()
	var rows struct {
		Results []row `json:"results"`
	}
	j, err := os.ReadFile(out)
	if err == nil {
		err = json.Unmarshal(j, &rows)
	}
	if err != nil || len(rows.Results) != 1 {
		t.Fatalf("%s × %s: no row (%v):\n%s", c.Mode.ID, c.Scenario, err, b)
	}
	return rows.Results[0]
}
