package sim

import (
	"flag"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/jepsen-like/matrix"
)

var (
	flagSeed     = flag.Uint64("sim.seed", 1, "seed of the first run")
	flagMode     = flag.String("sim.mode", "", "mode of TestReplay")
	flagScenario = flag.String("sim.scenario", "", "scenario of TestReplay")
)

func mode(t *testing.T, id string) matrix.Mode {
	t.Helper()
	m, ok := matrix.FindMode(matrix.Modes, id)
	if !ok {
		t.Fatalf("no mode %q", id)
	}
	return m
}

func TestBaselineRuns(t *testing.T) {
	v := Run(t, Cell{Mode: mode(t, "redlock-3"), Scenario: "baseline", Seed: *flagSeed, Timing: Timing{Duration: 5 * time.Second}})
	t.Log(v)
	if v.Report.Acquires.Ok == 0 {
		t.Fatal("no acquisitions")
	}
	if v.Bug() {
		t.Fatal(v)
	}
}

// TestSurvey runs every scenario on a few modes once (SIM_SURVEY=1).
func TestSurvey(t *testing.T) {
	if os.Getenv("SIM_SURVEY") == "" {
		t.Skip("SIM_SURVEY=1")
	}
	modes := strings.Split(envOr("SIM_MODES", "single,redlock-3,redlock-5+fencing,failover,single+wait"), ",")
	scs := strings.Split(envOr("SIM_SCENARIOS", strings.Join(slices.Sorted(maps.Keys(Plans)), ",")), ",")
	for _, m := range modes {
		for _, s := range scs {
			sc, ok := Scenario(s)
			if !ok || (sc.Applies != nil && !sc.Applies(mode(t, m))) {
				continue
			}
			start := time.Now()
			v := Run(t, Cell{Mode: mode(t, m), Scenario: s, Seed: *flagSeed, Timing: Timing{Duration: 10 * time.Second}})
			t.Logf("%v [%v]", v, time.Since(start).Round(time.Millisecond))
		}
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
