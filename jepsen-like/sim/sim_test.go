package sim

import (
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/catalog"
	"github.com/quorumlock/quorumlock/jepsen-like/workload"
)

var (
	flagSeed     = flag.Uint64("sim.seed", 1, "seed of the first run")
	flagMode     = flag.String("sim.mode", "", "mode of TestReplay")
	flagScenario = flag.String("sim.scenario", "", "scenario of TestReplay")
)

func mode(t *testing.T, id string) catalog.Mode {
	t.Helper()
	m, ok := catalog.FindMode(catalog.Modes, id)
	if !ok {
		t.Fatalf("no mode %q", id)
	}
	return m
}

// quickCells are the cells of the default test run: one seed each, a few
// seconds of virtual time. Expected-safe cells must pass; expected-unsafe
// ones must show their violation (the checker must be able to fail).
var quickCells = []struct {
	mode, scenario string
	workload       workload.LockKind
}{
	{"redlock-3", "baseline", ""},
	{"redlock-5", "partition-minority", ""},
	{"redlock-3", "random", ""},
	{"redlock-5+fencing", "client-pause", ""},
	{"single", "client-pause", ""},
	{"redlock-3", "crash-restart-aof", ""},
	{"redlock-3", "crash-restart-nopersist", ""},
	{"single+wait", "failover", ""},
	{"failover", "failover", ""},
	{"single", "clock-rate-fast", ""},
	{"single", "expiry-race", ""},
	{"redlock-3", "clock-jump-partition", ""},
	{"redlock-3", "lost-wakeups", ""},
	{"redlock-3+functions", "crash-restart-nopersist", ""}, // FCALL, the library lost and reloaded
	// A cell per lock kind, in the mode of its quick matrix form.
	{"redlock-5+fencing", "partition-minority", workload.RW},
	{"redlock-3", "node-pause", workload.Fair},
	{"redlock-3", "holder-isolated", workload.Renewed},
	{"redlock-5+fencing", "partition-minority", workload.All},
	{"redlock-3", "partition-minority", workload.Reentrant},
	{"redlock-3", "baseline", workload.Batched},
	// One client's long fixed lease beside its short renewed ones: the
	// client's one lease timer serves the short ones in time.
	{"redlock-3", "baseline", workload.TTLs},
	{"redlock-3", "baseline", workload.Election},
	{"redlock-3", "holder-isolated", workload.Election},
	// Leaders proclaim while nodes are killed and restarted from their
	// AOF, while a minority is cut off, and while a majority is (a
	// Proclaim that reaches one node): followers' reads are judged.
	{"redlock-3", "crash-restart-aof", workload.Election},
	{"redlock-3", "partition-minority", workload.Election},
	{"redlock-3", "partition-majority", workload.Election},
	// Restart detection at its default delay; renewals that reach a node
	// which lost the key while the lease is valid.
	{"redlock-3+restart", "crash-restart-nopersist", ""},
	{"redlock-3+restart", "crash-restart-minority", workload.Renewed},
	{"multilock-3", "clock-jump", workload.Renewed},
}

// eachQuickCell runs f on every quick cell, d of virtual time with seed
// -sim.seed, in parallel subtests named after the cells.
func eachQuickCell(t *testing.T, d time.Duration, f func(t *testing.T, name string, c CellRun)) {
	for _, qc := range quickCells {
		name := qc.mode + "/" + qc.scenario
		if qc.workload != "" {
			name += "/" + string(qc.workload)
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f(t, name, CellRun{Mode: mode(t, qc.mode), Scenario: qc.scenario, Seed: *flagSeed, Timing: Timing{Duration: d}, Workload: qc.workload})
		})
	}
}

func TestQuickCells(t *testing.T) {
	eachQuickCell(t, 4*time.Second, func(t *testing.T, _ string, c CellRun) {
		v := Run(t, c)
		t.Log(v)
		if v.Report.Acquires.Ok == 0 {
			t.Fatalf("no acquisitions: %v", v)
		}
		switch {
		case v.Bug():
			t.Errorf("fails as the matrix would fail it: %v\nreplay: %s", v, ReplayCommand(c))
		case !v.Result.ExpectedSafe && !v.Reproduced():
			t.Errorf("expected unsafe, not reproduced: %v\nreplay: %s", v, ReplayCommand(c))
		}
	})
}

// TestSurvey runs every scenario on a few modes once (SIM_SURVEY=1).
func TestSurvey(t *testing.T) {
	if os.Getenv("SIM_SURVEY") == "" {
		t.Skip("SIM_SURVEY=1")
	}
	modes := strings.Split(envOr("SIM_MODES", "single,redlock-3,redlock-5+fencing,failover,single+wait"), ",")
	scs := strings.Split(envOr("SIM_SCENARIOS", strings.Join(scenarioIDs(Scenarios), ",")), ",")
	for _, m := range modes {
		for _, s := range scs {
			sc, ok := Scenario(s)
			if !ok || (sc.Applies != nil && !sc.Applies(mode(t, m))) {
				continue
			}
			start := time.Now()
			v := Run(t, CellRun{Mode: mode(t, m), Scenario: s, Seed: *flagSeed, Timing: Timing{Duration: 10 * time.Second}})
			t.Logf("%v [%v]", v, time.Since(start).Round(time.Millisecond))
		}
	}
}

func scenarioIDs(ss []catalog.Scenario) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.ID
	}
	return out
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
