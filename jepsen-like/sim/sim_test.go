package sim

import (
	"flag"
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
