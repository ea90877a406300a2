package sim

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// replayFloor holds how many quick cells must replay with the same trace
// hash: the last committed count. The test fails below it, so the count
// can only go up. It is every cell: one that stops replaying fails the
// test, and SIM_REPLAY_DIFF=1 shows where its two runs part. What can
// still make a cell differ is Go's runtime (a select among ready cases
// picks at random, a goroutine that ran 10 ms of wall time is preempted),
// where a run meets it at a point whose order matters.
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
			var files [2]string
			if os.Getenv(replayDiffEnv) != "" {
				dir := t.TempDir()
				files = [2]string{filepath.Join(dir, "first.trace"), filepath.Join(dir, "second.trace")}
			}
			first, second := runCellProcess(t, c, files[0]), runCellProcess(t, c, files[1])
			mu.Lock()
			defer mu.Unlock()
			if first.Trace == second.Trace {
				same++
				return
			}
			differ = append(differ, name)
			t.Logf("trace %s, then %s (acquisitions %d, then %d)\nreplay: %s",
				first.Trace, second.Trace, first.Acquisitions, second.Acquisitions, ReplayCommand(c))
			if files[0] != "" {
				t.Logf("first difference: %s", firstTraceDiff(t, files[0], files[1]))
			}
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

// replayDiffEnv, set in TestReplaySameTrace's environment, has each cell
// write its two runs' traces (SIM_TRACE) and log the first virtual
// instant at which they differ: where a replay left its run, and what
// each run did there that the other did not. Tracing as text slows a run
// and so may move where it diverges, or hide it.
const replayDiffEnv = "SIM_REPLAY_DIFF"

// runCellProcess runs c as TestCell in a process of its own (this test
// binary) and returns its row; with trace set, the run writes its trace
// there as text.
func runCellProcess(t *testing.T, c CellRun, trace string) row {
	t.Helper()
	args := []string{"-sim.mode", c.Mode.ID, "-sim.scenario", c.Scenario,
		"-sim.workload", string(c.kind()), "-sim.seed", fmt.Sprint(c.Seed), "-sim.seeds", "1",
		"-sim.duration", c.timing().Duration.String(), "-sim.shrink=false"}
	if trace != "" {
		r, _ := runTestCellEnv(t, []string{traceEnv + "=" + trace}, args...)
		return r
	}
	r, _ := runTestCell(t, args...)
	return r
}

// runTestCell runs TestCell with args in a process of its own (this test
// binary) and returns its one row and its output. The verdict is the
// caller's to judge: a failing run still has a row and a trace.
func runTestCell(t *testing.T, args ...string) (row, string) {
	t.Helper()
	return runTestCellEnv(t, nil, args...)
}

// runTestCellEnv is runTestCell with env added to the process's
// environment.
func runTestCellEnv(t *testing.T, env []string, args ...string) (row, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "cell.json")
	cmd := exec.Command(os.Args[0], append(append([]string{"-test.run", "^TestCell$", "-test.v"}, args...), "-sim.json", out)...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
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

// firstTraceDiff compares two traces as SIM_TRACE writes them (one event
// a line, "<instant> <event>", an instant's events sorted) and describes
// the first instant whose events differ: its time in each, and the events
// only one run had there (a few of them).
func firstTraceDiff(t *testing.T, a, b string) string {
	t.Helper()
	ia, ib := traceInstants(t, a), traceInstants(t, b)
	for i := range max(len(ia), len(ib)) {
		if i >= len(ia) || i >= len(ib) {
			return fmt.Sprintf("one trace has %d instants, the other %d", len(ia), len(ib))
		}
		x, y := ia[i], ib[i]
		if x.at == y.at && slices.Equal(x.events, y.events) {
			continue
		}
		var sb strings.Builder
		fmt.Fprintf(&sb, "instant %d: %s in the first run, %s in the second", i, x.at, y.at)
		onlyA, onlyB := multisetDiff(x.events, y.events)
		for _, d := range []struct {
			run    string
			events []string
		}{{"first", onlyA}, {"second", onlyB}} {
			for j, e := range d.events {
				if j == 8 {
					fmt.Fprintf(&sb, "\n  (%d more only in the %s)", len(d.events)-j, d.run)
					break
				}
				fmt.Fprintf(&sb, "\n  only in the %s: %.300s", d.run, e)
			}
		}
		return sb.String()
	}
	return "the events are the same; the histories differ (see the traces' op lines)"
}

// traceInstant is one virtual instant of a trace file and its events.
type traceInstant struct {
	at     string
	events []string
}

func traceInstants(t *testing.T, path string) []traceInstant {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []traceInstant
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSuffix(line, "\n")
		if strings.HasPrefix(line, "op ") {
			continue
		}
		at, ev, _ := strings.Cut(line, " ")
		if len(out) == 0 || out[len(out)-1].at != at {
			out = append(out, traceInstant{at: at})
		}
		last := &out[len(out)-1]
		last.events = append(last.events, ev)
	}
	for i := range out {
		slices.Sort(out[i].events)
	}
	return out
}

// multisetDiff returns the elements of sorted a not in sorted b and the
// reverse, counting repeats.
func multisetDiff(a, b []string) (onlyA, onlyB []string) {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch c := strings.Compare(a[i], b[j]); {
		case c == 0:
			i++
			j++
		case c < 0:
			onlyA = append(onlyA, a[i])
			i++
		default:
			onlyB = append(onlyB, b[j])
			j++
		}
	}
	return append(onlyA, a[i:]...), append(onlyB, b[j:]...)
}

func TestFirstTraceDiff(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("a", "1ms up [w0 n0] x\n1ms cmd n0 GET\n2ms cmd n0 HELLO\n2ms cmd n0 HELLO\n3ms down [w0 n0] y\nop 1\n")
	b := write("b", "1ms cmd n0 GET\n1ms up [w0 n0] x\n2ms cmd n0 HELLO\n2ms cmd n0 PING\n3ms down [w0 n0] y\nop 1\n")
	got := firstTraceDiff(t, a, b)
	for _, want := range []string{"instant 1: 2ms in the first run, 2ms in the second", "only in the first: cmd n0 HELLO", "only in the second: cmd n0 PING"} {
		if !strings.Contains(got, want) {
			t.Errorf("diff %q: want %q", got, want)
		}
	}
	if strings.Count(got, "HELLO") != 1 {
		t.Errorf("diff %q: one HELLO is in both runs, one in the first only", got)
	}
	if got := firstTraceDiff(t, a, a); !strings.Contains(got, "the same") {
		t.Errorf("a trace against itself: %q", got)
	}
}
