package sim

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/report"
	"github.com/quorumlock/quorumlock/jepsen-like/workload"
)

var (
	flagSeeds    = flag.Int("sim.seeds", 1, "TestCell: how many seeds to run, from -sim.seed on, stopping at the first failing one unless -sim.keep-going")
	flagDuration = flag.Duration("sim.duration", 10*time.Second, "TestCell: virtual duration of each run")
	flagJSON     = flag.String("sim.json", "", "TestCell: write the runs' rows here (the matrix's JSON shape)")
	flagFaults   = flag.String("sim.faults", "", "TestCell: replay this JSON fault list (as printed by a shrink) instead of the scenario's plan")
	flagShrink   = flag.Bool("sim.shrink", true, "TestCell: shrink a failing run's fault list")
	flagWorkload = flag.String("sim.workload", "", "TestCell: the workload (lock kind) the workers run; default mutex")
	flagGoOn     = flag.Bool("sim.keep-going", false, "TestCell: run every seed, also after a failing one (the mutants runner's kill rate)")
	flagReport   = flag.String("sim.report", "", "TestCell: write each run's report row and history as PREFIX-<run>.json and .history (report.ReadDir merges them)")
	flagTrace    = flag.String("sim.want-trace", "", "TestCell: the trace hash the run must have (a replay: the hash a failing run printed)")
	flagPlant    = flag.Duration("sim.plant-until", 0, "TestCell: plant an error for tests: every lease believes itself valid this much longer than the lock says")
)

// row is one run in the matrix JSON's shape (what the mutants runner reads).
type row struct {
	Mode              string  `json:"mode"`
	Scenario          string  `json:"scenario"`
	Seed              uint64  `json:"seed"`
	ExpectedSafe      bool    `json:"expected_safe"`
	Verdict           string  `json:"verdict"`
	VerdictNote       string  `json:"verdict_note"`
	KeysWithoutExpiry int     `json:"keys_without_expiry"`
	Broken            string  `json:"broken"`
	Acquisitions      int     `json:"acquisitions"`
	Contested         int     `json:"contested"`
	WallMs            int64   `json:"wall_ms"`
	Replay            string  `json:"replay"`
	Trace             string  `json:"trace"`
	Faults            []Fault `json:"faults,omitempty"`
}

// ReplayCommand is the command that runs c again.
func ReplayCommand(c CellRun) string {
	s := fmt.Sprintf("go test ./jepsen-like/sim -run '^TestCell$' -sim.mode=%s -sim.scenario=%s -sim.workload=%s -sim.seed=%d -sim.seeds=1 -sim.duration=%v",
		c.Mode.ID, c.Scenario, c.kind(), c.Seed, c.timing().Duration)
	if c.plantUntil != 0 {
		s += fmt.Sprintf(" -sim.plant-until=%v", c.plantUntil)
	}
	return s
}

// TestCell runs one mode × scenario over -sim.seeds seeds; a run the
// matrix would fail fails the test, with its seed, the command that
// replays it and its fault list shrunk. It is the entry point of
// `quorumlock-lab chaos --sim` and of `chaos --mutants --sim`.
func TestCell(t *testing.T) {
	if *flagMode == "" || *flagScenario == "" {
		t.Skip("needs -sim.mode and -sim.scenario")
	}
	m := mode(t, *flagMode)
	// One processor: goroutines woken at one virtual instant then run one
	// at a time in the order the runtime queued them, not in parallel in
	// an order the machine's load picks, so that a seed replays its run
	// (TestReplaySameTrace). The cell is a process of its own.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var faults []Fault
	if *flagFaults != "" {
		if err := json.Unmarshal([]byte(*flagFaults), &faults); err != nil {
			t.Fatalf("-sim.faults: %v", err)
		}
	}
	var rows []row
	defer func() {
		if *flagJSON == "" {
			return
		}
		b, _ := json.MarshalIndent(map[string]any{"results": rows}, "", "  ")
		if err := os.WriteFile(*flagJSON, b, 0o644); err != nil {
			t.Error(err)
		}
	}()
	for i := range *flagSeeds {
		c := CellRun{Mode: m, Scenario: *flagScenario, Seed: *flagSeed + uint64(i), Faults: faults,
			Timing: Timing{Duration: *flagDuration}, Workload: workload.LockKind(*flagWorkload), plantUntil: *flagPlant}
		start := time.Now()
		v := Run(t, c)
		r := rowOf(c, v, time.Since(start))
		rows = append(rows, r)
		if *flagReport != "" {
			if err := writeReport(fmt.Sprintf("%s-%04d", *flagReport, i), c, v, r.Replay); err != nil {
				t.Error(err)
			}
		}
		t.Logf("%v [%v]", v, time.Since(start).Round(time.Millisecond))
		if *flagTrace != "" && *flagTrace != v.Trace.String() {
			t.Errorf("trace %v, want %s: the replay did not run as the run it replays", v.Trace, *flagTrace)
		}
		if !v.Bug() {
			continue
		}
		t.Errorf("FAILED: %v\nreplay: %s", v, r.Replay)
		if *flagGoOn {
			continue
		}
		if *flagShrink && len(v.Faults) > 1 {
			small := Shrink(t, c, v.Faults)
			b, _ := json.Marshal(small)
			rows[len(rows)-1].Faults = small
			t.Errorf("shrunk to %d of %d faults: %s\nreplay: %s -sim.faults='%s'", len(small), len(v.Faults), faultList(small), ReplayCommand(c), b)
		}
		return
	}
}

// writeReport writes run v of c as the matrix's report row (with the
// replay and its trace hash) to base.json and its history beside it.
func writeReport(base string, c CellRun, v Judgement, replay string) error {
	res := v.Result
	res.Replay = replay
	f, err := os.Create(base + ".json")
	if err != nil {
		return err
	}
	if err := (report.Matrix{Seed: int64(c.Seed), Results: []report.Row{res}}).WriteJSON(f); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return v.History.Save(base + report.HistorySuffix)
}

func rowOf(c CellRun, v Judgement, wall time.Duration) row {
	return row{Mode: c.modeName(), Scenario: c.Scenario, Seed: c.Seed, ExpectedSafe: v.Result.ExpectedSafe,
		Verdict: string(v.Result.Verdict), VerdictNote: v.Result.VerdictNote, KeysWithoutExpiry: len(v.Stray),
		Broken: v.Result.Broken, Acquisitions: v.Report.Acquires.Ok, Contested: v.Report.Contested,
		WallMs: wall.Milliseconds(), Replay: ReplayCommand(c) + " -sim.want-trace=" + v.Trace.String(), Trace: v.Trace.String()}
}

func faultList(fs []Fault) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = f.String()
	}
	return strings.Join(s, "; ")
}
